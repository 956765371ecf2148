import Database from 'better-sqlite3';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../queue/errors.ts';
import { ManualClock } from '../queue/__test-helpers__/test-kit.ts';
import { openWorkQueue } from '../work-queue.ts';
import { DEFAULT_DURABILITY, DURABILITIES, LOSABLE_WRITES, requireDurability, SYNCED_WRITES, synchronousFor, type Durability } from './durability.ts';
import { SqliteStore } from './sqlite-store.ts';

const root = mkdtempSync(join(tmpdir(), 'leasehold-durability-'));
let files = 0;
afterAll(() => rmSync(root, { recursive: true, force: true }));
const freshPath = () => join(root, `queue-${++files}.sqlite`);

const OPTIONS = { busyTimeoutMs: 1_000, busyRetries: 0 };
const LEVEL = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];
const levelOf = (db: Database.Database) => LEVEL[Number(db.pragma('synchronous', { simple: true }))];

/** Runs a small life of a task and notes the connection's level after each write. */
let topics = 0;
async function levelsAfterEachWrite(store: SqliteStore): Promise<[string, string][]> {
  const [first, second] = [`t${++topics}`, `t${++topics}`];
  const queue = openWorkQueue({ db: store, clock: new ManualClock() });
  const seen: [string, string][] = [];
  const note = (operation: string) => seen.push([operation, levelOf(store.db)!]);
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

  it('picks the level per operation; an operation nobody classified is synced', () => {
    expect(synchronousFor('acknowledged', 'enqueue')).toBe('FULL');
    expect(synchronousFor('acknowledged', 'claim')).toBe('NORMAL');
    expect(synchronousFor('acknowledged', 'somethingNew')).toBe('FULL');
    expect(synchronousFor('every_commit', 'claim')).toBe('FULL');
    expect(synchronousFor('process_crash', 'enqueue')).toBe('NORMAL');
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

  it('gives a path the default, acknowledged: NORMAL, and FULL for the commits whose answer leaves the process', async () => {
    expect(DEFAULT_DURABILITY).toBe('acknowledged');
    const store = SqliteStore.open(freshPath(), OPTIONS, () => 0);
    expect(store.durability).toBe('acknowledged');
    expect(levelOf(store.db)).toBe('NORMAL');
    expect(String(store.db.pragma('journal_mode', { simple: true }))).toBe('wal');
    expect(await levelsAfterEachWrite(store)).toEqual([
      ['enqueue', 'FULL'],
      ['enqueue', 'FULL'],
      ['claim', 'NORMAL'],
      ['heartbeat', 'NORMAL'],
      ['checkpoint', 'NORMAL'],
      ['recordEffect', 'FULL'],
      ['complete', 'FULL'],
      ['cancel', 'FULL'],
    ]);
  });

  it.each([
    ['every_commit', 'FULL'],
    ['process_crash', 'NORMAL'],
  ] as [Durability, string][])('runs every commit of %s at %s', async (durability, level) => {
    const store = SqliteStore.open(freshPath(), { ...OPTIONS, durability }, () => 0);
    expect(store.durability).toBe(durability);
    for (const [, seen] of await levelsAfterEachWrite(store)) expect(seen).toBe(level);
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
    const given = SqliteStore.open(handle, { ...OPTIONS, durability: 'acknowledged' }, () => 0);
    expect(levelOf(handle)).toBe('NORMAL');
    expect((await levelsAfterEachWrite(given)).map(([, level]) => level)).toContain('FULL');
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
