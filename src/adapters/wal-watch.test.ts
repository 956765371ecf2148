import { existsSync, mkdtempSync, watch, writeFileSync } from 'node:fs';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openWorkQueue } from '../work-queue.ts';
import { SystemClock } from './clock.ts';
import { WakeWatcher } from './wal-watch.ts';
import { wakeSignal, wakeTokenOf } from './wake-token.ts';

// Records the store's signals (the wake token's creation) while still making them.
vi.mock('node:fs', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs')>();
  return { ...actual, openSync: vi.fn(actual.openSync) };
});

/** The wake tokens the store made since the last clear (files opened to be created, 'wx'). */
const signalled = () =>
  vi
    .mocked(fs.openSync)
    .mock.calls.filter(([, flags]) => flags === 'wx')
    .map(([path]) => String(path));

/** Polls `ready` (event-driven tests on a loaded machine: a generous bound, never a timing assertion). */
async function until(what: string, ready: () => boolean, boundMs = 20_000): Promise<void> {
  for (let waited = 0; !ready(); waited += 10) {
    if (waited > boundMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Lets the kernel's notices of what was just done reach this process (a few turns of the event loop). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setTimeout(resolve, 5));
}

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  vi.mocked(fs.openSync).mockClear();
});

describe('wakeSignal: a writer tells one watcher of another process that its claimable commit is visible', () => {
  it('creates the wake token beside the database, which a watcher of the folder hears', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'leasehold-wake-'));
    const seen: string[] = [];
    const watcher = watch(folder, (_event, file) => {
      if (file !== null) seen.push(file);
    });
    closers.push(() => watcher.close());
    wakeSignal(join(folder, 'q.db'))();
    expect(existsSync(wakeTokenOf(join(folder, 'q.db')))).toBe(true);
    await until('a notice of q.db-leasehold-wake', () => seen.includes('q.db-leasehold-wake'));
  });

  it('sets the times of a token still there, so the watchers hear of it again, and makes no second one', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'leasehold-wake-'));
    const signal = wakeSignal(join(folder, 'q.db'));
    signal();
    const seen: string[] = [];
    const watcher = watch(folder, (_event, file) => {
      if (file !== null) seen.push(file);
    });
    closers.push(() => watcher.close());
    signal();
    await until('a notice of the token touched again', () => seen.includes('q.db-leasehold-wake'));
    expect(fs.readdirSync(folder)).toEqual(['q.db-leasehold-wake']);
  });

  it('does nothing, and throws nothing, when the folder is not there', () => {
    const folder = join(mkdtempSync(join(tmpdir(), 'leasehold-wake-')), 'gone');
    expect(() => wakeSignal(join(folder, 'q.db'))()).not.toThrow();
    expect(existsSync(folder)).toBe(false);
  });

  it('the SQLite store signals after a commit that made a task claimable, and not after one that did not', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'leasehold-wake-'));
    const file = join(folder, 'q.db');
    const queue = openWorkQueue({ db: file, clock: new SystemClock() });
    closers.push(() => queue.close());
    await queue.get(1);
    vi.mocked(fs.openSync).mockClear();
    expect((await queue.enqueue({ tenant: 'acme', topic: 'signalled', version: 1, priority: 10, input: {} })).ok).toBe(true);
    expect(signalled()).toEqual([wakeTokenOf(file)]);
    vi.mocked(fs.openSync).mockClear();
    const claimed = await queue.claim('w1');
    expect(claimed.ok).toBe(true);
    expect(signalled()).toEqual([]);
  });

  it('a queue opened with the simulator\'s setting (no other processes) never signals', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'leasehold-wake-'));
    const file = join(folder, 'q.db');
    const { SqliteStore } = await import('../store/sqlite-store.ts');
    const store = SqliteStore.open(file, { busyTimeoutMs: 1000, busyRetries: 1, watchOtherProcesses: false }, () => 0);
    closers.push(() => store.close());
    await vi.dynamicImportSettled();
    const queue = openWorkQueue({ db: store, clock: new SystemClock() });
    expect((await queue.enqueue({ tenant: 'acme', topic: 'quiet', version: 1, priority: 10, input: {} })).ok).toBe(true);
    expect(signalled()).toEqual([]);
    expect(existsSync(wakeTokenOf(file))).toBe(false);
  });
});

describe('WakeWatcher: one watcher takes each wake', () => {
  /** A watcher of `file` that counts the wakes it is told, stopped after the test. */
  function watcherOf(file: string): { told: () => number } {
    let told = 0;
    const watcher = new WakeWatcher(file, () => told++);
    watcher.start();
    closers.push(() => watcher.stop());
    return { told: () => told };
  }

  it('of three watchers, exactly one is told of each signal, and the token is gone', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'leasehold-wake-')), 'q.db');
    const watchers = [watcherOf(file), watcherOf(file), watcherOf(file)];
    const total = () => watchers.reduce((sum, w) => sum + w.told(), 0);
    const signal = wakeSignal(file);
    for (let n = 1; n <= 5; n++) {
      signal();
      await until(`wake ${n} taken`, () => total() === n);
      await settle();
      expect(total()).toBe(n);
      expect(existsSync(wakeTokenOf(file))).toBe(false);
    }
  });

  it('a token left from before a watcher started is taken when it starts', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'leasehold-wake-')), 'q.db');
    wakeSignal(file)();
    const watcher = watcherOf(file);
    expect(watcher.told()).toBe(1);
    expect(existsSync(wakeTokenOf(file))).toBe(false);
  });

  it('a change of any other file of the folder (the WAL of a commit that made nothing claimable) tells no watcher', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'leasehold-wake-'));
    const file = join(folder, 'q.db');
    const watcher = watcherOf(file);
    writeFileSync(`${file}-wal`, 'a write');
    writeFileSync(file, 'another');
    // A signal after them: once it is told, the earlier notices have been delivered too.
    wakeSignal(file)();
    await until('the signal taken', () => watcher.told() === 1);
    await settle();
    expect(watcher.told()).toBe(1);
  });

  it('a stopped watcher takes nothing: the token waits for the next one', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'leasehold-wake-')), 'q.db');
    let told = 0;
    const watcher = new WakeWatcher(file, () => told++);
    watcher.start();
    watcher.stop();
    wakeSignal(file)();
    await settle();
    expect(told).toBe(0);
    expect(existsSync(wakeTokenOf(file))).toBe(true);
  });
});
