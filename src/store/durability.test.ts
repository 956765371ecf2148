import Database from 'better-sqlite3';
import { closeSync, fdatasyncSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, StorageError } from '../queue/errors.ts';
import { ManualClock } from '../queue/__test-helpers__/test-kit.ts';
import { openWorkQueue } from '../work-queue.ts';
import { DEFAULT_DURABILITY, DURABILITIES, LOSABLE_WRITES, requireDurability, SYNCED_WRITES, SYNCED_AFTER_COMMIT, syncedAfterCommit, synchronousFor, type Durability } from './durability.ts';
import { SqliteStore } from './sqlite-store.ts';

const root = mkdtempSync(join(tmpdir(), 'leasehold-durability-'));
let files = 0;
afterAll(() => rmSync(root, { recursive: true, force: true }));
const freshPath = () => join(root, `queue-${++files}.sqlite`);

const OPTIONS = { busyTimeoutMs: 1_000, busyRetries: 0 };
const LEVEL = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];
const levelOf = (db: Database.Database) => LEVEL[Number(db.pragma('synchronous', { simple: true }))];

/** A store option that counts the store's syncs of the WAL after a commit (really syncing it). */
function countingSync(): { syncWal: (walPath: string) => void; count: () => number } {
  let syncs = 0;
  return {
    syncWal: (walPath) => {
      const fd = openSync(walPath, 'r+');
      fdatasyncSync(fd);
      closeSync(fd);
      syncs++;
    },
    count: () => syncs,
  };
}

/**
 * Runs a small life of a task and notes, after each write, the connection's level and whether the store
 * synced the WAL after the commit (`syncs`, the counter of the store's syncWal, when it has one).
 */
let topics = 0;
async function levelsAfterEachWrite(store: SqliteStore, syncs: () => number = () => 0): Promise<[string, string][]> {
  const [first, second] = [`t${++topics}`, `t${++topics}`];
  const queue = openWorkQueue({ db: store, clock: new ManualClock() });
  const seen: [string, string][] = [];
  let before = syncs();
  const note = (operation: string) => {
    seen.push([operation, `${levelOf(store.db)!}${syncs() > before ? ', synced after' : ''}`]);
    before = syncs();
  };
  await queue.enqueue({ tenant: 'a', topic: first, version: 1, priority: 0, input: {} });
  note('enqueue');
  const waiting = await queue.enqueue({ tenant: 'a', topic: second, version: 1, priority: 0, input: {} });
  if (!waiting.ok) throw new Error('no enqueue');
  note('enqueue');
  const claimed = await queue.claim('w');
  if (!claimed.ok) throw new Error('no claim');
  note('claim');
  const { id, generation } = claimed.task;
  await queue.heartbeat(id, 'w', generation);
  note('heartbeat');
  await queue.checkpoint(id, 'w', generation, { kind: 'A', step: 0, state: {}, usage: { inputTokens: 1, outputTokens: 1, modelCalls: 1 } });
  note('checkpoint');
  await queue.recordEffect(id, 'w', generation, { requestKey: `k-${first}`, action: 'refund', result: 1 });
  note('recordEffect');
  await queue.complete(id, 'w', generation, { ok: true });
  note('complete');
  await queue.cancel(waiting.taskId);
  note('cancel');
  // A resend answered duplicate changed nothing, and is synced all the same: its answer rests on the
  // first enqueue's commit, whose own sync may not have finished (another process's) or have failed.
  await queue.enqueue({ tenant: 'a', topic: first, version: 1, priority: 0, input: {} });
  note('enqueue');
  await queue.close();
  return seen;
}

