/**
 * A lease holder's writes that leave the state alone (Q8, Q9, Q13): the heartbeat, the event sequence
 * bumped under the fence, and an operator's cancel request. The fence is declared here once; the state
 * writes (task-writes.ts) take it too.
 */
import { OCCUPYING_SQL } from '../../queue/states.ts';
import type { CompletingRow } from '../store.ts';
import { checkpointLastUsage } from './checkpoints.ts';
import type { Operations } from './runner.ts';
import { read, write } from './statement.ts';
import { taskNewerVersion } from './tasks.ts';

const OCCUPYING = OCCUPYING_SQL;

/** Q8: the fence of every write from a lease holder: its task, still running, by this worker, in this generation, within its lease. */
export const FENCE = `id = :id AND state = 'running' AND worker_id = :workerId AND generation = :generation AND lease_until > :now`;

/** What a holder's terminal writes need to check the fence, the deadline, the retry bounds and the hold. */
export const COMPLETING_COLUMNS =
  'id, tenant, topic, version, state, worker_id, generation, lease_until, deadline, cancel_requested, event_seq, hold_state, attempts, deliveries, first_claimed_at';

/** What a holder's call asks after its row, read with it on PostgreSQL: taskNewerVersionExists and checkpointLastUsage of the row. */
export const COMPLETING_AHEAD = `EXISTS (SELECT 1 FROM tasks AS n WHERE n.tenant = tasks.tenant AND n.topic = tasks.topic AND n.version > tasks.version) AS ahead_newer,
                         (SELECT c.usage FROM checkpoints AS c WHERE c.task_id = tasks.id ORDER BY c.seq DESC LIMIT 1) AS ahead_usage`;

/** The columns COMPLETING_AHEAD adds to a holder's row (PostgreSQL's only). */
interface Ahead {
  ahead_newer: boolean;
  ahead_usage: string | null;
}

/**
 * A holder's row (Q8, Q9, Q12). On PostgreSQL with what its call reads next (holderOperations below
 * hands those answers to the runner); PgStatements also reads it ahead, before the queue lock with its
 * version (completingRowVersioned, rowUnchanged) or in a transaction's first round trip
 * (ReadsFirst.holderRow), under this statement's name.
 */
export const holderRow = read('holderRow', ['task_id']).one<CompletingRow | (CompletingRow & Ahead)>({
  sqlite: `SELECT ${COMPLETING_COLUMNS} FROM tasks WHERE id = :task_id`,
  postgres: `SELECT ${COMPLETING_COLUMNS}, ${COMPLETING_AHEAD} FROM tasks WHERE id = :task_id`,
  necessity:
    "Differs by necessity: PostgreSQL pays a round trip for each statement, so it reads with a holder's row what the holder's write asks next (whether a newer version of the topic exists, the last checkpoint's usage) and answers those reads from it; SQLite pays no round trip, and the two subqueries on every read of a holder's row, the hot path of every complete and fail, would buy it nothing.",
});

/** The fence's parameters, as Fence names them. */
const FENCE_PARAMS = ['id', 'workerId', 'generation', 'now'] as const;

/** Q9: the lease renewed, with whether a cancel was requested meanwhile. */
export const holderHeartbeat = write('holderHeartbeat', [...FENCE_PARAMS, 'leaseUntil']).one<{ cancel_requested: number }>(
  `UPDATE tasks SET lease_until = :leaseUntil WHERE ${FENCE} RETURNING cancel_requested`,
);

export const holderBumpEventSeq = write('holderBumpEventSeq', FENCE_PARAMS).pluck<number>(`UPDATE tasks SET event_seq = event_seq + 1 WHERE ${FENCE} RETURNING event_seq`);

/** Q13: a cancel request, once, for a task that holds a slot (running or uncertain). */
export const taskRequestCancel = write('taskRequestCancel', ['task_id']).pluck<number>(
  `UPDATE tasks SET cancel_requested = 1, event_seq = event_seq + 1
                      WHERE id = :task_id AND ${OCCUPYING} AND cancel_requested = 0
                      RETURNING event_seq`,
);

export const holderOperations = {
  /** The holder's row; on PostgreSQL, taskNewerVersionExists and checkpointLastUsage of it are answered ahead from it (a complete asks for them next). */
  holderRow(id) {
    return this.run(holderRow, { task_id: id }, (row) => {
      if (row === undefined || !('ahead_newer' in row)) return row;
      const { ahead_newer: newer, ahead_usage: usage, ...completing } = row;
      // In the statements' own answers: taskNewerVersionExists's pluck is 1, or undefined for no row.
      this.answeredAhead(taskNewerVersion, { tenant: completing.tenant, topic: completing.topic, version: completing.version }, newer ? 1 : undefined);
      this.answeredAhead(checkpointLastUsage, { task_id: completing.id }, usage ?? undefined);
      return completing;
    });
  },
  holderHeartbeat(fence, leaseUntil) {
    return this.run(holderHeartbeat, { ...fence, leaseUntil }, (renewed) =>
      renewed === undefined ? undefined : { cancelRequested: renewed.cancel_requested === 1 },
    );
  },
  holderBumpEventSeq(fence) {
    return this.run(holderBumpEventSeq, fence);
  },
  taskRequestCancel(id) {
    return this.run(taskRequestCancel, { task_id: id });
  },
} satisfies Operations<'holderRow' | 'holderHeartbeat' | 'holderBumpEventSeq' | 'taskRequestCancel'>;
