import Database from 'better-sqlite3';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OpenError } from '../queue/errors.ts';
import { ManualClock } from '../queue/__test-helpers__/test-kit.ts';
import { openWorkQueue } from '../work-queue.ts';
import { LATEST_SCHEMA_VERSION } from './migrations.ts';
import { SqliteStore } from './sqlite-store.ts';
import { runToEnd, type Step } from './store.ts';
import { YieldingSqliteStore } from './__test-helpers__/yielding-store.ts';

describe('the store interface', () => {
  it('runs a synchronous body in one go, and refuses a body that yields on a synchronous store', () => {
    function* quiet(): Step<number> {
      return 7;
    }
    function* yields(): Step<number> {
      yield Promise.resolve(1);
      return 7;
    }
    expect(runToEnd(quiet())).toBe(7);
    expect(() => runToEnd(yields())).toThrow(/a synchronous store met a statement that yields/);
  });

  it('runs the same decisions on an asynchronous driver: each statement is an await point, the answers equal', async () => {
    const sync = openWorkQueue({ db: ':memory:', clock: new ManualClock() });
    const store = YieldingSqliteStore.open(':memory:');
    // Count the statements the driver awaits, by wrapping each body it drives.
    let awaited = 0;
    const internals = store as unknown as { drive: (operation: string, body: Step<unknown>, writing: boolean) => Promise<unknown> };
    const drive = internals.drive.bind(store);
    internals.drive = (operation, body, writing) => {
      const next = body.next.bind(body);
      body.next = (value?: unknown) => {
        const step = next(value);
        if (step.done !== true) awaited++;
        return step;
      };
      return drive(operation, body, writing);
    };
    const asynchronous = openWorkQueue({ db: store, clock: new ManualClock() });
    const script = async (queue: typeof sync) => {
      const answers: unknown[] = [];
      answers.push(await queue.enqueue({ tenant: 'a', topic: 't1', version: 1, priority: 5, input: { n: 1 } }));
      answers.push(await queue.enqueue({ tenant: 'b', topic: 't2', version: 1, priority: 9, input: { n: 2 } }));
      const claimed = await queue.claim('w1');
      answers.push(claimed);
      if (claimed.ok) answers.push(await queue.complete(claimed.task.id, 'w1', claimed.task.generation, { done: true }));
      answers.push(await queue.snapshot(), await queue.allEvents());
      return answers;
    };
    expect(await script(asynchronous)).toEqual(await script(sync));
    expect(awaited).toBeGreaterThan(20);
    await sync.close();
    await asynchronous.close();
  });

  it('takes one transaction at a time on a connection: concurrent claims never interleave or double-claim', async () => {
    const clock = new ManualClock();
    const queue = openWorkQueue({ db: YieldingSqliteStore.open(':memory:'), clock, config: { globalLimit: 10, perTenantLimit: 10 } });
    for (let i = 0; i < 6; i++) await queue.enqueue({ tenant: 'a', topic: `t${i}`, version: 1, priority: i, input: {} });
    const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => queue.claim(`w${i}`)));
    const ids = claims.flatMap((claim) => (claim.ok ? [claim.task.id] : []));
    expect(ids).toHaveLength(6);
    expect(new Set(ids).size).toBe(6);
    expect(claims.filter((claim) => !claim.ok)).toEqual([
      { ok: false, reason: 'empty' },
      { ok: false, reason: 'empty' },
    ]);
    await queue.close();
  });

  it('keeps the SQLite store synchronous under its promise: the transaction has committed when the call returns', () => {
    const store = SqliteStore.open(':memory:', { busyTimeoutMs: 10, busyRetries: 0 }, () => 1);
    const queue = openWorkQueue({ db: store, clock: new ManualClock() });
    const pending = queue.enqueue({ tenant: 'a', topic: 't', version: 1, priority: 0, input: {} });
    expect(store.readNow('probe', (tx) => tx.counterLive())).toBe(1);
    return pending.then(() => queue.close());
  });
});

