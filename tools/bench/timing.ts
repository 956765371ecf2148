/**
 * Wall-time helpers for the benchmark. Only `process.hrtime.bigint()` is used for time (rule S1 bans the
 * ambient clock APIs in sim/); the queue itself gets the production SystemClock where wall time matters.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import Database from 'better-sqlite3';
import { NEW_FILE_PAGE_SIZE } from '../../src/store/sqlite-store.ts';

export function nowNs(): bigint {
  return process.hrtime.bigint();
}

export function elapsedNs(start: bigint): number {
  return Number(process.hrtime.bigint() - start);
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const pos = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[pos]!;
}

/** Round to a few significant digits for the JSON report. */
export function sig(value: number, digits = 4): number {
  if (!Number.isFinite(value) || value === 0) return value;
  return Number(value.toPrecision(digits));
}

export function makeTmpDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `leasehold-bench-${prefix}-`));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** The one database setting every contender runs on: a WAL file, synchronous=NORMAL. */
export const WAL_SETTINGS = { journalMode: 'wal', synchronous: 1 /* NORMAL */ } as const;

/**
 * A new WAL file at synchronous NORMAL for a bench contender, every one alike: with the page size the
 * SQLite store gives a file it creates (src/store/sqlite-store.ts NEW_FILE_PAGE_SIZE), so the queue
 * runs as a user's new file does and every other contender on the same pages.
 */
export function openWalDatabase(file: string): Database.Database {
  const db = new Database(file);
  db.pragma(`page_size = ${NEW_FILE_PAGE_SIZE}`);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  return db;
}

export interface DbSettings {
  journalMode: string;
  synchronous: number;
  busyTimeout: number;
  pageSize: number;
}

export function readSettings(db: Database.Database): DbSettings {
  return {
    journalMode: String(db.pragma('journal_mode', { simple: true })),
    synchronous: Number(db.pragma('synchronous', { simple: true })),
    busyTimeout: Number(db.pragma('busy_timeout', { simple: true })),
    pageSize: Number(db.pragma('page_size', { simple: true })),
  };
}

export function sameAsWalNormal(s: DbSettings): boolean {
  return s.journalMode.toLowerCase() === WAL_SETTINGS.journalMode && s.synchronous === WAL_SETTINGS.synchronous;
}

/**
 * A full GC between timed slices, so that one contender does not pay for another's garbage. `npm run
 * bench` cannot pass --expose-gc through tsx, so it is switched on at run time; without it this is a no-op.
 */
export function makeGc(): () => void {
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as unknown;
    if (typeof gc === 'function') return () => (gc as () => void)();
  } catch {
    // fall through
  }
  return () => undefined;
}

/** A deterministic PRNG (mulberry32) for workload shapes; the benchmark needs no ambient randomness. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function fmtRate(perSecond: number): string {
  if (!Number.isFinite(perSecond)) return String(perSecond);
  if (perSecond >= 1000) return `${(perSecond / 1000).toFixed(1)}k/s`;
  return `${perSecond.toFixed(0)}/s`;
}

export function fmtUs(ns: number): string {
  return `${(ns / 1000).toFixed(1)} µs`;
}
