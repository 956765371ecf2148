/**
 * An enqueue on the PostgreSQL store, and the savepoint it runs in (issue 31, W1's pickup): what an
 * enqueue reads first (its key's versions, whether the key is taken, the id an insert would take) goes
 * in the round trip that takes the queue lock, with the paused tenants and the live count its admission
 * reads (the lock keeps them as read, and the store adds its own adjustments of the count); the insert
 * of a free key, its event and the savepoint's RELEASE then go with NOTIFY and COMMIT: an enqueue is
 * 2 round trips (it was 10, then 4). A failure in the batch that carried a deferred RELEASE runs the
 * transaction again with the RELEASE awaited, so the body still meets it inside its savepoint. The savepoint keeps its contract (store.ts StoreTx.savepoint: a throw
 * undoes what the body wrote and rethrows; the rest stays) whether or not the body reached the server,
 * on the server (LEASEHOLD_PG_URL) and on PGlite, which run the same statements.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { assertEventLogConsistent, ManualClock } from '../queue/__test-helpers__/test-kit.ts';
import type { WorkQueue } from '../queue/types.ts';
import { openWorkQueue } from '../work-queue.ts';
import { dropSchema, freshPgliteStore, freshSchemaName, PG_URL } from './__test-helpers__/pg-test-store.ts';
import { preparing, tracing } from './__test-helpers__/pg-tracing.ts';
import { PgStore } from './pg-store.ts';
import type { Step, Store, StoreTx } from './store.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

class Boom extends Error {}

function* rejected(tx: StoreTx): Step<string[]> {
  return (yield* tx.rejectionList()).map((row) => row.tenant);
}

const stores: [string, () => Store][] = [
  [
    'server',
    () => {
      const schema = freshSchemaName();
      const store = PgStore.open(PG_URL, { busyRetries: 0, schema }, () => 0);
      cleanups.push(() => dropSchema(schema));
      return store;
    },
  ],
  ['PGlite', () => freshPgliteStore({ busyRetries: 0 })],
];

describe('an enqueue on a PostgreSQL server', () => {
  /** A queue on a fresh schema of the server, with its clock. */
  function serverQueue(config: Parameters<typeof openWorkQueue>[0]['config'] = { globalLimit: 10, perTenantLimit: 10 }): { queue: WorkQueue; clock: ManualClock } {
    const { queues, clock } = producers(config, 1);
    return { queue: queues[0]!, clock };
  }

  /** `count` queues on one fresh schema of the server, as that many producers open it, with their one clock. */
  function producers(config: Parameters<typeof openWorkQueue>[0]['config'], count = 2): { queues: WorkQueue[]; clock: ManualClock } {
    const schema = freshSchemaName();
    cleanups.push(() => dropSchema(schema));
    const clock = new ManualClock();
    const open = () => {
      const queue = openWorkQueue({ db: PG_URL, schema, clock, config });
      cleanups.push(() => queue.close());
      return queue;
    };
    return { queues: Array.from({ length: count }, open), clock };
  }

  it('reads with the lock first: 2 round trips, then SAVEPOINT, insert, event, RELEASE with NOTIFY and COMMIT', async () => {
    const { queue } = serverQueue();
    // Warm: the pool has connected and the schema is migrated; nothing was enqueued, so there is nothing to guess from.
    expect(await queue.liveCount()).toBe(0);
    const { result, sent } = await tracing(() => queue.enqueue({ tenant: 'acme', topic: 't', version: 1, priority: 3, input: { text: 'hello' } }));
    expect(result).toEqual({ ok: true, taskId: 1, status: 'enqueued' });
    const trips = sent.filter((text) => !preparing(text));
    expect(trips).toHaveLength(2);
    expect(trips[0]).toMatch(
      /pg_advisory_xact_lock.*EXECUTE leasehold_taskLatestVersion_b\('acme', 't'\).*EXECUTE leasehold_taskOlderUnstarted_b\('acme', 't', '1'\).*EXECUTE leasehold_taskInsertSlot_b\('acme', 't', '1'\);\s*EXECUTE leasehold_tenantPauseList_b;\s*EXECUTE leasehold_counterLive_b$/s,
    );
    expect(trips[1]).toMatch(
      /^SAVEPOINT leasehold_step;\s*EXECUTE leasehold_taskInsertAs_one_b\('acme', 't', '1', .*'1'\);\s*EXECUTE leasehold_counterLiveAdjust_b\('1'\);\s*EXECUTE leasehold_eventInsert_b\('1', .*;\s*RELEASE SAVEPOINT leasehold_step;\s*EXECUTE leasehold_claimableNotify_b\('leasehold_claimable_\w+'\);\s*COMMIT;/s,
    );
    // A newer version read with the lock replaces the waiting one; an older one arrives superseded.
    expect(await queue.enqueue({ tenant: 'acme', topic: 't', version: 3, priority: 3, input: { v: 3 } })).toEqual({ ok: true, taskId: 2, status: 'replaced' });
    expect(await queue.enqueue({ tenant: 'acme', topic: 't', version: 2, priority: 3, input: { v: 2 } })).toEqual({ ok: true, taskId: 3, status: 'superseded' });
    expect(await queue.enqueue({ tenant: 'acme', topic: 't', version: 3, priority: 3, input: { v: 3 } })).toEqual({ ok: true, taskId: 2, status: 'duplicate' });
    expect((await queue.get(1))?.state).toBe('superseded');
    expect((await queue.get(2))?.state).toBe('ready');
    await assertEventLogConsistent(queue);
  });

  /** The one round trip of an enqueue that guessed its first reads: BEGIN with the lock, the guess's check, the writes, NOTIFY and COMMIT. */
  const guessedTrip = (topic: string, nextId: number, live: number) =>
    new RegExp(
      `^BEGIN;.*pg_advisory_xact_lock.*txid_current\\(\\) AS xid;\\s*EXECUTE leasehold_enqueueUnchanged_b\\('acme', '${topic}', '${nextId}', '${live}'\\);\\s*SAVEPOINT leasehold_step;\\s*EXECUTE leasehold_taskInsertAs_one_b\\('acme', '${topic}', .*RELEASE SAVEPOINT leasehold_step;\\s*EXECUTE leasehold_claimableNotify_b\\('leasehold_claimable_\\w+'\\);\\s*COMMIT;`,
      's',
    );

  it("guesses the next enqueue's first reads from the last one's: right, it is 1 round trip and writes what the reads would have made it write", async () => {
    const { queue } = serverQueue();
    expect(await queue.enqueue({ tenant: 'acme', topic: 'a', version: 1, priority: 3, input: {} })).toMatchObject({ ok: true, taskId: 1 });
    // Its work is done before the next enqueue (an idle fleet): the live count is back to what the first found.
    const claimed = await queue.claim('w1');
    if (!claimed.ok) throw new Error('expected a claim');
    expect(await queue.complete(claimed.task.id, 'w1', claimed.task.generation, { answer: 1 })).toMatchObject({ ok: true });
    const { result, sent } = await tracing(() => queue.enqueue({ tenant: 'acme', topic: 'b', version: 1, priority: 3, input: { text: 'hi' } }));
    expect(result).toEqual({ ok: true, taskId: 2, status: 'enqueued' });
    const trips = sent.filter((text) => !preparing(text));
    expect(trips).toHaveLength(1);
    expect(trips[0]).toMatch(guessedTrip('b', 2, 0));
    expect(await queue.get(2)).toMatchObject({ state: 'ready', topic: 'b' });
    expect(await queue.liveCount()).toBe(1);
    expect(await queue.claim('w1')).toMatchObject({ ok: true, task: { id: 2 } });
    await assertEventLogConsistent(queue);
  });

  it('a wrong guess writes nothing and the enqueue runs again reading: a growing backlog, then a topic that exists, then a pause', async () => {
    const { queue, clock } = serverQueue();
    expect(await queue.enqueue({ tenant: 'acme', topic: 'a', version: 1, priority: 3, input: {} })).toMatchObject({ ok: true, taskId: 1 });
    // Nothing ran meanwhile: the live count is one more than the first found, not what it found.
    const missed = await tracing(() => queue.enqueue({ tenant: 'acme', topic: 'b', version: 1, priority: 3, input: {} }));
    expect(missed.result).toEqual({ ok: true, taskId: 2, status: 'enqueued' });
    const trips = missed.sent.filter((text) => !preparing(text));
    expect(trips[0]).toMatch(guessedTrip('b', 2, 0));
    expect(trips.slice(1).map((text) => text.split(';')[0])).toEqual(['ROLLBACK', 'BEGIN', 'SAVEPOINT leasehold_step']);
    // The miss taught it the backlog grows; a guess waits 10 ms after a miss.
    clock.advance(10);
    const right = await tracing(() => queue.enqueue({ tenant: 'acme', topic: 'c', version: 1, priority: 3, input: {} }));
    expect(right.result).toEqual({ ok: true, taskId: 3, status: 'enqueued' });
    expect(right.sent.filter((text) => !preparing(text))).toEqual([expect.stringMatching(guessedTrip('c', 3, 2))]);
    // A topic that has a task: replaced, superseded and duplicate as the reads say, never a second insert of the key.
    clock.advance(20);
    expect(await queue.enqueue({ tenant: 'acme', topic: 'c', version: 2, priority: 3, input: {} })).toEqual({ ok: true, taskId: 4, status: 'replaced' });
    clock.advance(40);
    expect(await queue.enqueue({ tenant: 'acme', topic: 'c', version: 2, priority: 3, input: {} })).toEqual({ ok: true, taskId: 4, status: 'duplicate' });
    // A paused tenant: the task waits and wakes nobody.
    await queue.pauseTenant('acme', 'maintenance');
    clock.advance(80);
    const paused = await tracing(() => queue.enqueue({ tenant: 'acme', topic: 'd', version: 1, priority: 3, input: {} }));
    expect(paused.result).toEqual({ ok: true, taskId: 5, status: 'enqueued' });
    // Its guess (no paused tenant) failed under the lock; the transaction that committed sends no notice.
    expect(paused.sent.filter((text) => !preparing(text)).map((text) => text.split(';')[0])).toEqual(['BEGIN', 'ROLLBACK', 'BEGIN', 'SAVEPOINT leasehold_step']);
    expect(paused.sent.at(-1)).not.toMatch(/NOTIFY|pg_notify|claimableNotify/);
    expect(await queue.claim('w1')).toMatchObject({ ok: false });
    expect((await queue.get(3))?.state).toBe('superseded');
    expect(await queue.liveCount()).toBe(4);
    await assertEventLogConsistent(queue);
  });

  it('a guess another producer made wrong meanwhile: the enqueue decides on what is there (the queue is full now)', async () => {
    const [mine, theirs] = producers({ capacity: 2, globalLimit: 2, perTenantLimit: 2 }).queues as [WorkQueue, WorkQueue];
    expect(await mine.enqueue({ tenant: 'acme', topic: 'a', version: 1, priority: 0, input: {} })).toMatchObject({ ok: true, taskId: 1 });
    const claimed = await mine.claim('w1');
    if (!claimed.ok) throw new Error('expected a claim');
    await mine.complete(claimed.task.id, 'w1', claimed.task.generation, { answer: 1 });
    expect(await theirs.enqueue({ tenant: 'acme', topic: 'b', version: 1, priority: 0, input: {} })).toMatchObject({ ok: true, taskId: 2 });
    expect(await theirs.enqueue({ tenant: 'acme', topic: 'c', version: 1, priority: 0, input: {} })).toMatchObject({ ok: true, taskId: 3 });
    // Mine guesses id 2 and a live count of 0; there are 2 live tasks and the capacity is 2.
    const { result, sent } = await tracing(() => mine.enqueue({ tenant: 'acme', topic: 'd', version: 1, priority: 0, input: {} }));
    expect(sent.find((text) => !preparing(text))).toMatch(guessedTrip('d', 2, 0));
    expect(result).toMatchObject({ ok: false, error: 'queue_full' });
    expect(await mine.get(4)).toBeUndefined();
    expect((await mine.rejections()).map((row) => [row.topic, row.reason])).toEqual([['d', 'queue_full']]);
    await assertEventLogConsistent(mine);
  });

  it('a guess whose id another producer took meanwhile, its work done too: the live count matches, the id does not, and the insert takes the next', async () => {
    const runAll = async (queue: WorkQueue) => {
      for (let run = await queue.claim('w'); run.ok; run = await queue.claim('w')) await queue.complete(run.task.id, 'w', run.task.generation, { answer: run.task.id });
    };
    const [mine, theirs] = producers({ globalLimit: 2, perTenantLimit: 2 }).queues as [WorkQueue, WorkQueue];
    expect(await mine.enqueue({ tenant: 'acme', topic: 'a', version: 1, priority: 0, input: {} })).toMatchObject({ ok: true, taskId: 1 });
    await runAll(mine);
    expect(await theirs.enqueue({ tenant: 'acme', topic: 'b', version: 1, priority: 0, input: {} })).toMatchObject({ ok: true, taskId: 2 });
    await runAll(theirs);
    const { result, sent } = await tracing(() => mine.enqueue({ tenant: 'acme', topic: 'c', version: 1, priority: 0, input: {} }));
    expect(sent.find((text) => !preparing(text))).toMatch(guessedTrip('c', 2, 0));
    expect(result).toEqual({ ok: true, taskId: 3, status: 'enqueued' });
    expect((await mine.get(2))?.topic).toBe('b');
    expect(await mine.liveCount()).toBe(1);
    await assertEventLogConsistent(mine);
  });

  it('refuses a new topic at capacity with its insert undone and the rejection kept, in one transaction', async () => {
    const schema = freshSchemaName();
    cleanups.push(() => dropSchema(schema));
    const queue = openWorkQueue({ db: PG_URL, schema, clock: new ManualClock(), config: { capacity: 1, globalLimit: 1, perTenantLimit: 1 } });
    cleanups.push(() => queue.close());
    expect(await queue.enqueue({ tenant: 'acme', topic: 'a', version: 1, priority: 0, input: {} })).toMatchObject({ ok: true, taskId: 1 });
    expect(await queue.enqueue({ tenant: 'acme', topic: 'b', version: 1, priority: 0, input: {} })).toMatchObject({ ok: false, error: 'queue_full' });
    expect(await queue.get(2)).toBeUndefined();
    expect((await queue.rejections()).map((row) => [row.topic, row.reason])).toEqual([['b', 'queue_full']]);
    expect(await queue.enqueue({ tenant: 'acme', topic: 'a', version: 2, priority: 0, input: {} })).toMatchObject({ ok: true, taskId: 2, status: 'replaced' });
    await assertEventLogConsistent(queue);
  });
});

