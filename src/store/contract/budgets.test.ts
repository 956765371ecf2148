/**
 * The store contract, tables `budget_levels` and `reservations` (A1, I16): budgetLevelGet,
 * budgetLevelPut, budgetLevelList, reservationInsert, reservationAdd, reservationSetConsumed, reservationListHeld,
 * reservationRelease and reservationList, each against every store kind (__test-helpers__/harness.ts).
 */
import { describe, expect, it } from 'vitest';
import type { NewReservation, ReservationRow } from '../store.ts';
import { AT, STORE_KINDS, contractStore } from './__test-helpers__/harness.ts';

function reservation(overrides: Partial<NewReservation> = {}): NewReservation {
  return { taskId: 1, generation: 1, budget: 'tokens', scope: '', reserved: 10, baseline: 0, at: AT, ...overrides };
}

function held(overrides: Partial<ReservationRow> = {}): ReservationRow {
  return { task_id: 1, generation: 1, budget: 'tokens', scope: '', reserved: 10, consumed: 0, baseline: 0, released: null, reserved_at: AT, released_at: null, ...overrides };
}

describe.each(STORE_KINDS)('budgets and reservations on %s', (kind) => {
  const db = contractStore(kind);

  describe('budgetLevelPut', () => {
    it('inserts a level, then overwrites it (an upsert per budget and scope)', async () => {
      const answer = await db.scratch(function* (tx) {
        yield* tx.budgetLevelPut('tokens', '', 5, AT);
        const first = yield* tx.budgetLevelGet('tokens', '');
        yield* tx.budgetLevelPut('tokens', '', 2, AT + 9);
        return { first, second: yield* tx.budgetLevelGet('tokens', '') };
      });
      expect(answer).toEqual({ first: { budget: 'tokens', scope: '', level: 5, updated_at: AT }, second: { budget: 'tokens', scope: '', level: 2, updated_at: AT + 9 } });
    });
  });

  describe('budgetLevelGet', () => {
    it('is undefined for a (budget, scope) never written; scopes are apart', async () => {
      const answer = await db.scratch(function* (tx) {
        yield* tx.budgetLevelPut('tokens', 'tenant:a', 1, AT);
        return [yield* tx.budgetLevelGet('tokens', ''), yield* tx.budgetLevelGet('tokens', 'tenant:b'), yield* tx.budgetLevelGet('usd', 'tenant:a')];
      });
      expect(answer).toEqual([undefined, undefined, undefined]);
    });
  });

  describe('budgetLevelList', () => {
    it('lists every level by (budget, scope)', async () => {
      const rows = await db.scratch(function* (tx) {
        yield* tx.budgetLevelPut('usd', '', 1, AT);
        yield* tx.budgetLevelPut('tokens', 'tenant:b', 2, AT);
        yield* tx.budgetLevelPut('tokens', 'tenant:a', 3, AT);
        yield* tx.budgetLevelPut('tokens', '', 4, AT);
        return (yield* tx.budgetLevelList()).map((row) => [row.budget, row.scope, row.level]);
      });
      expect(rows).toEqual([
        ['tokens', '', 4],
        ['tokens', 'tenant:a', 3],
        ['tokens', 'tenant:b', 2],
        ['usd', '', 1],
      ]);
    });
  });

  describe('reservationInsert', () => {
    it('stores a held reservation: consumed 0, released and released_at NULL', async () => {
      const rows = await db.scratch(function* (tx) {
        yield* tx.reservationInsert(reservation({ scope: 'tenant:acme', reserved: 7, baseline: 3 }));
        return yield* tx.reservationList();
      });
      expect(rows).toEqual([held({ scope: 'tenant:acme', reserved: 7, baseline: 3 })]);
    });

    it('refuses a second reservation of the same attempt and budget (the primary key)', async () => {
      await expect(
        db.scratch(function* (tx) {
          yield* tx.reservationInsert(reservation());
          yield* tx.reservationInsert(reservation({ reserved: 1 }));
          return yield* tx.reservationList();
        }),
      ).rejects.toThrow(/unique|duplicate|primary/i);
    });
  });

  describe('reservationAdd', () => {
    it('adds to a held reservation of that attempt (true); false for a released one, another generation or none', async () => {
      const answer = await db.scratch(function* (tx) {
        yield* tx.reservationInsert(reservation());
        yield* tx.reservationInsert(reservation({ budget: 'usd' }));
        yield* tx.reservationRelease(1, 1, 'usd', 10, 0, AT);
        return {
          held: yield* tx.reservationAdd(1, 1, 'tokens', 5),
          released: yield* tx.reservationAdd(1, 1, 'usd', 5),
          generation: yield* tx.reservationAdd(1, 2, 'tokens', 5),
          none: yield* tx.reservationAdd(2, 1, 'tokens', 5),
          rows: (yield* tx.reservationList()).map((row) => [row.budget, row.reserved]),
        };
      });
      expect(answer).toEqual({
        held: true,
        released: false,
        generation: false,
        none: false,
        rows: [
          ['tokens', 15],
          ['usd', 10],
        ],
      });
    });
  });

  describe('reservationSetConsumed', () => {
    it('sets what a held reservation consumed; a released one keeps its own', async () => {
      const rows = await db.scratch(function* (tx) {
        yield* tx.reservationInsert(reservation());
        yield* tx.reservationInsert(reservation({ budget: 'usd' }));
        yield* tx.reservationRelease(1, 1, 'usd', 6, 4, AT + 1);
        yield* tx.reservationSetConsumed(1, 1, 'tokens', 8);
        yield* tx.reservationSetConsumed(1, 1, 'usd', 9);
        yield* tx.reservationSetConsumed(1, 1, 'nothing', 9);
        return (yield* tx.reservationList()).map((row) => [row.budget, row.consumed]);
      });
      expect(rows).toEqual([
        ['tokens', 8],
        ['usd', 4],
      ]);
    });
  });

  describe('reservationListHeld', () => {
    it("lists a task's reservations still held (any generation) by (generation, budget); [] when none", async () => {
      const answer = await db.scratch(function* (tx) {
        yield* tx.reservationInsert(reservation({ generation: 2, budget: 'a' }));
        yield* tx.reservationInsert(reservation({ generation: 1, budget: 'z' }));
        yield* tx.reservationInsert(reservation({ generation: 1, budget: 'b' }));
        yield* tx.reservationInsert(reservation({ generation: 1, budget: 'gone' }));
        yield* tx.reservationInsert(reservation({ taskId: 2, budget: 'other' }));
        yield* tx.reservationRelease(1, 1, 'gone', 10, 0, AT);
        return { one: (yield* tx.reservationListHeld(1)).map((row) => [row.generation, row.budget]), none: yield* tx.reservationListHeld(3) };
      });
      expect(answer).toEqual({
        one: [
          [1, 'b'],
          [1, 'z'],
          [2, 'a'],
        ],
        none: [],
      });
    });
  });

  describe('reservationRelease', () => {
    it('releases a held reservation once with what it consumed (true), and false after or for none', async () => {
      const answer = await db.scratch(function* (tx) {
        yield* tx.reservationInsert(reservation());
        const first = yield* tx.reservationRelease(1, 1, 'tokens', 7, 3, AT + 4);
        const again = yield* tx.reservationRelease(1, 1, 'tokens', 1, 9, AT + 5);
        const none = yield* tx.reservationRelease(1, 2, 'tokens', 1, 1, AT);
        return { first, again, none, rows: yield* tx.reservationList() };
      });
      expect(answer).toEqual({ first: true, again: false, none: false, rows: [held({ released: 7, consumed: 3, released_at: AT + 4 })] });
    });
  });

  describe('reservationList', () => {
    it('is [] when none, and every reservation by (task, generation, budget)', async () => {
      const [empty, keys] = await db.scratch(function* (tx) {
        const empty = yield* tx.reservationList();
        yield* tx.reservationInsert(reservation({ taskId: 2, generation: 1, budget: 'a' }));
        yield* tx.reservationInsert(reservation({ taskId: 1, generation: 2, budget: 'a' }));
        yield* tx.reservationInsert(reservation({ taskId: 1, generation: 1, budget: 'b' }));
        yield* tx.reservationInsert(reservation({ taskId: 1, generation: 1, budget: 'a' }));
        return [empty, (yield* tx.reservationList()).map((row) => [row.task_id, row.generation, row.budget])] as const;
      });
      expect(empty).toEqual([]);
      expect(keys).toEqual([
        [1, 1, 'a'],
        [1, 1, 'b'],
        [1, 2, 'a'],
        [2, 1, 'a'],
      ]);
    });
  });
});
