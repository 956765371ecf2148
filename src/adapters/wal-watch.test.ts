import { existsSync, mkdtempSync, watch } from 'node:fs';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openWorkQueue } from '../work-queue.ts';
import { SystemClock } from './clock.ts';
import { walSignal } from './wal-watch.ts';

// Records the store's signals (utimes of the WAL) while still making them.
vi.mock('node:fs', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs')>();
  return { ...actual, utimesSync: vi.fn(actual.utimesSync) };
});

const touched = () => vi.mocked(fs.utimesSync).mock.calls.map(([path]) => String(path));

/** Polls `ready` (event-driven tests on a loaded machine: a generous bound, never a timing assertion). */
async function until(what: string, ready: () => boolean, boundMs = 20_000): Promise<void> {
  for (let waited = 0; !ready(); waited += 10) {
    if (waited > boundMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  vi.mocked(fs.utimesSync).mockClear();
});

describe('walSignal: a writer tells other processes its claimable commit is visible', () => {
  it('makes the kernel report a change of the WAL to a watcher of the folder', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'leasehold-walsignal-'));
    const queue = openWorkQueue({ db: join(folder, 'q.db'), clock: new SystemClock() });
    closers.push(() => queue.close());
    await queue.get(1); // opens the file in WAL mode, so the WAL exists
    const seen: string[] = [];
    const watcher = watch(folder, (_event, file) => {
      if (file !== null) seen.push(file);
    });
    closers.push(() => watcher.close());
    walSignal(join(folder, 'q.db'))();
    await until('a change of q.db-wal', () => seen.includes('q.db-wal'));
  });

  it('does nothing, and throws nothing, when there is no WAL to touch', () => {
    const folder = mkdtempSync(join(tmpdir(), 'leasehold-walsignal-'));
    expect(() => walSignal(join(folder, 'absent.db'))()).not.toThrow();
    expect(existsSync(join(folder, 'absent.db-wal'))).toBe(false);
  });

  it('the SQLite store signals after a commit that made a task claimable, and not after one that did not', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'leasehold-walsignal-'));
    const file = join(folder, 'q.db');
    const queue = openWorkQueue({ db: file, clock: new SystemClock() });
    closers.push(() => queue.close());
    await queue.get(1);
    // The signal is loaded when the store opens; an enqueue until then is found by the watchers' rechecks.
    await vi.dynamicImportSettled();
    vi.mocked(fs.utimesSync).mockClear();
    expect((await queue.enqueue({ tenant: 'acme', topic: 'signalled', version: 1, priority: 10, input: {} })).ok).toBe(true);
    expect(touched()).toEqual([`${file}-wal`]);
    vi.mocked(fs.utimesSync).mockClear();
    const claimed = await queue.claim('w1');
    expect(claimed.ok).toBe(true);
    expect(touched()).toEqual([]);
  });

  it('a queue opened with the simulator\'s setting (no other processes) never signals', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'leasehold-walsignal-'));
    const file = join(folder, 'q.db');
    const { SqliteStore } = await import('../store/sqlite-store.ts');
    const store = SqliteStore.open(file, { busyTimeoutMs: 1000, busyRetries: 1, watchOtherProcesses: false }, () => 0);
    closers.push(() => store.close());
    await vi.dynamicImportSettled();
    const queue = openWorkQueue({ db: store, clock: new SystemClock() });
    expect((await queue.enqueue({ tenant: 'acme', topic: 'quiet', version: 1, priority: 10, input: {} })).ok).toBe(true);
    expect(touched()).toEqual([]);
  });
});