describe('durability: what a commit survives', () => {
  it('classifies every write operation of the queue exactly once', () => {
    const operations = new Set<string>();
    const walk = (folder: string) => {
      for (const name of readdirSync(folder)) {
        const path = join(folder, name);
        if (statSync(path).isDirectory()) {
          if (!name.startsWith('__')) walk(path);
        } else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) {
          for (const match of readFileSync(path, 'utf8').matchAll(/\bwrite\(context, '([A-Za-z]+)'/g)) operations.add(match[1]!);
        }
      }
    };
    walk(join(import.meta.dirname, '..'));
    expect(operations.size).toBeGreaterThan(10);
    for (const operation of operations) expect([operation, SYNCED_WRITES.has(operation) !== LOSABLE_WRITES.has(operation)]).toEqual([operation, true]);
    expect([...SYNCED_WRITES, ...LOSABLE_WRITES].sort()).toEqual([...operations].sort());
  });

  it('picks the level per operation, and the writes synced after their commit; an operation nobody classified is synced', () => {
    expect(synchronousFor('acknowledged', 'enqueue')).toBe('NORMAL');
    expect(synchronousFor('acknowledged', 'complete')).toBe('FULL');
    expect(synchronousFor('acknowledged', 'claim')).toBe('NORMAL');
    expect(synchronousFor('acknowledged', 'somethingNew')).toBe('FULL');
    expect(synchronousFor('every_commit', 'claim')).toBe('FULL');
    expect(synchronousFor('every_commit', 'enqueue')).toBe('FULL');
    expect(synchronousFor('process_crash', 'enqueue')).toBe('NORMAL');
    expect(syncedAfterCommit('acknowledged', 'enqueue')).toBe(true);
    expect(syncedAfterCommit('acknowledged', 'complete')).toBe(false);
    expect(syncedAfterCommit('acknowledged', 'claim')).toBe(false);
    expect(syncedAfterCommit('every_commit', 'enqueue')).toBe(false);
    expect(syncedAfterCommit('process_crash', 'enqueue')).toBe(false);
    // A write synced after its commit is one of the synced writes, never a losable one.
    for (const operation of SYNCED_AFTER_COMMIT) expect([operation, SYNCED_WRITES.has(operation)]).toEqual([operation, true]);
  });

  it('refuses a bad durability with a ConfigError naming the field, before anything is opened', () => {
    for (const bad of ['fast', 'FULL', '', 1, null, {}]) {
      expect(() => requireDurability(bad)).toThrow(ConfigError);
      expect(() => openWorkQueue({ db: ':memory:', clock: new ManualClock(), durability: bad as never })).toThrow(/invalid config field 'durability'/);
      expect(() => SqliteStore.open(freshPath(), { ...OPTIONS, durability: bad as never }, () => 0)).toThrow(ConfigError);
    }
    expect(readdirSync(root).filter((name) => name.startsWith(`queue-${files}`))).toEqual([]);
    for (const good of DURABILITIES) expect(requireDurability(good)).toBe(good);
    expect(requireDurability(undefined)).toBeUndefined();
  });

  it('refuses a durability given with a Store, which brings its own', () => {
    const store = SqliteStore.open(':memory:', OPTIONS, () => 0);
    expect(() => openWorkQueue({ db: store, clock: new ManualClock(), durability: 'every_commit' })).toThrow(/invalid config field 'durability'/);
    void store.close();
  });

  it('gives a path the default, acknowledged: NORMAL, and synced before the answer for the commits whose answer leaves the process (an enqueue right after its commit, the rest at FULL)', async () => {
    expect(DEFAULT_DURABILITY).toBe('acknowledged');
    const syncs = countingSync();
    const store = SqliteStore.open(freshPath(), { ...OPTIONS, syncWal: syncs.syncWal }, () => 0);
    expect(store.durability).toBe('acknowledged');
    expect(levelOf(store.db)).toBe('NORMAL');
    expect(String(store.db.pragma('journal_mode', { simple: true }))).toBe('wal');
    expect(await levelsAfterEachWrite(store, syncs.count)).toEqual([
      ['enqueue', 'NORMAL, synced after'],
      ['enqueue', 'NORMAL, synced after'],
      ['claim', 'NORMAL'],
      ['heartbeat', 'NORMAL'],
      ['checkpoint', 'NORMAL'],
      ['recordEffect', 'FULL'],
      ['complete', 'FULL'],
      ['cancel', 'FULL'],
      ['enqueue', 'NORMAL, synced after'],
    ]);
  });

  it.runIf(process.platform === 'linux')('syncs with an fdatasync of the WAL by default, and closes it with the store (counted in /proc/self/fd)', async () => {
    const path = freshPath();
    const store = SqliteStore.open(path, OPTIONS, () => 0);
    const queue = openWorkQueue({ db: store, clock: new ManualClock() });
    const descriptors = () => readdirSync('/proc/self/fd').length;
    expect((await queue.enqueue({ tenant: 'a', topic: 'fd', version: 1, priority: 0, input: {} })).ok).toBe(true);
    const open = descriptors();
    expect((await queue.enqueue({ tenant: 'a', topic: 'fd2', version: 1, priority: 0, input: {} })).ok).toBe(true);
    // One descriptor, kept: the second sync opens nothing more.
    expect(descriptors()).toBe(open);
    await queue.close();
    expect(descriptors()).toBeLessThan(open);
  });

  it('makes a synced write visible before its sync, and answers only after it', async () => {
    const path = freshPath();
    let seenDuringSync: unknown;
    let synced = false;
    const store = SqliteStore.open(
      path,
      {
        ...OPTIONS,
        syncWal: () => {
          const other = new Database(path, { readonly: true });
          seenDuringSync = other.prepare('SELECT topic, state FROM tasks').all();
          other.close();
          synced = true;
        },
      },
      () => 0,
    );
    const queue = openWorkQueue({ db: store, clock: new ManualClock() });
    const answer = queue.enqueue({ tenant: 'a', topic: 'seen', version: 1, priority: 0, input: {} });
    expect(synced).toBe(true);
    expect(seenDuringSync).toEqual([{ topic: 'seen', state: 'ready' }]);
    expect(await answer).toMatchObject({ ok: true, status: 'enqueued' });
    await queue.close();
  });

  it('answers a failed sync with a StorageError saying the write committed and may not survive a power cut', async () => {
    const path = freshPath();
    let fail: { code: string } | undefined;
    const store = SqliteStore.open(
      path,
      {
        ...OPTIONS,
        syncWal: () => {
          if (fail !== undefined) throw Object.assign(new Error('simulated'), fail);
        },
      },
      () => 0,
    );
    const queue = openWorkQueue({ db: store, clock: new ManualClock() });
    for (const [code, typed] of [
      ['EIO', 'io_error'],
      ['ENOSPC', 'disk_full'],
    ] as const) {
      fail = { code };
      const error = await queue.enqueue({ tenant: 'a', topic: code, version: 1, priority: 0, input: {} }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StorageError);
      expect(error).toMatchObject({ code: typed, committed: true, sqliteCode: code, operation: 'enqueue' });
      expect(String((error as Error).message)).toMatch(/enqueue committed, but the sync of its write-ahead log failed, so a power cut may take it back/);
      // It committed: the same call again is a duplicate, answered once the WAL is synced (this time it is).
      fail = undefined;
      expect(await queue.enqueue({ tenant: 'a', topic: code, version: 1, priority: 0, input: {} })).toMatchObject({ ok: true, status: 'duplicate' });
    }
    await queue.close();
  });

  it.each([
    ['every_commit', 'FULL'],
    ['process_crash', 'NORMAL'],
  ] as [Durability, string][])('runs every commit of %s at %s, with no sync after it', async (durability, level) => {
    const syncs = countingSync();
    const store = SqliteStore.open(freshPath(), { ...OPTIONS, durability, syncWal: syncs.syncWal }, () => 0);
    expect(store.durability).toBe(durability);
    for (const [, seen] of await levelsAfterEachWrite(store, syncs.count)) expect(seen).toBe(level);
    expect(syncs.count()).toBe(0);
  });

  it('leaves a handle passed in at its own level, unless a durability is given', async () => {
    const file = freshPath();
    const handle = new Database(file);
    handle.pragma('journal_mode = WAL');
    handle.pragma('synchronous = OFF');
    const own = SqliteStore.open(handle, OPTIONS, () => 0);
    expect(own.durability).toBeUndefined();
    for (const [, seen] of await levelsAfterEachWrite(own)) expect(seen).toBe('OFF');

    const queue = openWorkQueue({ db: handle, clock: new ManualClock(), durability: 'every_commit' });
    expect(levelOf(handle)).toBe('FULL');
    await queue.close();
    const syncs = countingSync();
    const given = SqliteStore.open(handle, { ...OPTIONS, durability: 'acknowledged', syncWal: syncs.syncWal }, () => 0);
    expect(levelOf(handle)).toBe('NORMAL');
    expect((await levelsAfterEachWrite(given, syncs.count)).map(([, level]) => level)).toContain('NORMAL, synced after');
    expect(handle.open).toBe(true);
    handle.close();
  });

  it('commits an enqueue under FULL on a handle passed in that is not in WAL mode: there is no WAL to sync after the commit', async () => {
    const file = freshPath();
    const handle = new Database(file);
    handle.pragma('journal_mode = DELETE');
    const syncs = countingSync();
    const store = SqliteStore.open(handle, { ...OPTIONS, durability: 'acknowledged', syncWal: syncs.syncWal }, () => 0);
    const seen = await levelsAfterEachWrite(store, syncs.count);
    expect(seen.filter(([operation]) => operation === 'enqueue').map(([, level]) => level)).toEqual(['FULL', 'FULL', 'FULL']);
    expect(syncs.count()).toBe(0);
    expect(handle.open).toBe(true);
    handle.close();
  });

  it('switches nothing in memory, where nothing survives a crash anyway', async () => {
    const store = SqliteStore.open(':memory:', { ...OPTIONS, durability: 'every_commit' }, () => 0);
    expect(store.durability).toBeUndefined();
    const handle = new Database(':memory:');
    const adopted = SqliteStore.open(handle, { ...OPTIONS, durability: 'acknowledged' }, () => 0);
    expect(adopted.durability).toBeUndefined();
    await levelsAfterEachWrite(adopted);
    void store.close();
    handle.close();
  });
});
