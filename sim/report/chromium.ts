import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Headless Chromium (Debian's `chromium` package) for looking at reports the way a person would: a
 * screenshot, and the page's console. Chromium started with `--enable-logging=stderr --v=0` writes every
 * console message and uncaught error of the page to stderr as `INFO:CONSOLE...] "text", source: URL (line)`;
 * those lines are the page's console. No puppeteer, no network.
 */

export const CHROMIUM_INSTALL_HINT = 'apt-get install -y chromium';

/** The browser binary: $LEASEHOLD_CHROMIUM, else `chromium` or `chromium-browser` on the PATH. */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const configured = env.LEASEHOLD_CHROMIUM;
  if (configured !== undefined && configured !== '') return existsSync(configured) ? configured : undefined;
  for (const name of ['chromium', 'chromium-browser']) {
    try {
      const path = execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
      if (path !== '') return path;
    } catch {
      // not on the PATH
    }
  }
  return undefined;
}

export interface PageLook {
  /** Console messages and uncaught errors the page produced, one per line. */
  console: string[];
  /** Chromium's whole stderr, for a failure message. */
  stderr: string;
  exitCode: number | null;
}

export interface ScreenshotOptions {
  width: number;
  height: number;
  /** Device pixels per CSS pixel (2 for a sharp README picture). */
  scale?: number;
  timeoutMs?: number;
}

/** Loads a local HTML (or SVG) file headless, writes a PNG screenshot, and returns what the console said. */
export function screenshot(chromium: string, page: string, png: string, options: ScreenshotOptions): Promise<PageLook> {
  const profile = mkdtempSync(join(tmpdir(), 'leasehold-chromium-'));
  const args = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--no-first-run',
    '--no-default-browser-check',
    '--disable-extensions',
    '--hide-scrollbars',
    `--user-data-dir=${profile}`,
    '--enable-logging=stderr',
    '--v=0',
    `--window-size=${options.width},${options.height}`,
    ...(options.scale === undefined ? [] : [`--force-device-scale-factor=${options.scale}`]),
    `--screenshot=${resolve(png)}`,
    pathToFileURL(resolve(page)).href,
  ];
  return new Promise((done) => {
    execFile(chromium, args, { timeout: options.timeoutMs ?? 90_000, maxBuffer: 16 * 1024 * 1024 }, (error, _stdout, stderr) => {
      rmSync(profile, { recursive: true, force: true });
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
      done({ console: consoleLines(stderr), stderr, exitCode: code });
    });
  });
}

/** The page's console lines out of Chromium's log (`...:INFO:CONSOLE:12] "text", source: ...` or `CONSOLE(12)`). */
export function consoleLines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => /:CONSOLE[:(]\d+/.test(line));
}

/** A rectangle in CSS pixels of the viewport, as `getBoundingClientRect` gives it. */
export interface Box {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

const BOX_LINE = /"leasehold-box (\S+) (-?[\d.]+) (-?[\d.]+) (-?[\d.]+) (-?[\d.]+)"/;

/**
 * Where elements of a page are laid out: for each name, the union of the bounding boxes of the elements
 * its CSS selector matches (absent when none match). It loads a copy of the page with a measuring script
 * added, at the same window size as a screenshot, so the boxes are the screenshot's pixel regions
 * (scale 1); the page itself stays script-free.
 */
export async function elementBoxes(chromium: string, page: string, selectors: Record<string, string>, options: ScreenshotOptions): Promise<Record<string, Box | undefined>> {
  const directory = mkdtempSync(join(tmpdir(), 'leasehold-boxes-'));
  try {
    const probe = `<script>addEventListener('load', () => { for (const [name, selector] of ${JSON.stringify(Object.entries(selectors))}) {
  const rects = [...document.querySelectorAll(selector)].map((element) => element.getBoundingClientRect()).filter((r) => r.width > 0 || r.height > 0);
  if (rects.length === 0) continue;
  const box = [Math.min(...rects.map((r) => r.left)), Math.min(...rects.map((r) => r.top)), Math.max(...rects.map((r) => r.right)), Math.max(...rects.map((r) => r.bottom))];
  console.log(['leasehold-box', name, ...box].join(' '));
} });</script>`;
    const html = readFileSync(page, 'utf8');
    const measured = join(directory, 'page.html');
    writeFileSync(measured, html.includes('</body>') ? html.replace('</body>', `${probe}</body>`) : `${html}${probe}`);
    const look = await screenshot(chromium, measured, join(directory, 'page.png'), { ...options, scale: 1 });
    const boxes: Record<string, Box | undefined> = Object.fromEntries(Object.keys(selectors).map((name) => [name, undefined]));
    for (const line of look.console) {
      const match = BOX_LINE.exec(line);
      if (match === null) continue;
      const [left, top, right, bottom] = match.slice(2).map(Number) as [number, number, number, number];
      boxes[match[1]!] = { left, top, right, bottom };
    }
    return boxes;
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/**
 * A picture of one SVG file at its natural size: wraps it in a page of exactly that size and
 * screenshots it (the README's timeline picture).
 */
export async function svgToPng(chromium: string, svg: string, png: string, scale = 1): Promise<PageLook> {
  const width = Number(/\bwidth="(\d+(?:\.\d+)?)"/.exec(svg)?.[1] ?? 1320);
  const height = Number(/\bheight="(\d+(?:\.\d+)?)"/.exec(svg)?.[1] ?? 600);
  const directory = mkdtempSync(join(tmpdir(), 'leasehold-svg-'));
  try {
    const page = join(directory, 'page.html');
    const natural = svg.replace(/ style="[^"]*"/, '');
    writeFileSync(page, `<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><style>body{margin:0;background:#fff}</style></head><body>${natural}</body></html>`);
    return await screenshot(chromium, page, png, { width: Math.ceil(width), height: Math.ceil(height), scale });
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
