import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium as playwright, type Browser } from 'playwright-core';

/**
 * Headless Chromium for looking at reports the way a person would: a screenshot, the page's console and
 * where its elements are laid out. One driver, playwright-core (no network, no browser download), for
 * whichever binary findChromium finds: Debian's `chromium` package or the headless shell inside the npm
 * devDependency @sparticuz/chromium. Dev and test tooling only: the shipped `leasehold report` writes
 * HTML and needs no browser, and nothing it imports reaches this file.
 */

export const CHROMIUM_INSTALL_HINT = 'npm install (the devDependencies @sparticuz/chromium and playwright-core bring one), or apt-get install -y chromium';

/** A browser binary and what it needs to start. */
export interface ChromiumBinary {
  executablePath: string;
  /** Where it was found: $LEASEHOLD_CHROMIUM, the PATH, or npm's @sparticuz/chromium. */
  source: 'LEASEHOLD_CHROMIUM' | 'PATH' | 'npm';
  /** Environment to start it with (the npm shell's shared libraries and fonts); the process's own otherwise. */
  env?: Record<string, string>;
}

/**
 * The browser binary: $LEASEHOLD_CHROMIUM, else `chromium` or `chromium-browser` on the PATH, else the
 * headless shell shipped inside the npm devDependency @sparticuz/chromium (unpacked into the temp
 * directory on first use), so a machine with only Node and npm has one. LEASEHOLD_CHROMIUM=npm skips
 * the PATH and takes the npm one.
 */
export async function findChromium(env: NodeJS.ProcessEnv = process.env): Promise<ChromiumBinary | undefined> {
  const configured = env.LEASEHOLD_CHROMIUM;
  if (configured === 'npm') return npmChromium(env);
  if (configured !== undefined && configured !== '') return existsSync(configured) ? { executablePath: configured, source: 'LEASEHOLD_CHROMIUM' } : undefined;
  const onPath = pathChromium(env);
  return onPath === undefined ? npmChromium(env) : { executablePath: onPath, source: 'PATH' };
}

function pathChromium(env: NodeJS.ProcessEnv): string | undefined {
  for (const name of ['chromium', 'chromium-browser']) {
    try {
      const path = execFileSync('/bin/sh', ['-c', `command -v ${name}`], { encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'ignore'] }).trim();
      if (path !== '') return path;
    } catch {
      // not on the PATH
    }
  }
  return undefined;
}

/** Where @sparticuz/chromium's Amazon Linux libraries (NSS, NSPR, expat) are unpacked: a bare Debian has none of them. */
const npmLibraries = join(tmpdir(), 'al2023', 'lib');

async function npmChromium(env: NodeJS.ProcessEnv): Promise<ChromiumBinary | undefined> {
  try {
    const { default: sparticuz } = await import('@sparticuz/chromium');
    const executablePath = await sparticuz.executablePath();
    // The package unpacks these only on AWS Lambda; its own inflate does it here too.
    if (!existsSync(join(npmLibraries, 'libnss3.so'))) {
      const bin = join(dirname(createRequire(import.meta.url).resolve('@sparticuz/chromium')), '..', '..', 'bin');
      const { inflate } = (await import(pathToFileURL(join(bin, '..', 'build', 'esm', 'lambdafs.js')).href)) as { inflate: (file: string) => Promise<string> };
      await inflate(join(bin, 'al2023.tar.br'));
    }
    const libraryPath = [npmLibraries, env.LD_LIBRARY_PATH].filter((part) => part !== undefined && part !== '').join(':');
    const childEnv = Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
    return { executablePath, source: 'npm', env: { ...childEnv, LD_LIBRARY_PATH: libraryPath, FONTCONFIG_PATH: env.FONTCONFIG_PATH ?? join(tmpdir(), 'fonts') } };
  } catch {
    return undefined;
  }
}

/** Starts the binary headless under playwright-core. Close the browser when done. */
export function launchChromium(binary: ChromiumBinary, timeoutMs = 90_000): Promise<Browser> {
  return playwright.launch({
    executablePath: binary.executablePath,
    headless: true,
    args: ['--disable-gpu'],
    timeout: timeoutMs,
    ...(binary.env === undefined ? {} : { env: binary.env }),
  });
}