describe.each(stores)('the PostgreSQL store’s savepoint (%s)', (_name, open) => {
  function openStore(): Store {
    const store = open();
    cleanups.push(() => store.close());
    return store;
  }

  it('keeps a write made before the savepoint when the body, having reached the server, throws', async () => {
    const store = openStore();
    const error = await store
      .write('sp', () => 1, function* (tx, at) {
        yield* tx.rejectionInsert('before', 't', 1, 'r', at);
        yield* tx.txSavepoint(function* () {
          yield* tx.rejectionInsert('inside', 't', 1, 'r', at);
          // The read sends the pending writes, the SAVEPOINT between them: both are on the server now.
          expect(yield* rejected(tx)).toEqual(['before', 'inside']);
          throw new Boom('undo');
        });
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Boom);
    // The transaction failed as a whole (the body's throw was not caught): nothing at all committed.
    expect(await store.read('r', rejected)).toEqual([]);
    await store.write('sp', () => 1, function* (tx, at) {
      yield* tx.rejectionInsert('before', 't', 1, 'r', at);
      try {
        yield* tx.txSavepoint(function* () {
          yield* tx.rejectionInsert('inside', 't', 1, 'r', at);
          expect(yield* rejected(tx)).toEqual(['before', 'inside']);
          throw new Boom('undo');
        });
      } catch (caught) {
        if (!(caught instanceof Boom)) throw caught;
      }
      yield* tx.rejectionInsert('after', 't', 1, 'r', at);
    });
    expect(await store.read('r', rejected)).toEqual(['before', 'after']);
  });

  it('keeps a write made before the savepoint when the body throws having sent nothing', async () => {
    const store = openStore();
    await store.write('sp', () => 1, function* (tx, at) {
      yield* tx.rejectionInsert('before', 't', 1, 'r', at);
      try {
        yield* tx.txSavepoint(function* () {
          yield* tx.rejectionInsert('inside', 't', 1, 'r', at);
          throw new Boom('undo before anything was sent');
        });
      } catch (caught) {
        if (!(caught instanceof Boom)) throw caught;
      }
    });
    expect(await store.read('r', rejected)).toEqual(['before']);
  });

  it('sends what the body left pending inside the savepoint, and a body that wrote nothing costs nothing', async () => {
    const store = openStore();
    const result = await store.write('sp', () => 1, function* (tx, at) {
      const nothing = yield* tx.txSavepoint(function* () {
        return 'read nothing, wrote nothing';
      });
      const wrote = yield* tx.txSavepoint(function* () {
        yield* tx.rejectionInsert('inside', 't', 1, 'r', at);
        return 'left pending';
      });
      // After the savepoint is released the transaction goes on.
      yield* tx.rejectionInsert('after', 't', 2, 'r', at);
      return [nothing, wrote, yield* rejected(tx)];
    });
    expect(result).toEqual(['read nothing, wrote nothing', 'left pending', ['inside', 'after']]);
    expect(await store.read('r', rejected)).toEqual(['inside', 'after']);
  });

  it('releases a savepoint whose body reached the server and left nothing pending', async () => {
    const store = openStore();
    const seen = await store.write('sp', () => 1, function* (tx, at) {
      const inside = yield* tx.txSavepoint(function* () {
        yield* tx.rejectionInsert('inside', 't', 1, 'r', at);
        // The read sends the SAVEPOINT and the insert: nothing is left pending when the body returns.
        return yield* rejected(tx);
      });
      yield* tx.rejectionInsert('after', 't', 2, 'r', at);
      return [inside, yield* rejected(tx)];
    });
    expect(seen).toEqual([['inside'], ['inside', 'after']]);
    expect(await store.read('r', rejected)).toEqual(['inside', 'after']);
  });

  it('undoes the body when one of its pending writes fails on the server, and the caller may go on', async () => {
    const store = openStore();
    let runs = 0;
    const outcome = await store.write('sp', () => 1, function* (tx, at) {
      runs += 1;
      yield* tx.rejectionInsert('before', 't', 1, 'r', at);
      let failed: unknown;
      try {
        yield* tx.txSavepoint(function* () {
          yield* tx.rejectionInsert('inside', 't', 1, 'r', at);
          // A second event with the same (task, seq): the server refuses it when the savepoint sends it.
          yield* tx.eventAppend(999_999, 1, 'enqueued', at, '{}', null, null);
          yield* tx.eventAppend(999_999, 1, 'enqueued', at, '{}', null, null);
        });
      } catch (caught) {
        failed = caught;
      }
      yield* tx.rejectionInsert('after', 't', 1, 'r', at);
      return failed;
    });
    expect(outcome).toMatchObject({ code: '23505' });
    // The first run left the RELEASE for COMMIT's batch, which failed: the second awaited it in the savepoint.
    expect(runs).toBe(2);
    expect(await store.read('r', rejected)).toEqual(['before', 'after']);
    expect(await store.read('e', (tx) => tx.eventListForTask(999_999))).toEqual([]);
  });
});

describe.each(stores)('an enqueue’s admission reads on the PostgreSQL store (%s)', (_name, open) => {
  it('counts the live tasks as the server does after its own inserts and moves, and sees the pauses of its own transaction', async () => {
    const store = open();
    cleanups.push(() => store.close());
    const seen = await store.write('enqueue', () => 1, Object.assign(
      function* (tx: StoreTx, at: number) {
        const before = yield* tx.counterLive();
        yield* tx.counterLiveAdjust(2);
        yield* tx.counterLiveAdjust(-1);
        const counted = yield* tx.counterLive();
        const pausedBefore = (yield* tx.tenantPauseList()).map((row) => row.tenant);
        yield* tx.tenantPause('acme', 'maintenance', at);
        const pausedAfter = (yield* tx.tenantPauseList()).map((row) => row.tenant);
        // After a pause the count is read from the server again, and it agrees.
        const server = yield* tx.counterLive();
        return { before, counted, pausedBefore, pausedAfter, server };
      },
      { readsFirst: { enqueue: { tenant: 'acme', topic: 't', version: 1 } } },
    ));
    expect(seen).toEqual({ before: 0, counted: 1, pausedBefore: [], pausedAfter: ['acme'], server: 1 });
  });

  it('reads the live count from the server again after a savepoint is rolled back to', async () => {
    const store = open();
    cleanups.push(() => store.close());
    const seen = await store.write('enqueue', () => 1, Object.assign(
      function* (tx: StoreTx) {
        try {
          yield* tx.txSavepoint(function* () {
            yield* tx.counterLiveAdjust(5);
            expect(yield* tx.counterLive()).toBe(5);
            // A read sends the SAVEPOINT and the adjustment: the rollback is the server's.
            yield* rejected(tx);
            throw new Boom('undo');
          });
        } catch (caught) {
          if (!(caught instanceof Boom)) throw caught;
        }
        return yield* tx.counterLive();
      },
      { readsFirst: { enqueue: { tenant: 'acme', topic: 't', version: 1 } } },
    ));
    expect(seen).toBe(0);
  });
});
