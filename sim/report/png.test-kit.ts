/**
 * Colour counts in a screenshot, for the report tests. The pixels are pngjs's decoding (PNG.sync.read):
 * RGBA, 4 bytes per pixel, rows top to bottom.
 */
export interface Pixels {
  width: number;
  height: number;
  data: Uint8Array;
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
      if (Math.abs(pixels.data[at]! - r) <= tolerance && Math.abs(pixels.data[at + 1]! - g) <= tolerance && Math.abs(pixels.data[at + 2]! - b) <= tolerance) {
        count++;
        if (firstRow < 0) firstRow = row;
        lastRow = row;
      }
    }
  }
  return { count, firstRow, lastRow };
}
