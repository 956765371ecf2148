/**
 * The store contract, the control-plane signals (A5): table `signal_counters` (signalBump,
 * signalList) and the bounded reads of `tasks` that signals are made of (taskHoldingSince, taskReadyDepth,
 * taskOldestReady, taskOldestEligibleReady, taskListRecent), each against every store kind (__test-helpers__/harness.ts).
 */
import { describe, expect, it } from 'vitest';
import { AT, STORE_KINDS, claim, contractStore, failedTask, makeUncertain, readyTask, sortedBy } from './__test-helpers__/harness.ts';

describe.each(STORE_KINDS)('signals on %s', (kind) => {
  const db = contractStore(kind);

  describe('signalBump', () => {
    it('creates a counter at the delta and adds to it after (negative deltas too)', async () => {
      const counters = await db.scratch(function* (tx) {
        yield* tx.signalBump('retry:rate_limited', 1);
        yield* tx.signalBump('retry:rate_limited', 4);
        yield* tx.signalBump('x', -2);
        return yield* tx.signalList();
      });
      expect(counters).toEqual([
        { name: 'retry:rate_limited', value: 5 },
        { name: 'x', value: -2 },
      ]);
    });
  });

  describe('signalList', () => {
    it('is [] on a fresh database, and the counters by name (bytewise)', async () => {
      const [empty, names] = await db.scratch(function* (tx) {
        const empty = yield* tx.signalList();
        for (const name of ['b', 'a:z', 'B', 'a:a']) yield* tx.signalBump(name, 1);
        return [empty, (yield* tx.signalList()).map((row) => row.name)] as const;
      });
      expect(empty).toEqual([]);
      expect(names).toEqual(['B', 'a:a', 'a:z', 'b']);
    });
  });

  describe('taskHoldingSince', () => {
    it('lists running and uncertain tasks with their last claim and lease', async () => {
      const rows = await db.scratch(function* (tx) {
        const a = yield* readyTask(tx, { tenant: 'a' });
        const b = yield* readyTask(tx, { tenant: 'b' });
        yield* readyTask(tx);
        yield* claim(tx, a, { workerId: 'w1', now: AT + 1, leaseUntil: AT + 100 });
        yield* claim(tx, b, { workerId: 'w2', now: AT + 2, leaseUntil: AT + 200 });
        yield* makeUncertain(tx, b);
        yield* failedTask(tx);
        return yield* tx.taskHoldingSince();
      });
      // The order is not part of the interface (SQLite's index walk; PostgreSQL orders by the holding index's columns).
      expect(sortedBy(rows, (row) => row.id)).toEqual([
        { id: 1, tenant: 'a', state: 'running', worker_id: 'w1', generation: 1, claimed_at: AT + 1, lease_until: AT + 100 },
        { id: 2, tenant: 'b', state: 'uncertain', worker_id: 'w2', generation: 1, claimed_at: AT + 2, lease_until: AT + 200 },
      ]);
    });
  });

  describe('taskReadyDepth', () => {
    it('counts ready tasks per (tenant, priority), by tenant then priority descending', async () => {
      const [empty, rows] = await db.scratch(function* (tx) {
        const empty = yield* tx.taskReadyDepth();
        for (const [tenant, priority] of [['b', 1], ['a', 2], ['a', 9], ['a', 2], ['b', 1]] as const) yield* readyTask(tx, { tenant, priority });
        const running = yield* readyTask(tx, { tenant: 'a', priority: 9 });
        yield* claim(tx, running);
        return [empty, yield* tx.taskReadyDepth()] as const;
      });
      expect(empty).toEqual([]);
      expect(rows).toEqual([
        { tenant: 'a', priority: 9, n: 1 },
        { tenant: 'a', priority: 2, n: 2 },
        { tenant: 'b', priority: 1, n: 2 },
      ]);
    });
  });

  describe('taskOldestReady', () => {
    it('gives each tenant with ready work its oldest ready task by (enqueued_at, id), whatever its priority', async () => {
      const rows = await db.scratch(function* (tx) {
        yield* readyTask(tx, { tenant: 'b', priority: 9, now: AT + 5 }); // 1
        yield* readyTask(tx, { tenant: 'b', priority: 0, now: AT + 3 }); // 2
        yield* readyTask(tx, { tenant: 'a', priority: 0, now: AT + 7 }); // 3
        yield* readyTask(tx, { tenant: 'a', priority: 4, now: AT + 7 }); // 4
        const running = yield* readyTask(tx, { tenant: 'a', now: AT }); // 5
        yield* claim(tx, running);
        return yield* tx.taskOldestReady();
      });
      expect(rows).toEqual([
        { tenant: 'a', id: 3, enqueued_at: AT + 7 },
        { tenant: 'b', id: 2, enqueued_at: AT + 3 },
      ]);
    });
  });

  describe('taskOldestEligibleReady', () => {
    it("is the tenant's oldest ready task past its backoff and before its deadline at `now`; undefined when none", async () => {
      const answer = await db.scratch(function* (tx) {
        yield* readyTask(tx, { now: AT + 1, deadline: AT + 5 }); // 1: past its deadline at AT + 10
        yield* readyTask(tx, { now: AT + 20 }); // 2: not eligible before AT + 20
        yield* readyTask(tx, { now: AT + 3, deadline: AT + 11 }); // 3
        yield* readyTask(tx, { now: AT + 4 }); // 4
        yield* readyTask(tx, { tenant: 'other', now: AT }); // 5
        return {
          at10: yield* tx.taskOldestEligibleReady('acme', AT + 10),
          at11: yield* tx.taskOldestEligibleReady('acme', AT + 11),
          at0: yield* tx.taskOldestEligibleReady('acme', AT),
          none: yield* tx.taskOldestEligibleReady('nobody', AT + 10),
        };
      });
      expect(answer).toEqual({ at10: { id: 3, enqueued_at: AT + 3 }, at11: { id: 4, enqueued_at: AT + 4 }, at0: undefined, none: undefined });
    });
  });

  describe('taskListRecent', () => {
    it('lists the last `limit` tasks by (enqueued_at, id) descending, with their claim and end times', async () => {
      const rows = await db.scratch(function* (tx) {
        yield* readyTask(tx, { now: AT + 2 }); // 1
        yield* readyTask(tx, { now: AT + 9 }); // 2
        yield* readyTask(tx, { now: AT + 2 }); // 3
        yield* failedTask(tx, { now: AT }); // 4: claimed and failed at AT
        return { two: yield* tx.taskListRecent(2), all: (yield* tx.taskListRecent(10)).map((row) => row.id), none: yield* tx.taskListRecent(0) };
      });
      expect(rows).toEqual({
        two: [
          { id: 2, enqueued_at: AT + 9, first_claimed_at: null, claimed_at: null, finished_at: null },
          { id: 3, enqueued_at: AT + 2, first_claimed_at: null, claimed_at: null, finished_at: null },
        ],
        all: [2, 3, 1, 4],
        none: [],
      });
    });
  });
});
