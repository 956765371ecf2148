import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Headless Chromium (Debian's `chromium` package, or the npm one, see findChromium) for looking at reports the way a person would: a
 * screenshot, and the page's console. Chromium started with `--enable-logging=stderr --v=0` writes every
 * console message and uncaught error of the page to stderr as `INFO:CONSOLE...] "text", source: URL (line)`;
 * those lines are the page's console. No puppeteer, no network.
 */

export const CHROMIUM_INSTALL_HINT = 'npm install (the devDependencies @sparticuz/chromium and playwright-core bring one), or apt-get install -y chromium';

/** Binaries that came from npm (@sparticuz/chromium, a headless shell): driven through playwright-core. */
const npmBinaries = new Set<string>();

/**
 * The browser binary: $LEASEHOLD_CHROMIUM, else `chromium` or `chromium-browser` on the PATH, else the
 * headless shell shipped inside the npm devDependency @sparticuz/chromium (unpacked into the temp
 * directory on first use), so a machine with only Node and npm has one. LEASEHOLD_CHROMIUM=npm skips
 * the PATH and takes the npm one.
 */
export async function findChromium(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  const configured = env.LEASEHOLD_CHROMIUM;
  if (configured === 'npm') return npmChromium();
  if (configured !== undefined && configured !== '') return existsSync(configured) ? configured : undefined;
  return pathChromium() ?? (await npmChromium());
}

async function npmChromium(): Promise<string | undefined> {
  try {
    const { default: chromium } = await import('@sparticuz/chromium');
    const path = await chromium.executablePath();
    // Its shared libraries (NSS, NSPR, expat), shipped for Amazon Linux, so a bare Debian needs none.
    await inflateLibraries();
    npmBinaries.add(path);
    return path;
  } catch {
    return undefined;
  }
}

const npmLibraries = join(tmpdir(), 'al2023', 'lib');

async function inflateLibraries(): Promise<void> {
  if (existsSync(join(npmLibraries, 'libnss3.so'))) return;
  const { createRequire } = await import('node:module');
  const bin = join(dirname(createRequire(import.meta.url).resolve('@sparticuz/chromium')), '..', '..', 'bin');
  const { inflate } = (await import(pathToFileURL(join(bin, '..', 'build', 'esm', 'lambdafs.js')).href)) as { inflate: (file: string) => Promise<string> };
  await inflate(join(bin, 'al2023.tar.br'));
}

function pathChromium(): string | undefined {
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
  if (npmBinaries.has(chromium)) return driven(chromium, page, png, options);
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

/**
 * The npm headless shell ignores `--screenshot`, so it is driven over the DevTools protocol by
 * playwright-core; console messages and uncaught errors are written as Chromium's own log lines.
 */
async function driven(chromium: string, page: string, png: string, options: ScreenshotOptions): Promise<PageLook> {
  const { chromium: driver } = await import('playwright-core');
  const log: string[] = [];
  const env = { ...process.env, LD_LIBRARY_PATH: [npmLibraries, process.env.LD_LIBRARY_PATH].filter((part) => part !== undefined && part !== '').join(':'), FONTCONFIG_PATH: process.env.FONTCONFIG_PATH ?? join(tmpdir(), 'fonts') };
  const browser = await driver.launch({ executablePath: chromium, args: ['--no-sandbox', '--disable-gpu', '--hide-scrollbars'], env, timeout: options.timeoutMs ?? 90_000 });
  try {
    const context = await browser.newContext({ viewport: { width: options.width, height: options.height }, deviceScaleFactor: options.scale ?? 1 });
    const tab = await context.newPage();
    tab.on('console', (message) => {
      const where = message.location();
      log.push(`[driven:INFO:CONSOLE:${where.lineNumber}] ${JSON.stringify(message.text())}, source: ${where.url} (${where.lineNumber})`);
    });
    tab.on('pageerror', (error) => log.push(`[driven:INFO:CONSOLE:0] ${JSON.stringify(`Uncaught ${error.name}: ${error.message}`)}, source: page (0)`));
    await tab.goto(pathToFileURL(resolve(page)).href, { waitUntil: 'load', timeout: options.timeoutMs ?? 90_000 });
    await tab.screenshot({ path: resolve(png) });
    const stderr = log.join('\n');
    return { console: consoleLines(stderr), stderr, exitCode: 0 };
  } catch (error) {
    const stderr = [...log, String(error)].join('\n');
    return { console: consoleLines(stderr), stderr, exitCode: 1 };
  } finally {
    await browser.close();
  }
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
