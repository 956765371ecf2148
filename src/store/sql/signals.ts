/**
 * Control-plane signals (A5): table `signal_counters`, the running totals each bumped in the
 * transaction that writes what it counts, and the bounded, indexed reads of `tasks` that
 * queue.signals() makes (the holding and ready indexes, never a scan of the history).
 */
import type { TaskState } from '../../queue/types.ts';
import { OCCUPYING_SQL } from '../../queue/states.ts';
import type { SignalCounterRow } from '../store.ts';
import { HOLDING_ORDER } from './common.ts';
import { NOTHING, type Operations } from './runner.ts';
import { read, write } from './statement.ts';

const OCCUPYING = OCCUPYING_SQL;

/** A5: the signal counter of RUN decisions (claims); admission rows record no RUN, so it is counted here. */
export const RUN_SIGNAL = 'decision:RUN:admitted';

/** Adds `delta` to a counter, created at 0. */
export const signalBump = write('signalBump', ['name', 'delta']).changes(
  `INSERT INTO signal_counters (name, value) VALUES (:name, :delta)
   ON CONFLICT (name) DO UPDATE SET value = signal_counters.value + excluded.value`,
);

export const signalList = read('signalList').rows<SignalCounterRow>('SELECT name, value FROM signal_counters ORDER BY name');

/** Running and uncertain tasks with their last claim (the holding index). */
export const taskHoldingSince = read('taskHoldingSince').rows<{
  id: number;
  tenant: string;
  state: TaskState;
  worker_id: string | null;
  generation: number;
  claimed_at: number | null;
  lease_until: number | null;
}>({
  sqlite: `SELECT id, tenant, state, worker_id, generation, claimed_at, lease_until FROM tasks WHERE ${OCCUPYING}`,
  postgres: `SELECT id, tenant, state, worker_id, generation, claimed_at, lease_until FROM tasks WHERE ${OCCUPYING} ORDER BY ${HOLDING_ORDER}`,
  necessity:
    "Differs by necessity: SQLite answers in the order of its walk of the holding index, which PostgreSQL's text spells out (PostgreSQL promises no order without ORDER BY); on SQLite an ORDER BY over columns the index does not hold in that order would add a sort.",
});

/** Ready tasks counted per tenant and priority (the ready index). */
export const taskReadyDepth = read('taskReadyDepth').rows<{ tenant: string; priority: number; n: number }>(
  `SELECT tenant, priority, COUNT(*) AS n FROM tasks WHERE state = 'ready' GROUP BY tenant, priority ORDER BY tenant, priority DESC`,
);

/**
 * Per tenant with ready work, its oldest ready task. The ready index's order within a tenant is
 * (priority DESC, enqueued_at, id): the oldest of a tenant is the smallest (enqueued_at, id) over its
 * priority levels; read as the MIN per level, then per tenant.
 */
export const taskOldestReady = read('taskOldestReady').rows<{ tenant: string; id: number; enqueued_at: number }>(
  `SELECT tenant, id, enqueued_at FROM (
     SELECT tenant, id, enqueued_at, ROW_NUMBER() OVER (PARTITION BY tenant ORDER BY enqueued_at, id) AS k
     FROM tasks WHERE state = 'ready') AS heads WHERE k = 1 ORDER BY tenant`,
);

/** A tenant's oldest ready task eligible at `now`: the ready index, seeking past ineligible ones. */
export const taskOldestEligibleReady = read('taskOldestEligibleReady', ['tenant', 'now']).one<{ id: number; enqueued_at: number }>({
  sqlite: `SELECT id, enqueued_at FROM tasks INDEXED BY tasks_ready
           WHERE state = 'ready' AND tenant = :tenant AND not_before <= :now AND (deadline IS NULL OR deadline > :now)
           ORDER BY enqueued_at, id LIMIT 1`,
  postgres: `SELECT id, enqueued_at FROM tasks
             WHERE state = 'ready' AND tenant = :tenant AND not_before <= :now AND (deadline IS NULL OR deadline > :now)
             ORDER BY enqueued_at, id LIMIT 1`,
  necessity:
    "Differs by necessity: SQLite's planner, without statistics, would walk the tenant's rows by another index; INDEXED BY holds it to tasks_ready, and PostgreSQL has no INDEXED BY.",
});

/** The last `limit` accepted tasks by (enqueued_at, id). */
export const taskRecent = read('taskRecent', ['limit']).rows<{ id: number; enqueued_at: number; first_claimed_at: number | null; claimed_at: number | null; finished_at: number | null }>({
  sqlite: `SELECT id, enqueued_at, first_claimed_at, claimed_at, finished_at FROM tasks INDEXED BY tasks_enqueued_at
           ORDER BY enqueued_at DESC, id DESC LIMIT :limit`,
  postgres: `SELECT id, enqueued_at, first_claimed_at, claimed_at, finished_at FROM tasks
             ORDER BY enqueued_at DESC, id DESC LIMIT :limit`,
  necessity:
    "Differs by necessity: SQLite's planner, without statistics, would sort the whole table; INDEXED BY holds it to tasks_enqueued_at, and PostgreSQL has no INDEXED BY.",
});

export const signalOperations = {
  signalBump(name, delta) {
    this.send(signalBump, { name, delta });
    return NOTHING;
  },
  signalList() {
    return this.run(signalList, {});
  },
  taskHoldingSince() {
    return this.run(taskHoldingSince, {});
  },
  taskReadyDepth() {
    return this.run(taskReadyDepth, {});
  },
  taskOldestReady() {
    return this.run(taskOldestReady, {});
  },
  taskOldestEligibleReady(tenant, now) {
    return this.run(taskOldestEligibleReady, { tenant, now });
  },
  taskListRecent(limit) {
    return this.run(taskRecent, { limit });
  },
} satisfies Operations<'signalBump' | 'signalList' | 'taskHoldingSince' | 'taskReadyDepth' | 'taskOldestReady' | 'taskOldestEligibleReady' | 'taskListRecent'>;
