/**
 * A lease holder's writes that leave the state alone (Q8, Q9, Q13): the heartbeat, the event sequence
 * bumped under the fence, and an operator's cancel request. The fence is declared here once; the state
 * writes (statements.ts) take it too.
 */
import { OCCUPYING_SQL } from '../../queue/states.ts';
import type { Operations } from './runner.ts';
import { write } from './statement.ts';

const OCCUPYING = OCCUPYING_SQL;

/** Q8: the fence of every write from a lease holder: its task, still running, by this worker, in this generation, within its lease. */
export const FENCE = `id = :id AND state = 'running' AND worker_id = :workerId AND generation = :generation AND lease_until > :now`;

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
  heartbeat(fence, leaseUntil) {
    return this.run(holderHeartbeat, { ...fence, leaseUntil }, (renewed) =>
      renewed === undefined ? undefined : { cancelRequested: renewed.cancel_requested === 1 },
    );
  },
  bumpEventSeqFenced(fence) {
    return this.run(holderBumpEventSeq, fence);
  },
  requestCancel(id) {
    return this.run(taskRequestCancel, { task_id: id });
  },
} satisfies Operations<'heartbeat' | 'bumpEventSeqFenced' | 'requestCancel'>;
