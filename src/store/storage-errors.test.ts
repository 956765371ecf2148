import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { StorageFaults } from '../../sim/store/storage-faults.ts';
import { LeaseholdError, RetryableStoreError, StorageError } from '../queue/errors.ts';
import { ManualClock, T0, fingerprint, request } from '../queue/__test-helpers__/test-kit.ts';
import type { WorkQueue } from '../queue/types.ts';
import { openWorkQueue } from '../work-queue.ts';
import { SqliteStore, storageCodeOf } from './sqlite-store.ts';
import { thrownBy } from './__test-helpers__/thrown.ts';

/** Makes the database unable to grow, for real: a statement that needs one more page meets SQLITE_FULL. */
function fillDisk(db: Database.Database): number {
  const room = db.pragma('max_page_count', { simple: true }) as number;
  db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
  return room;
}

async function rejectionOf(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to reject');
}

const BIG = 'x'.repeat(64 * 1024);

describe('storage failures surface as a typed StorageError, the transaction rolled back (issue 15)', () => {
  it('maps SQLITE_FULL to disk_full and every SQLITE_IOERR code to io_error, and nothing else', () => {
    expect(storageCodeOf({ code: 'SQLITE_FULL' })).toBe('disk_full');
    expect(storageCodeOf({ code: 'SQLITE_IOERR' })).toBe('io_error');
    expect(storageCodeOf({ code: 'SQLITE_IOERR_WRITE' })).toBe('io_error');
    expect(storageCodeOf({ code: 'SQLITE_IOERR_FSYNC' })).toBe('io_error');
    expect(storageCodeOf({ code: 'SQLITE_IOERRX' })).toBeUndefined();
    expect(storageCodeOf({ code: 'SQLITE_BUSY' })).toBeUndefined();
    expect(storageCodeOf({ code: 'SQLITE_CONSTRAINT' })).toBeUndefined();
    expect(storageCodeOf(null)).toBeUndefined();
    expect(storageCodeOf('SQLITE_FULL')).toBeUndefined();
  });

  it('disk full, for real (max_page_count): a multi-statement transaction failing at its last statement leaves none of its rows', () => {
    const db = new Database(':memory:');
    const store = SqliteStore.open(db, { busyTimeoutMs: 0, busyRetries: 3 }, () => T0);
    db.exec('CREATE TABLE scratch (id INTEGER PRIMARY KEY, body TEXT)');
    db.prepare('INSERT INTO scratch (body) VALUES (?)').run('kept');
    const room = fillDisk(db);
    const seen: number[] = [];
    const error = thrownBy(() =>
      store.writeNow('scratch write', () => T0, function* () {
        // The first two statements fit in the table's page, and really ran inside the transaction...
        db.prepare('INSERT INTO scratch (body) VALUES (?)').run('small');
        db.prepare("UPDATE scratch SET body = 'changed' WHERE body = 'kept'").run();
        seen.push((db.prepare('SELECT COUNT(*) AS n FROM scratch').get() as { n: number }).n);
        // ...the last needs new pages, and the disk has none.
        db.prepare('INSERT INTO scratch (body) VALUES (?)').run(BIG);
        return 1;
      }),
    );
    expect(seen).toEqual([2]);
    expect(error).toBeInstanceOf(StorageError);
    expect(error).toBeInstanceOf(RetryableStoreError);
    expect(error).toBeInstanceOf(LeaseholdError);
    expect(error).toMatchObject({ code: 'disk_full', sqliteCode: 'SQLITE_FULL', operation: 'scratch write', name: 'StorageError' });
    expect((error as Error).message).toMatch(/^disk full: scratch write was rolled back \(SQLITE_FULL: /);
    expect(db.inTransaction).toBe(false);
    expect(db.prepare('SELECT body FROM scratch ORDER BY id').all()).toEqual([{ body: 'kept' }]);
    // Not retried by the store (the same write would meet the same full disk): once there is room, the caller's retry goes through.
    db.pragma(`max_page_count = ${room}`);
    store.writeNow('scratch write', () => T0, function* () {
      db.prepare('INSERT INTO scratch (body) VALUES (?)').run(BIG);
      return 1;
    });
    expect(db.prepare('SELECT COUNT(*) AS n FROM scratch').get()).toEqual({ n: 2 });
    db.close();
  });

  it('disk full through the queue: an enqueue and a checkpoint that need a page fail disk_full and change nothing; with room they succeed', async () => {
    const db = new Database(':memory:');
    const queue = openWorkQueue({ db, clock: new ManualClock() });
    const first = await queue.enqueue(request({ tenant: 'a' }));
    expect(first.ok).toBe(true);
    const claimed = await queue.claim('w1');
    if (!claimed.ok) throw new Error('expected a claim');
    const room = fillDisk(db);
    const before = await fingerprint(queue);
    const enqueueError = await rejectionOf(() => queue.enqueue(request({ tenant: 'a', topic: 'big', input: { blob: BIG } })));
    expect(enqueueError).toMatchObject({ code: 'disk_full', operation: 'enqueue' });
    const checkpointError = await rejectionOf(() =>
      queue.checkpoint(claimed.task.id, 'w1', 1, { kind: 'A', step: 0, state: { blob: BIG }, usage: { inputTokens: 1, outputTokens: 1, modelCalls: 1 }, requeueSafe: true }),
    );
    expect(checkpointError).toBeInstanceOf(StorageError);
    expect((checkpointError as StorageError).code).toBe('disk_full');
    expect(await fingerprint(queue)).toEqual(before);
    db.pragma(`max_page_count = ${room}`);
    expect((await queue.enqueue(request({ tenant: 'a', topic: 'big', input: { blob: BIG } }))).ok).toBe(true);
    expect(await queue.checkpoint(claimed.task.id, 'w1', 1, { kind: 'A', step: 0, state: { blob: BIG }, usage: { inputTokens: 1, outputTokens: 1, modelCalls: 1 }, requeueSafe: true })).toMatchObject({ ok: true });
    await queue.close();
    db.close();
  });

  /**
   * An I/O error cannot be caused for real from here: better-sqlite3 offers no VFS hook, and a failing
   * disk needs root. sim/store/storage-faults.ts injects it beneath the statements instead: the k-th
   * write statement the store runs throws SQLITE_IOERR_WRITE in place of running, inside its transaction,
   * so the store's own rollback and typed error are what is tested. Every statement of a completion is
   * failed in turn, the last included, and each time nothing of it remains.
   */
  it('an I/O error at any write statement of a completion, the last included, leaves nothing of it; the retry then completes', async () => {
    let statements = 0;
    for (let skip = 0; skip < 50; skip++) {
      const { queue, faults, taskId } = await runningTask();
      const before = await fingerprint(queue);
      const fired: string[] = [];
      faults.armIoError(skip, (sql) => fired.push(sql));
      let error: unknown;
      try {
        await queue.complete(taskId, 'w1', 1, { answer: 42 });
      } catch (thrown) {
        error = thrown;
      }
      if (fired.length === 0) {
        // skip passed every write statement of the completion: it went through, and skip-1 was its last.
        expect(error).toBeUndefined();
        statements = skip;
        await queue.close();
        break;
      }
      expect(error).toBeInstanceOf(StorageError);
      expect(error).toMatchObject({ code: 'io_error', sqliteCode: 'SQLITE_IOERR_WRITE', operation: 'complete' });
      expect(await fingerprint(queue)).toEqual(before);
      expect(await queue.complete(taskId, 'w1', 1, { answer: 42 })).toEqual({ ok: true, outcome: 'done' });
      await queue.close();
    }
    // A completion writes the task, its event and more: several statements, each failed once above.
    expect(statements).toBeGreaterThanOrEqual(2);
  });

  it('a full disk on which SQLite rolled the whole transaction back inside a savepoint surfaces as disk_full, not "no such savepoint"', () => {
    // SQLite may end the transaction itself on SQLITE_FULL or SQLITE_IOERR (the simulator's storage-faults
    // scenario met it inside enqueue's savepoint, seed 1): here the body does what SQLite did, then throws.
    const db = new Database(':memory:');
    const store = SqliteStore.open(db, { busyTimeoutMs: 0, busyRetries: 0 }, () => T0);
    db.exec('CREATE TABLE scratch (id INTEGER PRIMARY KEY, body TEXT)');
    const error = thrownBy(() =>
      store.writeNow('enqueue', () => T0, function* (tx) {
        db.prepare("INSERT INTO scratch (body) VALUES ('before')").run();
        return yield* tx.txSavepoint(function* () {
          db.prepare("INSERT INTO scratch (body) VALUES ('inside')").run();
          db.exec('ROLLBACK');
          throw new Database.SqliteError('database or disk is full', 'SQLITE_FULL');
        });
      }),
    );
    expect(error).toMatchObject({ name: 'StorageError', code: 'disk_full', operation: 'enqueue' });
    expect(db.inTransaction).toBe(false);
    expect(db.prepare('SELECT COUNT(*) AS n FROM scratch').get()).toEqual({ n: 0 });
    db.close();
  });

  it('an I/O error on a read surfaces typed too', async () => {
    const db = new Database(':memory:');
    const store = SqliteStore.open(db, { busyTimeoutMs: 0, busyRetries: 0 }, () => T0);
    const error = thrownBy(() =>
      store.readNow('peek', function* () {
        throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_READ' });
      }),
    );
    expect(error).toMatchObject({ code: 'io_error', sqliteCode: 'SQLITE_IOERR_READ', operation: 'peek' });
    db.close();
  });
});

async function runningTask(): Promise<{ queue: WorkQueue; faults: StorageFaults; taskId: number }> {
  const faults = new StorageFaults();
  const db = faults.attach(new Database(':memory:'));
  const queue = openWorkQueue({ db, clock: new ManualClock() });
  const enqueued = await queue.enqueue(request({ tenant: 'a' }));
  if (!enqueued.ok) throw new Error('expected an enqueue');
  const claimed = await queue.claim('w1');
  if (!claimed.ok) throw new Error('expected a claim');
  await queue.checkpoint(claimed.task.id, 'w1', 1, { kind: 'A', step: 0, state: { s: 1 }, usage: { inputTokens: 1, outputTokens: 1, modelCalls: 1 }, requeueSafe: true });
  return { queue, faults, taskId: claimed.task.id };
}