describe('the SQLite store knows its committed event cursor without a query', () => {
  it('equals MAX(events.id) on open, after every commit, after a rolled-back transaction and after a savepoint rolled back to', () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-cursor-'));
    try {
      const path = join(dir, 'queue.sqlite');
      const clock = new ManualClock();
      const store = SqliteStore.open(path, { busyTimeoutMs: 0, busyRetries: 0 }, () => clock.t);
      const maxId = () => store.readNow('eventCursor', (tx) => tx.eventCursor());
      expect(store.committedEventCursor()).toBe(0);
      const event = (taskId: number) =>
        function* (tx: import('./store.ts').StoreTx, at: number): Step<void> {
          yield* tx.eventAppend(taskId, 1, 'planted', at, '{}', null, null);
        };
      store.writeNow('one', () => clock.t, event(1));
      store.writeNow('two', () => clock.t, event(2));
      expect(store.committedEventCursor()).toBe(2);
      expect(maxId()).toBe(2);
      // A transaction that fails after its insert: rolled back, the cursor stays.
      expect(() =>
        store.writeNow('failed', () => clock.t, function* (tx, at) {
          yield* tx.eventAppend(3, 1, 'planted', at, '{}', null, null);
          throw new Error('planted');
        }),
      ).toThrow('planted');
      expect([store.committedEventCursor(), maxId()]).toEqual([2, 2]);
      /** An event inserted inside a savepoint that is then rolled back to. */
      function* rolledBack(tx: import('./store.ts').StoreTx, taskId: number, at: number): Step<void> {
        try {
          yield* tx.txSavepoint(function* () {
            yield* tx.eventAppend(taskId, 1, 'planted', at, '{}', null, null);
            throw new Error('planted');
          });
        } catch {
          // rolled back to the savepoint
        }
      }
      // An insert inside a savepoint rolled back to is forgotten; one after it counts.
      store.writeNow('savepoint', () => clock.t, (tx, at) => rolledBack(tx, 4, at));
      expect([store.committedEventCursor(), maxId()]).toEqual([2, 2]);
      store.writeNow('after', () => clock.t, function* (tx, at) {
        yield* rolledBack(tx, 5, at);
        yield* tx.eventAppend(6, 1, 'planted', at, '{}', null, null);
      });
      expect([store.committedEventCursor(), maxId()]).toEqual([3, 3]);
      void store.close();
      // Reopened, it reads the cursor from the file.
      const again = SqliteStore.open(path, { busyTimeoutMs: 0, busyRetries: 0 }, () => clock.t);
      expect(again.committedEventCursor()).toBe(3);
      void again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('opening a database that cannot be a queue: a typed error naming the path, and nothing written', () => {
  const scratch = () => mkdtempSync(join(tmpdir(), 'leasehold-open-'));
  /** What opening a queue on `path` threw (undefined if it opened, which these tests then refuse). */
  const openingFails = (path: string): unknown => {
    try {
      openWorkQueue({ db: path, clock: new ManualClock() });
    } catch (error) {
      return error;
    }
    return undefined;
  };

  it('refuses a file that is not a database, and leaves it byte for byte as it was', () => {
    const directory = scratch();
    const path = join(directory, 'notes.txt');
    writeFileSync(path, 'these are notes, not a database\n'.repeat(40));
    const before = readFileSync(path);
    const thrown = openingFails(path);
    expect(thrown).toBeInstanceOf(OpenError);
    expect(thrown).toMatchObject({ code: 'open_failed', reason: 'not_a_database', path });
    expect((thrown as Error).message).toContain(path);
    expect(readFileSync(path)).toEqual(before);
    expect(readdirSync(directory)).toEqual(['notes.txt']);
    rmSync(directory, { recursive: true, force: true });
  });

  it('refuses a path whose folder is missing, and creates no folder', () => {
    const directory = scratch();
    const path = join(directory, 'no-such-folder', 'queue.sqlite');
    expect(() => openWorkQueue({ db: path, clock: new ManualClock() })).toThrow(OpenError);
    expect(() => openWorkQueue({ db: path, clock: new ManualClock() })).toThrow(expect.objectContaining({ reason: 'missing_folder', path }));
    expect(existsSync(join(directory, 'no-such-folder'))).toBe(false);
    rmSync(directory, { recursive: true, force: true });
  });

  it('refuses a database written by a newer schema, and changes nothing in it', async () => {
    const directory = scratch();
    const path = join(directory, 'queue.sqlite');
    const first = openWorkQueue({ db: path, clock: new ManualClock() });
    await first.enqueue({ tenant: 'a', topic: 't', version: 1, priority: 0, input: {} });
    await first.close();
    const raw = new Database(path);
    raw.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(LATEST_SCHEMA_VERSION + 1, 'from the future', 1);
    const dump = () => ({ migrations: raw.prepare('SELECT * FROM schema_migrations ORDER BY version').all(), tasks: raw.prepare('SELECT * FROM tasks').all() });
    const before = dump();
    const thrown = openingFails(path);
    expect(thrown).toBeInstanceOf(OpenError);
    expect(thrown).toMatchObject({ reason: 'newer_schema', path });
    expect((thrown as Error).message).toMatch(new RegExp(`schema is version ${LATEST_SCHEMA_VERSION + 1}; this Leasehold knows versions up to ${LATEST_SCHEMA_VERSION}`));
    expect(dump()).toEqual(before);
    raw.close();
    rmSync(directory, { recursive: true, force: true });
  });
});
