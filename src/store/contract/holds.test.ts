/**
 * The store contract, the hold of a task's credits (R4; columns of `tasks`) and the `credit_ledger`
 * table: holdClose, holdList, holdListStale, creditInsert and creditList, each against every store kind
 * (__test-helpers__/harness.ts).
 */
import { describe, expect, it } from 'vitest';
import { AT, RELEASED, STORE_KINDS, claim, contractStore, makeUncertain, readyTask, sortedBy } from './__test-helpers__/harness.ts';

describe.each(STORE_KINDS)('holds and credits on %s', (kind) => {
  const db = contractStore(kind);

  describe('holdClose', () => {
    it("closes a held hold once, answering the task's tenant; undefined when closed already or missing", async () => {
      const answer = await db.scratch(function* (tx) {
        const id = yield* readyTask(tx, { tenant: 'globex', holdCredits: 30 });
        const first = yield* tx.holdClose(id, { state: 'settled', charged: 12, usage: '{"tokens":12}', reason: 'checkpointed' }, AT + 5);
        const again = yield* tx.holdClose(id, RELEASED, AT + 6);
        return { first, again, missing: yield* tx.holdClose(99, RELEASED, AT), holds: yield* tx.holdList() };
      });
      expect(answer).toEqual({
        first: 'globex',
        again: undefined,
        missing: undefined,
        holds: [{ task_id: 1, tenant: 'globex', tier: 'standard', credits: 30, state: 'settled', charged_credits: 12, usage: '{"tokens":12}', reason: 'checkpointed', held_at: AT, closed_at: AT + 5 }],
      });
    });
  });

  describe('holdList', () => {
    it('lists every task that carries a hold, in id order, open ones with NULL closing columns', async () => {
      const [empty, holds] = await db.scratch(function* (tx) {
        const empty = yield* tx.holdList();
        yield* readyTask(tx, { tenant: 'a', holdCredits: 5, tier: 'gold', now: AT + 1 });
        const b = yield* readyTask(tx, { tenant: 'b', holdCredits: 0 });
        yield* tx.holdClose(b, RELEASED, AT + 2);
        return [empty, yield* tx.holdList()] as const;
      });
      expect(empty).toEqual([]);
      expect(holds).toEqual([
        { task_id: 1, tenant: 'a', tier: 'gold', credits: 5, state: 'held', charged_credits: null, usage: null, reason: null, held_at: AT + 1, closed_at: null },
        { task_id: 2, tenant: 'b', tier: 'standard', credits: 0, state: 'released', charged_credits: 0, usage: null, reason: 'no_checkpoint', held_at: AT, closed_at: AT + 2 },
      ]);
    });
  });

  describe('holdListStale', () => {
    it('lists uncertain tasks still holding whose lease ended at or before the cutoff', async () => {
      const rows = await db.scratch(function* (tx) {
        const ids: number[] = [];
        for (const [i, leaseUntil] of [AT + 10, AT + 20, AT + 30, AT + 5].entries()) {
          const id = yield* readyTask(tx);
          yield* claim(tx, id, { workerId: `w${i}`, leaseUntil });
          ids.push(id);
        }
        yield* makeUncertain(tx, ids[0]!);
        yield* makeUncertain(tx, ids[1]!);
        yield* makeUncertain(tx, ids[2]!);
        // ids[3] stays running (not stale however old its lease); ids[1]'s hold is closed already.
        yield* tx.holdClose(ids[1]!, RELEASED, AT);
        return { at20: yield* tx.holdListStale(AT + 20), at9: yield* tx.holdListStale(AT + 9) };
      });
      // The order is not part of the interface (SQLite reads the holding index; PostgreSQL orders by its columns).
      expect(sortedBy(rows.at20, (row) => row.task_id).map((row) => [row.task_id, row.state])).toEqual([[1, 'uncertain']]);
      expect(rows.at9).toEqual([]);
    });
  });

  describe('creditInsert', () => {
    it('appends a ledger row with every column as given', async () => {
      const rows = await db.scratch(function* (tx) {
        yield* tx.creditInsert(1, 'acme', 'charge', 12, AT);
        yield* tx.creditInsert(1, 'acme', 'release', 18, AT + 1);
        return yield* tx.creditList();
      });
      expect(rows).toEqual([
        { task_id: 1, tenant: 'acme', kind: 'charge', credits: 12, at: AT },
        { task_id: 1, tenant: 'acme', kind: 'release', credits: 18, at: AT + 1 },
      ]);
    });

    it("refuses a kind other than charge or release (the schema's CHECK)", async () => {
      await expect(
        db.scratch(function* (tx) {
          yield* tx.creditInsert(1, 'acme', 'refund' as never, 1, AT);
          return yield* tx.creditList();
        }),
      ).rejects.toThrow(/check/i);
    });
  });

  describe('creditList', () => {
    it('is [] when empty and the rows in insert order, not by task or time', async () => {
      const [empty, rows] = await db.scratch(function* (tx) {
        const empty = yield* tx.creditList();
        yield* tx.creditInsert(2, 'b', 'release', 1, AT + 9);
        yield* tx.creditInsert(1, 'a', 'charge', 2, AT);
        return [empty, (yield* tx.creditList()).map((row) => row.task_id)] as const;
      });
      expect(empty).toEqual([]);
      expect(rows).toEqual([2, 1]);
    });
  });
});
