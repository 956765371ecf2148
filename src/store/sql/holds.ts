/**
 * Holds and credits (R4): each task's one hold, kept in its row (`tasks.hold_*`), closed once, settled
 * or released, and table `credit_ledger`, one row per settlement or release, written in the
 * transaction that closes the hold.
 */
import { HOLD_IS_OPEN_SQL } from '../../queue/holds.ts';
import { OCCUPYING_SQL } from '../../queue/states.ts';
import type { CreditRow, HoldRow } from '../store.ts';
import { HOLDING_ORDER } from './common.ts';
import { NOTHING, type Operations } from './runner.ts';
import { read, write } from './statement.ts';

const OCCUPYING = OCCUPYING_SQL;

/** Closes a hold that is still held; the task's tenant. */
export const holdClose = write('holdClose', ['task_id', 'hold_state', 'charged', 'usage', 'reason', 'at']).pluck<string>(
  `UPDATE tasks SET hold_state = :hold_state, hold_charged_credits = :charged, hold_usage = :usage, hold_reason = :reason, hold_closed_at = :at
   WHERE id = :task_id AND ${HOLD_IS_OPEN_SQL} RETURNING tenant`,
);

export const holdList = read('holdList').rows<HoldRow>(
  `SELECT id AS task_id, tenant, tier, hold_credits AS credits, hold_state AS state,
     hold_charged_credits AS charged_credits, hold_usage AS usage, hold_reason AS reason,
     enqueued_at AS held_at, hold_closed_at AS closed_at
   FROM tasks WHERE hold_state IS NOT NULL ORDER BY id`,
);

/**
 * Every end closes its hold in the same transaction, so only uncertain tasks can hold one with no live
 * run; they are found through tasks_holding.
 */
export const holdStale = read('holdStale', ['cutoff']).rows<{ task_id: number; state: 'uncertain' }>({
  sqlite: `SELECT id AS task_id, state, lease_until FROM tasks
           WHERE ${OCCUPYING} AND state = 'uncertain' AND ${HOLD_IS_OPEN_SQL} AND lease_until <= :cutoff`,
  postgres: `SELECT id AS task_id, state, lease_until FROM tasks
             WHERE ${OCCUPYING} AND state = 'uncertain' AND ${HOLD_IS_OPEN_SQL} AND lease_until <= :cutoff
             ORDER BY ${HOLDING_ORDER}`,
  necessity:
    "Differs by necessity: SQLite answers in the order of its walk of the holding index, which PostgreSQL's text spells out (PostgreSQL promises no order without ORDER BY).",
});

/** A ledger row; its id is the next one (one more than the largest). */
export const creditInsert = write('creditInsert', ['task_id', 'tenant', 'kind', 'credits', 'at']).changes({
  sqlite: `INSERT INTO credit_ledger (task_id, tenant, kind, credits, at)
           VALUES (:task_id, :tenant, :kind, :credits, :at)`,
  postgres: `INSERT INTO credit_ledger (id, task_id, tenant, kind, credits, at)
             VALUES ((SELECT COALESCE(MAX(id), 0) + 1 FROM credit_ledger), :task_id, :tenant, :kind, :credits, :at)`,
  necessity:
    "Differs by necessity: PostgreSQL's table has no rowid, so its text takes the id (one more than the largest: a sequence would burn ids on a rollback); SQLite's rowid is that same id (the table is not AUTOINCREMENT and no row is deleted), and the MAX subquery would cost every completion about half a microsecond (measured) for nothing.",
});

export const creditList = read('creditList').rows<CreditRow>('SELECT task_id, tenant, kind, credits, at FROM credit_ledger ORDER BY id');

export const holdOperations = {
  holdClose(id, hold, at) {
    return this.run(holdClose, { task_id: id, hold_state: hold.state, charged: hold.charged, usage: hold.usage, reason: hold.reason, at });
  },
  creditInsert(taskId, tenant, kind, credits, at) {
    this.send(creditInsert, { task_id: taskId, tenant, kind, credits, at });
    return NOTHING;
  },
  holdList() {
    return this.run(holdList, {});
  },
  holdListStale(cutoff) {
    return this.run(holdStale, { cutoff });
  },
  creditList() {
    return this.run(creditList, {});
  },
} satisfies Operations<'holdClose' | 'creditInsert' | 'holdList' | 'holdListStale' | 'creditList'>;
