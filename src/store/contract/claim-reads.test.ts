/**
 * The store contract, the claim's reads of `tasks` (Q4-Q7, A6): claimHolding, claimOverdueLeases, claimAnyReady,
 * claimFirstReadyTenant, claimNextReadyTenant, claimLevelHead, claimReadyHeads, claimLevelNext, sessionOlderHolders, sessionBusy
 * and claimCandidate, each against every store kind (__test-helpers__/harness.ts).
 */
import { describe, expect, it } from 'vitest';
import { AT, STORE_KINDS, claim, contractStore, failedTask, makeUncertain, readyTask, sortedBy } from './__test-helpers__/harness.ts';

describe.each(STORE_KINDS)('claim reads on %s', (kind) => {
  const db = contractStore(kind);

  describe('claimHolding', () => {
    it('reads every running and uncertain task from the holding index, and [] when none holds', async () => {
      const [empty, rows] = await db.scratch(function* (tx) {
        const empty = yield* tx.claimHolding();
        const a = yield* readyTask(tx, { tenant: 'b' });
        const b = yield* readyTask(tx, { tenant: 'a' });
        yield* readyTask(tx, { tenant: 'a' });
        yield* claim(tx, a, { workerId: 'w1', leaseUntil: AT + 10 });
        yield* claim(tx, b, { workerId: 'w2', leaseUntil: AT + 20 });
        yield* makeUncertain(tx, b);
        yield* failedTask(tx);
        return [empty, yield* tx.claimHolding()] as const;
      });
      expect(empty).toEqual([]);
      // The order is not part of the interface (SQLite's walk of its index; PostgreSQL orders by that index's columns).
      expect(sortedBy(rows, (row) => row.id)).toEqual([
        { id: 1, tenant: 'b', state: 'running', generation: 1, worker_id: 'w1', lease_until: AT + 10, hold_state: 'held' },
        { id: 2, tenant: 'a', state: 'uncertain', generation: 1, worker_id: 'w2', lease_until: AT + 20, hold_state: 'held' },
      ]);
    });
  });

  describe('claimOverdueLeases', () => {
    it('lists running tasks whose lease ended at or before `at`, by (lease_until, id); uncertain ones are not overdue', async () => {
      const ids = await db.scratch(function* (tx) {
        const leases = [AT + 30, AT + 10, AT + 10, AT + 5, AT + 50];
        const ids: number[] = [];
        for (const [i, leaseUntil] of leases.entries()) {
          const id = yield* readyTask(tx);
          yield* claim(tx, id, { workerId: `w${i}`, leaseUntil });
          ids.push(id);
        }
        yield* makeUncertain(tx, ids[3]!);
        return {
          at30: (yield* tx.claimOverdueLeases(AT + 30)).map((row) => [row.id, row.lease_until]),
          at4: yield* tx.claimOverdueLeases(AT + 4),
        };
      });
      expect(ids.at30).toEqual([
        [2, AT + 10],
        [3, AT + 10],
        [1, AT + 30],
      ]);
      expect(ids.at4).toEqual([]);
    });
  });

  describe('claimAnyReady', () => {
    it('is false with no ready task and true with one', async () => {
      const answer = await db.scratch(function* (tx) {
        const none = yield* tx.claimAnyReady();
        const id = yield* readyTask(tx);
        const one = yield* tx.claimAnyReady();
        yield* claim(tx, id);
        return [none, one, yield* tx.claimAnyReady()];
      });
      expect(answer).toEqual([false, true, false]);
    });
  });

  describe('claimFirstReadyTenant', () => {
    it('is the smallest tenant with a ready task (bytewise), and undefined when none', async () => {
      const answer = await db.scratch(function* (tx) {
        const none = yield* tx.claimFirstReadyTenant();
        const z = yield* readyTask(tx, { tenant: 'B' });
        yield* readyTask(tx, { tenant: 'a' });
        yield* readyTask(tx, { tenant: 'b' });
        const withUpper = yield* tx.claimFirstReadyTenant();
        yield* claim(tx, z);
        return [none, withUpper, yield* tx.claimFirstReadyTenant()];
      });
      // 'B' < 'a' bytewise: SQLite's BINARY and PostgreSQL's COLLATE "C" agree.
      expect(answer).toEqual([undefined, 'B', 'a']);
    });
  });

  describe('claimNextReadyTenant', () => {
    it('is the next tenant with a ready task after the one given, and undefined after the last', async () => {
      const answer = await db.scratch(function* (tx) {
        for (const tenant of ['c', 'a', 'b', 'a']) yield* readyTask(tx, { tenant });
        const running = yield* readyTask(tx, { tenant: 'bb' });
        yield* claim(tx, running);
        return [yield* tx.claimNextReadyTenant(''), yield* tx.claimNextReadyTenant('a'), yield* tx.claimNextReadyTenant('b'), yield* tx.claimNextReadyTenant('c')];
      });
      expect(answer).toEqual(['a', 'b', 'c', undefined]);
    });
  });

  describe('claimLevelHead', () => {
    it('is the earliest eligible ready task of the highest priority within [min, max] for one tenant', async () => {
      const answer = await db.scratch(function* (tx) {
        yield* readyTask(tx, { priority: 5, now: AT + 2 }); // 1
        yield* readyTask(tx, { priority: 5, now: AT + 1 }); // 2
        yield* readyTask(tx, { priority: 9, now: AT + 50 }); // 3: not eligible before AT + 50
        yield* readyTask(tx, { priority: 3, now: AT }); // 4
        yield* readyTask(tx, { tenant: 'other', priority: 30, now: AT }); // 5
        const head = (q: { maxPriority: number; minPriority: number; now: number }) => tx.claimLevelHead({ tenant: 'acme', ...q });
        return {
          all: yield* head({ maxPriority: 30, minPriority: 0, now: AT + 10 }),
          later: yield* head({ maxPriority: 30, minPriority: 0, now: AT + 50 }),
          below5: yield* head({ maxPriority: 4, minPriority: 0, now: AT + 10 }),
          above5: yield* head({ maxPriority: 30, minPriority: 6, now: AT + 10 }),
          none: yield* tx.claimLevelHead({ tenant: 'nobody', maxPriority: 30, minPriority: 0, now: AT + 10 }),
        };
      });
      expect(answer).toEqual({
        all: { id: 2, priority: 5, enqueued_at: AT + 1 },
        later: { id: 3, priority: 9, enqueued_at: AT + 50 },
        below5: { id: 4, priority: 3, enqueued_at: AT },
        above5: undefined,
        none: undefined,
      });
    });

    it('breaks a tie of priority and enqueue time by id', async () => {
      const head = await db.scratch(function* (tx) {
        yield* readyTask(tx, { priority: 1 });
        yield* readyTask(tx, { priority: 1 });
        return yield* tx.claimLevelHead({ tenant: 'acme', maxPriority: 30, minPriority: 0, now: AT });
      });
      expect(head).toEqual({ id: 1, priority: 1, enqueued_at: AT });
    });
  });

  describe('claimReadyHeads', () => {
    it('gives every ready tenant in tenant order with its head at `now`, or null when none is eligible yet', async () => {
      const answer = await db.scratch(function* (tx) {
        const empty = yield* tx.claimReadyHeads(AT);
        yield* readyTask(tx, { tenant: 'c', priority: 2, now: AT });
        yield* readyTask(tx, { tenant: 'c', priority: 7, now: AT });
        yield* readyTask(tx, { tenant: 'a', priority: 0, now: AT + 100 });
        yield* readyTask(tx, { tenant: 'b', priority: 4, now: AT + 1 });
        yield* readyTask(tx, { tenant: 'b', priority: 4, now: AT });
        return { empty, heads: yield* tx.claimReadyHeads(AT + 10) };
      });
      expect(answer).toEqual({
        empty: [],
        heads: [
          { tenant: 'a', head: null },
          { tenant: 'b', head: { id: 5, priority: 4, enqueued_at: AT } },
          { tenant: 'c', head: { id: 2, priority: 7, enqueued_at: AT } },
        ],
      });
    });
  });

  describe('claimLevelNext', () => {
    it('is the next eligible task of the same (tenant, priority) level after (enqueuedAt, id), in level order', async () => {
      const answer = await db.scratch(function* (tx) {
        yield* readyTask(tx, { priority: 3, now: AT }); // 1
        yield* readyTask(tx, { priority: 3, now: AT }); // 2
        yield* readyTask(tx, { priority: 3, now: AT + 5 }); // 3
        yield* readyTask(tx, { priority: 4, now: AT + 1 }); // 4: another level
        yield* readyTask(tx, { priority: 3, now: AT + 90 }); // 5: not eligible at AT + 10
        const next = (enqueuedAt: number, id: number) => tx.claimLevelNext({ tenant: 'acme', priority: 3, enqueuedAt, id, now: AT + 10 });
        return [yield* next(AT, 1), yield* next(AT, 2), yield* next(AT + 5, 3)];
      });
      expect(answer).toEqual([{ id: 2, priority: 3, enqueued_at: AT }, { id: 3, priority: 3, enqueued_at: AT + 5 }, undefined]);
    });
  });

  describe('sessionOlderHolders', () => {
    it('lists the running and uncertain tasks of the session with a lower version, in id order', async () => {
      const rows = await db.scratch(function* (tx) {
        const v2 = yield* readyTask(tx, { topic: 's', version: 2 });
        const v1 = yield* readyTask(tx, { topic: 's', version: 1 });
        yield* readyTask(tx, { topic: 's', version: 3 });
        const v4 = yield* readyTask(tx, { topic: 's', version: 4 });
        const other = yield* readyTask(tx, { tenant: 'x', topic: 's', version: 1 });
        yield* claim(tx, v2, { workerId: 'w1' });
        yield* claim(tx, v1, { workerId: 'w2' });
        yield* makeUncertain(tx, v1);
        yield* claim(tx, v4, { workerId: 'w3' });
        yield* claim(tx, other, { workerId: 'w4' });
        return [yield* tx.sessionOlderHolders('acme', 's', 4), yield* tx.sessionOlderHolders('acme', 's', 1)] as const;
      });
      expect(rows[0]).toEqual([
        { id: 1, state: 'running' },
        { id: 2, state: 'uncertain' },
      ]);
      expect(rows[1]).toEqual([]);
    });
  });

  describe('sessionBusy', () => {
    it('is true when another task of the (tenant, topic) is running or uncertain', async () => {
      const answer = await db.scratch(function* (tx) {
        const a = yield* readyTask(tx, { topic: 's', version: 1 });
        const b = yield* readyTask(tx, { topic: 's', version: 2 });
        const idle = yield* tx.sessionBusy('acme', 's', b);
        yield* claim(tx, a);
        const busy = yield* tx.sessionBusy('acme', 's', b);
        const self = yield* tx.sessionBusy('acme', 's', a);
        yield* makeUncertain(tx, a);
        const uncertain = yield* tx.sessionBusy('acme', 's', b);
        return { idle, busy, self, uncertain, otherTenant: yield* tx.sessionBusy('x', 's', b) };
      });
      expect(answer).toEqual({ idle: false, busy: true, self: false, uncertain: true, otherTenant: false });
    });
  });

  describe('claimCandidate', () => {
    it("reads the claim's columns of a task, and undefined for a missing id", async () => {
      const [row, missing] = await db.scratch(function* (tx) {
        const id = yield* readyTask(tx, { tenant: 't', topic: 'c', version: 3, priority: 6, deadline: AT + 1, needsJson: '{"n":1}', critical: 1, inputJson: '{"x":2}' });
        yield* tx.taskDeferredSet(id, 'budget:x');
        return [yield* tx.claimCandidate(id), yield* tx.claimCandidate(77)] as const;
      });
      expect(row).toEqual({
        id: 1,
        tenant: 't',
        topic: 'c',
        version: 3,
        state: 'ready',
        generation: 0,
        attempts: 0,
        priority: 6,
        input: '{"x":2}',
        tier: 'standard',
        enqueued_at: AT,
        deadline: AT + 1,
        first_claimed_at: null,
        cancel_requested: 0,
        event_seq: 1,
        hold_state: 'held',
        needs: '{"n":1}',
        critical: 1,
        deferred: 'budget:x',
      });
      expect(missing).toBeUndefined();
    });
  });
});
