import { inflateSync } from 'node:zlib';

/**
 * Just enough PNG decoding to look at a screenshot's pixels in a test: 8-bit RGB or RGBA,
 * non-interlaced (what Chromium writes). No dependency; throws on anything else.
 */
export interface Pixels {
  width: number;
  height: number;
  /** RGBA, 4 bytes per pixel, rows top to bottom. */
  rgba: Uint8Array;
}

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

export function decodePng(bytes: Uint8Array): Pixels {
  if (!SIGNATURE.every((byte, index) => bytes[index] === byte)) throw new Error('not a PNG file');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let offset = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const data: Uint8Array[] = [];
  while (offset < bytes.length) {
    const length = view.getUint32(offset);
    const type = String.fromCharCode(...bytes.subarray(offset + 4, offset + 8));
    const body = bytes.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      width = view.getUint32(offset + 8);
      height = view.getUint32(offset + 12);
      const [bitDepth, colourType, , , interlace] = body.subarray(8, 13);
      if (bitDepth !== 8 || interlace !== 0 || (colourType !== 2 && colourType !== 6)) throw new Error(`unsupported PNG: bit depth ${bitDepth}, colour type ${colourType}, interlace ${interlace}`);
      channels = colourType === 6 ? 4 : 3;
    } else if (type === 'IDAT') data.push(body);
    else if (type === 'IEND') break;
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(data));
  const stride = width * channels;
  const out = new Uint8Array(width * height * 4);
  let previous = new Uint8Array(stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = new Uint8Array(stride);
    for (let i = 0; i < stride; i++) {
      const left = i >= channels ? row[i - channels]! : 0;
      const up = previous[i]!;
      const upLeft = i >= channels ? previous[i - channels]! : 0;
      const value = line[i]!;
      switch (filter) {
        case 0: row[i] = value; break;
        case 1: row[i] = value + left; break;
        case 2: row[i] = value + up; break;
        case 3: row[i] = value + ((left + up) >> 1); break;
        case 4: {
          const p = left + up - upLeft;
          const pa = Math.abs(p - left);
          const pb = Math.abs(p - up);
          const pc = Math.abs(p - upLeft);
          row[i] = value + (pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft);
          break;
        }
        default: throw new Error(`bad PNG filter ${filter} on row ${y}`);
      }
    }
    for (let x = 0; x < width; x++) {
      out.set([row[x * channels]!, row[x * channels + 1]!, row[x * channels + 2]!, channels === 4 ? row[x * channels + 3]! : 255], (y * width + x) * 4);
    }
    previous = row;
  }
  return { width, height, rgba: out };
}

/** A pixel region: columns left to right - 1, rows top to bottom - 1 (fractions widen it to whole pixels). */
export interface Region {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

/**
 * Pixels within `tolerance` (per channel) of a `#rrggbb` colour, with the rows they were found on; only
 * inside `within` when given (the whole picture otherwise).
 */
export function findColour(pixels: Pixels, hex: string, tolerance = 6, within?: Region): { count: number; firstRow: number; lastRow: number } {
  const [r, g, b] = [1, 3, 5].map((start) => Number.parseInt(hex.slice(start, start + 2), 16)) as [number, number, number];
  const left = Math.max(0, Math.floor(within?.left ?? 0));
  const top = Math.max(0, Math.floor(within?.top ?? 0));
  const right = Math.min(pixels.width, Math.ceil(within?.right ?? pixels.width));
  const bottom = Math.min(pixels.height, Math.ceil(within?.bottom ?? pixels.height));
  let count = 0;
  let firstRow = -1;
  let lastRow = -1;
  for (let row = top; row < bottom; row++) {
    for (let column = left; column < right; column++) {
      const at = (row * pixels.width + column) * 4;
      if (Math.abs(pixels.rgba[at]! - r) <= tolerance && Math.abs(pixels.rgba[at + 1]! - g) <= tolerance && Math.abs(pixels.rgba[at + 2]! - b) <= tolerance) {
        count++;
        if (firstRow < 0) firstRow = row;
        lastRow = row;
      }
    }
  }
  return { count, firstRow, lastRow };
}
