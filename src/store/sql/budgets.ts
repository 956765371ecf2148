/**
 * Budgets and reservations (A1, I16): table `budget_levels`, each budget's stored level per scope
 * (queue/budgets.ts says what a level means per kind), and table `reservations`, one attempt's units of
 * one budget, held until that attempt ends and released once.
 */
import type { BudgetLevelRow, ReservationRow } from '../store.ts';
import { NOTHING, type Operations } from './runner.ts';
import { read, write } from './statement.ts';

export const budgetLevelGet = read('budgetLevelGet', ['budget', 'scope']).one<BudgetLevelRow>(
  'SELECT budget, scope, level, updated_at FROM budget_levels WHERE budget = :budget AND scope = :scope',
);

export const budgetLevelPut = write('budgetLevelPut', ['budget', 'scope', 'level', 'updated_at']).changes(
  `INSERT INTO budget_levels (budget, scope, level, updated_at) VALUES (:budget, :scope, :level, :updated_at)
   ON CONFLICT (budget, scope) DO UPDATE SET level = excluded.level, updated_at = excluded.updated_at`,
);

export const budgetLevelList = read('budgetLevelList').rows<BudgetLevelRow>('SELECT budget, scope, level, updated_at FROM budget_levels ORDER BY budget, scope');

export const reservationInsert = write('reservationInsert', ['task_id', 'generation', 'budget', 'scope', 'reserved', 'baseline', 'reserved_at']).changes(
  `INSERT INTO reservations (task_id, generation, budget, scope, reserved, baseline, reserved_at)
   VALUES (:task_id, :generation, :budget, :scope, :reserved, :baseline, :reserved_at)`,
);

/** Adds units to a held reservation of this attempt. */
export const reservationAdd = write('reservationAdd', ['units', 'task_id', 'generation', 'budget']).changes(
  `UPDATE reservations SET reserved = reserved + :units
   WHERE task_id = :task_id AND generation = :generation AND budget = :budget AND released IS NULL`,
);

export const reservationSetConsumed = write('reservationSetConsumed', ['consumed', 'task_id', 'generation', 'budget']).changes(
  'UPDATE reservations SET consumed = :consumed WHERE task_id = :task_id AND generation = :generation AND budget = :budget AND released IS NULL',
);

/** The task's reservations still held, through a partial index. */
export const reservationHeld = read('reservationHeld', ['task_id']).rows<ReservationRow>(
  'SELECT * FROM reservations WHERE task_id = :task_id AND released IS NULL ORDER BY generation, budget',
);

/** Releases a held reservation once, with what it consumed in the end. */
export const reservationRelease = write('reservationRelease', ['released', 'consumed', 'released_at', 'task_id', 'generation', 'budget']).changes(
  `UPDATE reservations SET released = :released, consumed = :consumed, released_at = :released_at
   WHERE task_id = :task_id AND generation = :generation AND budget = :budget AND released IS NULL`,
);

export const reservationList = read('reservationList').rows<ReservationRow>('SELECT * FROM reservations ORDER BY task_id, generation, budget');

export const budgetOperations = {
  budgetLevelGet(budget, scope) {
    return this.run(budgetLevelGet, { budget, scope });
  },
  budgetLevelPut(budget, scope, level, updatedAt) {
    this.send(budgetLevelPut, { budget, scope, level, updated_at: updatedAt });
    return NOTHING;
  },
  budgetLevelList() {
    return this.run(budgetLevelList, {});
  },
  reservationInsert(reservation) {
    const { taskId, generation, budget, scope, reserved, baseline, at } = reservation;
    this.send(reservationInsert, { task_id: taskId, generation, budget, scope, reserved, baseline, reserved_at: at });
    return NOTHING;
  },
  reservationAdd(taskId, generation, budget, units) {
    return this.run(reservationAdd, { units, task_id: taskId, generation, budget }, (changes) => changes === 1);
  },
  reservationSetConsumed(taskId, generation, budget, consumed) {
    this.send(reservationSetConsumed, { consumed, task_id: taskId, generation, budget });
    return NOTHING;
  },
  reservationListHeld(taskId) {
    return this.run(reservationHeld, { task_id: taskId });
  },
  reservationRelease(taskId, generation, budget, released, consumed, at) {
    return this.run(reservationRelease, { released, consumed, released_at: at, task_id: taskId, generation, budget }, (changes) => changes === 1);
  },
  reservationList() {
    return this.run(reservationList, {});
  },
} satisfies Operations<
  'budgetLevelGet' | 'budgetLevelPut' | 'budgetLevelList' | 'reservationInsert' | 'reservationAdd' | 'reservationSetConsumed' | 'reservationListHeld' | 'reservationRelease' | 'reservationList'
>;