/** A rectangle of the screenshot, in its pixels (CSS pixels times the scale). */
export interface Box {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

export interface LookOptions {
  /** The viewport, in CSS pixels. */
  width: number;
  height: number;
  /** Device pixels per CSS pixel (2 for a sharp README picture). */
  scale?: number;
  /** Also write the screenshot here. */
  png?: string;
  /** For each name, a CSS selector: its box is the union of the matching elements' boxes (absent when none is laid out). */
  boxes?: Record<string, string>;
  timeoutMs?: number;
}

export interface PageLook {
  /** Console messages (every level) and uncaught errors the page produced, one per line, in order. */
  console: string[];
  /** The viewport's screenshot, PNG. */
  png: Buffer;
  /** Where the elements of `boxes` were laid out, measured on the page that was screenshot. */
  boxes: Record<string, Box | undefined>;
}

/** What page.evaluate sees of the DOM (the project's TypeScript has no DOM library). */
interface Measured {
  document: { querySelectorAll(selector: string): Iterable<{ getBoundingClientRect(): { left: number; top: number; right: number; bottom: number; width: number; height: number } }> };
}

/**
 * Loads a local HTML (or SVG) file in a fresh context of the browser, takes a screenshot of the viewport
 * and measures the boxes asked for. Throws when the page cannot be loaded or screenshot.
 */
export async function lookAt(browser: Browser, page: string, options: LookOptions): Promise<PageLook> {
  const scale = options.scale ?? 1;
  const context = await browser.newContext({ viewport: { width: options.width, height: options.height }, deviceScaleFactor: scale });
  try {
    context.setDefaultTimeout(options.timeoutMs ?? 90_000);
    const tab = await context.newPage();
    const messages: string[] = [];
    tab.on('console', (message) => {
      const where = message.location();
      messages.push(`console.${message.type()}: ${message.text()} (${where.url}:${where.lineNumber})`);
    });
    tab.on('pageerror', (error) => messages.push(`uncaught ${error.name}: ${error.message}`));
    tab.on('crash', () => messages.push('the page crashed'));
    await tab.goto(pathToFileURL(resolve(page)).href, { waitUntil: 'load' });
    const png = await tab.screenshot(options.png === undefined ? {} : { path: resolve(options.png) });
    const selectors = Object.entries(options.boxes ?? {});
    const measured = await tab.evaluate((entries) => {
      const { document } = globalThis as unknown as Measured;
      return entries.map(([name, selector]) => {
        const rects = [...document.querySelectorAll(selector)].map((element) => element.getBoundingClientRect()).filter((r) => r.width > 0 || r.height > 0);
        if (rects.length === 0) return [name, undefined] as const;
        return [name, { left: Math.min(...rects.map((r) => r.left)), top: Math.min(...rects.map((r) => r.top)), right: Math.max(...rects.map((r) => r.right)), bottom: Math.max(...rects.map((r) => r.bottom)) }] as const;
      });
    }, selectors);
    const boxes = Object.fromEntries(measured.map(([name, box]) => [name, box === undefined ? undefined : { left: box.left * scale, top: box.top * scale, right: box.right * scale, bottom: box.bottom * scale }]));
    return { console: messages, png, boxes };
  } finally {
    await context.close();
  }
}

/**
 * A picture of one SVG file at its natural size: wraps it in a page of exactly that size and
 * screenshots it (the README's timeline picture).
 */
export async function svgToPng(browser: Browser, svg: string, png: string, scale = 1): Promise<PageLook> {
  const width = Number(/\bwidth="(\d+(?:\.\d+)?)"/.exec(svg)?.[1] ?? 1320);
  const height = Number(/\bheight="(\d+(?:\.\d+)?)"/.exec(svg)?.[1] ?? 600);
  const directory = mkdtempSync(join(tmpdir(), 'leasehold-svg-'));
  try {
    const page = join(directory, 'page.html');
    const natural = svg.replace(/ style="[^"]*"/, '');
    writeFileSync(page, `<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><style>body{margin:0;background:#fff}</style></head><body>${natural}</body></html>`);
    return await lookAt(browser, page, { width: Math.ceil(width), height: Math.ceil(height), scale, png });
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
