/**
 * The store contract, the writes of `tasks.state` and of a lease holder (Q7-Q9, Q13): taskWriteState (its
 * three kinds), holderRow, holderHeartbeat, holderBumpEventSeq, taskRequestCancel, and the transaction's own
 * txSavepoint and txMarkClaimable, each against every store kind (__test-helpers__/harness.ts).
 *
 * Differs by design: a claim's or a holder's state write that matches no row. SQLite answers it at once
 * (undefined); PostgreSQL sends it with the next round trip (pg-statements.ts deferOne) and answers the
 * eventSeq it was given, and that round trip fails with an InvariantError (exactlyOne), which is what
 * transition() raises for the SQLite answer. Either way nothing is written; the cases say which.
 */
import { describe, expect, it } from 'vitest';
import { InvariantError } from '../../queue/errors.ts';
import { RUN_SIGNAL } from '../sql/signals.ts';
import { AT, RELEASED, STORE_KINDS, claim, contractStore, endByHolder, makeUncertain, newTask, readyTask, settled } from './__test-helpers__/harness.ts';

describe.each(STORE_KINDS)('state writes on %s', (kind) => {
  const db = contractStore(kind);

  describe('taskWriteState', () => {
    it("claim: moves a ready task to running with its lease, counts, times, and a RUN signal; answers the event_seq given", async () => {
      const [seq, row, signals] = await db.scratch(function* (tx) {
        const id = yield* readyTask(tx, { now: AT - 5_000 });
        yield* tx.taskDeferredSet(id, 'budget:tokens');
        const seq = yield* tx.taskWriteState({ kind: 'claim', id, previousGeneration: 0, workerId: 'w1', generation: 1, leaseUntil: AT + 30_000, eventSeq: 2, now: AT });
        return [seq, yield* tx.taskById(id), yield* tx.signalList()] as const;
      });
      expect(seq).toBe(2);
      expect(row).toMatchObject({
        state: 'running',
        worker_id: 'w1',
        generation: 1,
        attempts: 1,
        deliveries: 1,
        lease_until: AT + 30_000,
        claimed_at: AT,
        first_claimed_at: AT,
        queue_wait_ms: 5_000,
        event_seq: 2,
        deferred: null,
        hold_state: 'held',
      });
      expect(signals).toEqual([{ name: RUN_SIGNAL, value: 1 }]);
    });

    it('claim: a second claim keeps first_claimed_at and adds to attempts and deliveries', async () => {
      const row = await db.scratch(function* (tx) {
        const id = yield* readyTask(tx);
        const fence = yield* claim(tx, id, { now: AT });
        yield* tx.taskWriteState({ kind: 'holder', fence, to: 'ready', eventSeq: 3, result: null, outcome: null, errorClass: 'rate_limited', errorMessage: 'slow', notBefore: AT + 1_000, finishedAt: null, hold: null });
        yield* claim(tx, id, { generation: 2, now: AT + 2_000, eventSeq: 4, workerId: 'w2' });
        return yield* tx.taskById(id);
      });
      expect(row).toMatchObject({ state: 'running', worker_id: 'w2', generation: 2, attempts: 2, deliveries: 2, first_claimed_at: AT, claimed_at: AT + 2_000, event_seq: 4 });
    });

    it('claim: of a row whose generation moved writes nothing (SQLite: undefined; PostgreSQL: InvariantError)', async () => {
      const outcome = await settled(
        db.scratch(function* (tx) {
          const id = yield* readyTask(tx);
          const seq = yield* tx.taskWriteState({ kind: 'claim', id, previousGeneration: 5, workerId: 'w1', generation: 6, leaseUntil: AT + 30_000, eventSeq: 2, now: AT });
          return { seq, row: yield* tx.taskById(id), signals: yield* tx.signalList() };
        }),
      );
      if (db.postgres) {
        expect('error' in outcome && outcome.error).toBeInstanceOf(InvariantError);
      } else {
        expect(outcome).toEqual({ value: { seq: undefined, row: expect.objectContaining({ state: 'ready', generation: 0, worker_id: null }), signals: [] } });
      }
    });

    it('holder: completes a running task under its fence, closing its hold, and answers the event_seq given', async () => {
      const [seq, row] = await db.scratch(function* (tx) {
        const id = yield* readyTask(tx);
        const fence = yield* claim(tx, id, { now: AT });
        const later = { ...fence, now: AT + 7_000 };
        const seq = yield* endByHolder(tx, later, 'done', { result: '{"ok":true}', hold: { state: 'settled', charged: 4, usage: '{"tokens":4}', reason: 'checkpointed' } });
        return [seq, yield* tx.taskById(id)] as const;
      });
      expect(seq).toBe(3);
      expect(row).toMatchObject({
        state: 'done',
        result: '{"ok":true}',
        outcome: 'done',
        finished_at: AT + 7_000,
        run_ms: 7_000,
        lease_until: null,
        event_seq: 3,
        hold_state: 'settled',
      });
    });

    it('holder: moves a running task back to ready for a retry with its hold still open (hold null)', async () => {
      const row = await db.scratch(function* (tx) {
        const id = yield* readyTask(tx);
        const fence = yield* claim(tx, id);
        yield* tx.taskWriteState({ kind: 'holder', fence, to: 'ready', eventSeq: 3, result: null, outcome: null, errorClass: 'rate_limited', errorMessage: 'slow down', notBefore: AT + 60_000, finishedAt: null, hold: null });
        return yield* tx.taskById(id);
      });
      expect(row).toMatchObject({ state: 'ready', not_before: AT + 60_000, lease_until: null, error_class: 'rate_limited', error_message: 'slow down', finished_at: null, hold_state: 'held', generation: 1, event_seq: 3 });
    });

    it('holder: fails a running task, closing its hold (leaveRunningClosingHold)', async () => {
      const row = await db.scratch(function* (tx) {
        const id = yield* readyTask(tx);
        const fence = yield* claim(tx, id);
        yield* endByHolder(tx, fence, 'failed');
        return yield* tx.taskById(id);
      });
      expect(row).toMatchObject({ state: 'failed', outcome: 'failed', error_class: 'boom', error_message: 'it broke', finished_at: AT, lease_until: null, hold_state: 'released' });
    });

    it('holder: under a stale fence (another worker, a lapsed lease) writes nothing', async () => {
      const miss = (fenceChange: { workerId?: string; now?: number }) =>
        settled(
          db.scratch(function* (tx) {
            const id = yield* readyTask(tx);
            const fence = yield* claim(tx, id, { leaseUntil: AT + 30_000 });
            const seq = yield* endByHolder(tx, { ...fence, ...fenceChange }, 'done');
            return { seq, row: yield* tx.taskById(id) };
          }),
        );
      for (const change of [{ workerId: 'intruder' }, { now: AT + 30_000 }]) {
        const outcome = await miss(change);
        if (db.postgres) expect('error' in outcome && outcome.error).toBeInstanceOf(InvariantError);
        else expect(outcome).toEqual({ value: { seq: undefined, row: expect.objectContaining({ state: 'running', worker_id: 'w1', hold_state: 'held' }) } });
      }
    });

    it('other: moves a row in the state and generation read, bumps event_seq itself and answers it; keepLease keeps the lease', async () => {
      const answer = await db.scratch(function* (tx) {
        const id = yield* readyTask(tx);
        yield* claim(tx, id, { leaseUntil: AT + 30_000, eventSeq: 2 });
        const seq = yield* tx.taskWriteState({ kind: 'other', id, from: 'running', generation: 1, to: 'uncertain', outcome: null, finishedAt: null, keepLease: true, hold: null });
        return { seq, row: yield* tx.taskById(id) };
      });
      expect(answer.seq).toBe(3);
      expect(answer.row).toMatchObject({ state: 'uncertain', lease_until: AT + 30_000, event_seq: 3, outcome: null });
    });

    it('other: closing the hold, ends the task; outcome is kept when none is given (COALESCE)', async () => {
      const answer = await db.scratch(function* (tx) {
        const id = yield* readyTask(tx);
        const cancelled = yield* tx.taskWriteState({ kind: 'other', id, from: 'ready', generation: 0, to: 'cancelled', outcome: 'cancelled', finishedAt: AT + 1, keepLease: false, hold: RELEASED });
        const other = yield* readyTask(tx);
        yield* claim(tx, other);
        yield* makeUncertain(tx, other);
        const expired = yield* tx.taskWriteState({ kind: 'other', id: other, from: 'uncertain', generation: 1, to: 'expired', outcome: null, finishedAt: AT + 2, keepLease: false, hold: RELEASED });
        return { cancelled, expired, rows: yield* tx.taskList(), holds: yield* tx.holdList() };
      });
      // The hold closes at the move's finishedAt, with the closure given.
      expect(answer.holds.map((hold) => [hold.task_id, hold.state, hold.charged_credits, hold.reason, hold.closed_at])).toEqual([
        [1, 'released', 0, 'no_checkpoint', AT + 1],
        [2, 'released', 0, 'no_checkpoint', AT + 2],
      ]);
      expect(answer.cancelled).toBe(2);
      expect(answer.expired).toBe(4);
      expect(answer.rows.map((row) => [row.state, row.outcome, row.finished_at, row.lease_until, row.hold_state])).toEqual([
        ['cancelled', 'cancelled', AT + 1, null, 'released'],
        ['expired', null, AT + 2, null, 'released'],
      ]);
    });

    it('other: answers undefined and writes nothing when the state, the generation or the open hold is not as read', async () => {
      const answer = await db.scratch(function* (tx) {
        const id = yield* readyTask(tx);
        const wrongState = yield* tx.taskWriteState({ kind: 'other', id, from: 'running', generation: 0, to: 'cancelled', outcome: null, finishedAt: AT, keepLease: false, hold: RELEASED });
        const wrongGeneration = yield* tx.taskWriteState({ kind: 'other', id, from: 'ready', generation: 3, to: 'cancelled', outcome: null, finishedAt: AT, keepLease: false, hold: RELEASED });
        yield* tx.holdClose(id, RELEASED, AT);
        const closedHold = yield* tx.taskWriteState({ kind: 'other', id, from: 'ready', generation: 0, to: 'cancelled', outcome: null, finishedAt: AT, keepLease: false, hold: RELEASED });
        const missing = yield* tx.taskWriteState({ kind: 'other', id: 99, from: 'ready', generation: 0, to: 'cancelled', outcome: null, finishedAt: AT, keepLease: false, hold: null });
        return { wrongState, wrongGeneration, closedHold, missing, row: yield* tx.taskById(id) };
      });
      expect(answer).toMatchObject({ wrongState: undefined, wrongGeneration: undefined, closedHold: undefined, missing: undefined });
      expect(answer.row).toMatchObject({ state: 'ready', event_seq: 1 });
    });
  });

  describe('holderRow', () => {
    it("reads a holder's columns of the task, and undefined for a missing id", async () => {
      const [row, missing] = await db.scratch(function* (tx) {
        const id = yield* readyTask(tx, { tenant: 't', topic: 'c', version: 2, deadline: AT + 9 });
        yield* claim(tx, id, { leaseUntil: AT + 30_000 });
        return [yield* tx.holderRow(id), yield* tx.holderRow(42)] as const;
      });
      expect(row).toEqual({
        id: 1,
        tenant: 't',
        topic: 'c',
        version: 2,
        state: 'running',
        worker_id: 'w1',
        generation: 1,
        lease_until: AT + 30_000,
        deadline: AT + 9,
        cancel_requested: 0,
        event_seq: 2,
        hold_state: 'held',
        attempts: 1,
        deliveries: 1,
        first_claimed_at: AT,
      });
      expect(missing).toBeUndefined();
    });
  });

  describe('holderHeartbeat', () => {
    it('renews the lease under the fence and says whether a cancel was requested', async () => {
      const answer = await db.scratch(function* (tx) {
        const id = yield* readyTask(tx);
        const fence = yield* claim(tx, id, { leaseUntil: AT + 30_000 });
        const first = yield* tx.holderHeartbeat({ ...fence, now: AT + 10_000 }, AT + 40_000);
        const lease = (yield* tx.taskById(id))?.lease_until;
        yield* tx.taskRequestCancel(id);
        const second = yield* tx.holderHeartbeat({ ...fence, now: AT + 20_000 }, AT + 50_000);
        return { first, lease, second };
      });
      expect(answer).toEqual({ first: { cancelRequested: false }, lease: AT + 40_000, second: { cancelRequested: true } });
    });

    it('answers undefined and keeps the lease under a stale fence (worker, generation, lease lapsed at now)', async () => {
      const answer = await db.scratch(function* (tx) {
        const id = yield* readyTask(tx);
        const fence = yield* claim(tx, id, { leaseUntil: AT + 30_000 });
        return {
          worker: yield* tx.holderHeartbeat({ ...fence, workerId: 'w2' }, AT + 99_000),
          generation: yield* tx.holderHeartbeat({ ...fence, generation: 2 }, AT + 99_000),
          lapsed: yield* tx.holderHeartbeat({ ...fence, now: AT + 30_000 }, AT + 99_000),
          lease: (yield* tx.taskById(id))?.lease_until,
        };
      });
      expect(answer).toEqual({ worker: undefined, generation: undefined, lapsed: undefined, lease: AT + 30_000 });
    });
  });

  describe('holderBumpEventSeq', () => {
    it('answers the next event_seq under the fence, and undefined under a stale one', async () => {
      const answer = await db.scratch(function* (tx) {
        const id = yield* readyTask(tx);
        const fence = yield* claim(tx, id, { eventSeq: 2 });
        return [yield* tx.holderBumpEventSeq(fence), yield* tx.holderBumpEventSeq(fence), yield* tx.holderBumpEventSeq({ ...fence, workerId: 'w9' }), (yield* tx.taskById(id))?.event_seq];
      });
      expect(answer).toEqual([3, 4, undefined, 4]);
    });
  });

  describe('taskRequestCancel', () => {
    it('marks a running or uncertain task once, answering its next event_seq; undefined for ready, already marked, or missing', async () => {
      const answer = await db.scratch(function* (tx) {
        const running = yield* readyTask(tx);
        yield* claim(tx, running);
        const uncertain = yield* readyTask(tx);
        yield* claim(tx, uncertain, { workerId: 'w2' });
        yield* makeUncertain(tx, uncertain);
        const ready = yield* readyTask(tx);
        return {
          running: yield* tx.taskRequestCancel(running),
          again: yield* tx.taskRequestCancel(running),
          uncertain: yield* tx.taskRequestCancel(uncertain),
          ready: yield* tx.taskRequestCancel(ready),
          missing: yield* tx.taskRequestCancel(99),
          flags: (yield* tx.taskList()).map((row) => row.cancel_requested),
        };
      });
      expect(answer).toEqual({ running: 3, again: undefined, uncertain: 4, ready: undefined, missing: undefined, flags: [1, 1, 0] });
    });
  });

  describe('txSavepoint', () => {
    it("undoes what its body wrote when the body throws, rethrows, and keeps what came before", async () => {
      const answer = await db.scratch(function* (tx) {
        yield* readyTask(tx, { tenant: 'before' });
        let caught: unknown;
        try {
          yield* tx.txSavepoint(function* () {
            yield* readyTask(tx, { tenant: 'inside' });
            yield* tx.signalBump('inside', 1);
            yield* tx.taskList();
            throw new Error('undo');
          });
        } catch (error) {
          caught = error;
        }
        const kept = yield* tx.txSavepoint(function* () {
          yield* readyTask(tx, { tenant: 'kept' });
          return 'value';
        });
        return { caught: (caught as Error).message, kept, tenants: (yield* tx.taskList()).map((row) => row.tenant), signals: yield* tx.signalList() };
      });
      expect(answer).toEqual({ caught: 'undo', kept: 'value', tenants: ['before', 'kept'], signals: [] });
    });

    it('leaves the transaction usable after a statement inside it failed (a refused insert)', async () => {
      const answer = await db.scratch(function* (tx) {
        yield* readyTask(tx, { tenant: 'a' });
        let failure = '';
        try {
          yield* tx.txSavepoint(function* () {
            yield* readyTask(tx, { tenant: 'inside' });
            // A priority outside 0..30 breaks the schema's CHECK.
            yield* tx.taskCreate(newTask({ tenant: 'bad', priority: 99 }));
            yield* tx.taskList();
          });
        } catch (error) {
          failure = String((error as Error).message);
        }
        yield* readyTask(tx, { tenant: 'after' });
        return { failure, tenants: (yield* tx.taskList()).map((row) => row.tenant) };
      });
      expect(answer.failure).toMatch(/check/i);
      expect(answer.tenants).toEqual(['a', 'after']);
    });
  });

  describe('txMarkClaimable', () => {
    // Not a statement: it yields nothing, and the store tells its watchers once the transaction commits.
    // On a PostgreSQL server that notice is a NOTIFY heard on a LISTEN connection of its own, at a time
    // of its own (src/adapters/pg-listener.test.ts and src/worker/wakeups.test.ts cover it); waiting for it here
    // would make the case depend on timing.
    it.skipIf(kind === 'postgres')('tells the watchers once per committed transaction however often it was called, and never for a rollback', async () => {
      const store = db.store();
      let heard = 0;
      const stop = store.watch!(() => heard++);
      try {
        await db.commit(function* (tx) {
          tx.txMarkClaimable();
          tx.txMarkClaimable();
          yield* tx.counterLive();
        });
        const afterCommit = heard;
        await db.scratch(function* (tx) {
          tx.txMarkClaimable();
          yield* tx.counterLive();
        });
        await db.commit(function* (tx) {
          yield* tx.counterLive();
        });
        expect([afterCommit, heard]).toEqual([1, 1]);
      } finally {
        stop();
      }
    });

    it('yields nothing and answers undefined inside a body', async () => {
      const answer = await db.scratch(function* (tx) {
        const value = tx.txMarkClaimable();
        return { value, live: yield* tx.counterLive() };
      });
      expect(answer).toEqual({ value: undefined, live: 0 });
    });
  });
});
