/**
 * The store contract, admission (A2): tables `tenant_pauses` and `admission_decisions` and the
 * `tasks.deferred` column — tenantPauseList, tenantPause, tenantResume, taskDeferredSet, taskDefer,
 * admissionInsert, admissionList — each against every store kind (__test-helpers__/harness.ts).
 */
import { describe, expect, it } from 'vitest';
import type { AdmissionRow } from '../store.ts';
import { AT, STORE_KINDS, claim, contractStore, readyTask } from './__test-helpers__/harness.ts';

describe.each(STORE_KINDS)('admission on %s', (kind) => {
  const db = contractStore(kind);

  describe('tenantPause', () => {
    it('records a pause once: true the first time, false (the first kept) while paused', async () => {
      const answer = await db.scratch(function* (tx) {
        const first = yield* tx.tenantPause('acme', 'budget', AT);
        const again = yield* tx.tenantPause('acme', 'other', AT + 1);
        return { first, again, paused: yield* tx.tenantPauseList() };
      });
      expect(answer).toEqual({ first: true, again: false, paused: [{ tenant: 'acme', reason: 'budget', at: AT }] });
    });
  });

  describe('tenantResume', () => {
    it('removes a pause (true), and is false for a tenant not paused', async () => {
      const answer = await db.scratch(function* (tx) {
        yield* tx.tenantPause('acme', 'budget', AT);
        yield* tx.tenantPause('globex', 'manual', AT);
        const resumed = yield* tx.tenantResume('acme');
        const again = yield* tx.tenantResume('acme');
        return { resumed, again, paused: yield* tx.tenantPauseList() };
      });
      expect(answer).toEqual({ resumed: true, again: false, paused: [{ tenant: 'globex', reason: 'manual', at: AT }] });
    });
  });

  describe('tenantPauseList', () => {
    it('is [] when none, and the pauses in tenant order', async () => {
      const [empty, tenants] = await db.scratch(function* (tx) {
        const empty = yield* tx.tenantPauseList();
        for (const tenant of ['c', 'A', 'a']) yield* tx.tenantPause(tenant, 'r', AT);
        return [empty, (yield* tx.tenantPauseList()).map((row) => row.tenant)] as const;
      });
      expect(empty).toEqual([]);
      expect(tenants).toEqual(['A', 'a', 'c']);
    });

    it('reads a pause committed by an earlier transaction', async () => {
      await db.commit(function* (tx) {
        yield* tx.tenantPause('committed-pause', 'r', AT);
      });
      const seen = await db.read((tx) => tx.tenantPauseList());
      await db.commit(function* (tx) {
        yield* tx.tenantResume('committed-pause');
      });
      expect(seen).toContainEqual({ tenant: 'committed-pause', reason: 'r', at: AT });
      expect(await db.read((tx) => tx.tenantPauseList())).not.toContainEqual(expect.objectContaining({ tenant: 'committed-pause' }));
    });
  });

  describe('taskDeferredSet', () => {
    it('sets and clears the reason of the last DEFER without touching event_seq, whatever the state', async () => {
      const rows = await db.scratch(function* (tx) {
        const a = yield* readyTask(tx);
        yield* tx.taskDeferredSet(a, 'budget:tokens');
        const set = yield* tx.taskById(a);
        yield* tx.taskDeferredSet(a, null);
        return [set, yield* tx.taskById(a)];
      });
      expect(rows.map((row) => [row?.deferred, row?.event_seq])).toEqual([
        ['budget:tokens', 1],
        [null, 1],
      ]);
    });
  });

  describe('taskDefer', () => {
    it("records a ready task's DEFER reason and answers its next event_seq; undefined when not ready or missing", async () => {
      const answer = await db.scratch(function* (tx) {
        const ready = yield* readyTask(tx);
        const running = yield* readyTask(tx);
        yield* claim(tx, running);
        return {
          first: yield* tx.taskDefer(ready, 'budget:tokens'),
          second: yield* tx.taskDefer(ready, 'paused'),
          running: yield* tx.taskDefer(running, 'x'),
          missing: yield* tx.taskDefer(99, 'x'),
          rows: (yield* tx.taskList()).map((row) => [row.deferred, row.event_seq]),
        };
      });
      expect(answer).toEqual({
        first: 2,
        second: 3,
        running: undefined,
        missing: undefined,
        rows: [
          ['paused', 3],
          [null, 2],
        ],
      });
    });
  });

  describe('admissionInsert', () => {
    it("records a decision with its NULLs, and bumps 'decision:ACTION:reason' in the same transaction", async () => {
      const rows: AdmissionRow[] = [
        { at: AT, action: 'DEFER', reason: 'budget', tenant: 'acme', task_id: 1, retry_at: AT + 60_000, budget: 'tokens' },
        { at: AT + 1, action: 'PAUSE', reason: 'manual', tenant: 'acme', task_id: null, retry_at: null, budget: null },
        { at: AT + 2, action: 'DEFER', reason: 'budget', tenant: 'globex', task_id: 2, retry_at: null, budget: 'usd' },
      ];
      const answer = await db.scratch(function* (tx) {
        for (const row of rows) yield* tx.admissionInsert(row);
        return { decisions: yield* tx.admissionList(), signals: yield* tx.signalList() };
      });
      expect(answer).toEqual({
        decisions: rows,
        signals: [
          { name: 'decision:DEFER:budget', value: 2 },
          { name: 'decision:PAUSE:manual', value: 1 },
        ],
      });
    });

    it("refuses an action the schema does not know (its CHECK)", async () => {
      await expect(
        db.scratch(function* (tx) {
          yield* tx.admissionInsert({ at: AT, action: 'MAYBE' as never, reason: 'r', tenant: 'acme', task_id: null, retry_at: null, budget: null });
          return yield* tx.admissionList();
        }),
      ).rejects.toThrow(/check/i);
    });
  });

  describe('admissionList', () => {
    it('is [] when none, and the decisions in insert order', async () => {
      const [empty, tenants] = await db.scratch(function* (tx) {
        const empty = yield* tx.admissionList();
        yield* tx.admissionInsert({ at: AT + 5, action: 'RESUME', reason: 'manual', tenant: 'z', task_id: null, retry_at: null, budget: null });
        yield* tx.admissionInsert({ at: AT, action: 'REJECT', reason: 'capacity', tenant: 'a', task_id: null, retry_at: null, budget: null });
        return [empty, (yield* tx.admissionList()).map((row) => row.tenant)] as const;
      });
      expect(empty).toEqual([]);
      expect(tenants).toEqual(['z', 'a']);
    });
  });
});
