/**
 * The SQLite store's reads and its edges (Q18, W1): a read that meets SQLITE_BUSY is tried again up to
 * busyRetries and then is a BusyError naming the attempts; anything else surfaces at once, typed when it
 * is storage trouble; a handle its owner closed fails the change counter with the driver's own error;
 * a `file:` URI is refused by name; closing twice is closing once.
 */
import Database from 'better-sqlite3';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BusyError, ConfigError, StorageError } from '../queue/errors.ts';
import { ManualClock, T0 } from '../queue/__test-helpers__/test-kit.ts';
import { openWorkQueue } from '../work-queue.ts';
import { SqliteStore } from './sqlite-store.ts';
import type { Step } from './store.ts';
import { thrownBy } from './__test-helpers__/thrown.ts';

const scratch: string[] = [];

afterEach(() => {
  for (const directory of scratch.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** A read body that meets SQLITE_BUSY on its first `busy` runs, then reads the live count. */
function busyFor(busy: number): { runs: () => number; body: (tx: Parameters<Parameters<SqliteStore['readNow']>[1]>[0]) => Step<number> } {
  let runs = 0;
  return {
    runs: () => runs,
    body: function* (tx) {
      runs++;
      if (runs <= busy) throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
      return yield* tx.counterLive();
    },
  };
}

describe('SQLite reads under a busy database', () => {
  it('are tried again while busyRetries allows, and answer once the lock is free', async () => {
    const store = SqliteStore.open(':memory:', { busyTimeoutMs: 0, busyRetries: 2 }, () => T0);
    const read = busyFor(2);
    expect(store.readNow('liveCount', read.body)).toBe(0);
    expect(read.runs()).toBe(3);
    const async = busyFor(1);
    await expect(store.read('liveCount', async.body)).resolves.toBe(0);
    expect(async.runs()).toBe(2);
    await store.close();
  });

  it('give up after busyRetries + 1 attempts with a BusyError naming the read', async () => {
    const store = SqliteStore.open(':memory:', { busyTimeoutMs: 0, busyRetries: 2 }, () => T0);
    const read = busyFor(10);
    const error = thrownBy(() => store.readNow('snapshot', read.body));
    expect(error).toBeInstanceOf(BusyError);
    expect(error).toMatchObject({ code: 'db_busy', operation: 'snapshot', attempts: 3 });
    expect(read.runs()).toBe(3);
    // Through the promise as well: a rejection, never a synchronous throw.
    await expect(store.read('snapshot', busyFor(10).body)).rejects.toMatchObject({ name: 'BusyError', attempts: 3 });
    await store.close();
  });

  it('surface storage trouble at once, typed, even when the driver gave no message', async () => {
    const store = SqliteStore.open(':memory:', { busyTimeoutMs: 0, busyRetries: 5 }, () => T0);
    let runs = 0;
    const error = thrownBy(() =>
      store.readNow('peek', function* () {
        runs++;
        throw { code: 'SQLITE_FULL' };
      }),
    );
    expect(runs).toBe(1);
    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({ code: 'disk_full', sqliteCode: 'SQLITE_FULL', operation: 'peek' });
    expect((error as StorageError).message).toBe('disk full: peek was rolled back (SQLITE_FULL: SQLITE_FULL)');
    await store.close();
  });
});

describe('the SQLite store at its edges', () => {
  it('fails the change counter with the driver error once the owner closed its handle, and answers nothing after its own close', async () => {
    const db = new Database(':memory:');
    const store = SqliteStore.open(db, { busyTimeoutMs: 0, busyRetries: 0 }, () => T0);
    expect(typeof (await store.changeCounter())).toBe('number');
    db.close();
    const error = await store.changeCounter().then(
      () => undefined,
      (rejected: unknown) => rejected,
    );
    // Not store trouble to retry: the handle is gone, and the driver says so.
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(/not open/);
    await store.close();
    await store.close();
    await expect(store.changeCounter()).resolves.toBeUndefined();
  });

  it('refuses a file: URI by name, and creates nothing', () => {
    const directory = mkdtempSync(join(tmpdir(), 'leasehold-file-uri-'));
    scratch.push(directory);
    const path = join(directory, 'queue.sqlite');
    const error = thrownBy(() => openWorkQueue({ db: `file:${path}?mode=rwc`, clock: new ManualClock() }));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe('db');
    expect((error as ConfigError).message).toMatch(/file: URIs/);
    expect(existsSync(path)).toBe(false);
    expect(readdirSync(directory)).toEqual([]);
  });
});
