/**
 * Checkpoints (R1, R2, R5): table `checkpoints`, everything a takeover needs to resume a run, written
 * only by the lease holder, numbered per task.
 */
import type { CheckpointRow } from '../store.ts';
import type { Operations } from './runner.ts';
import { read, write } from './statement.ts';

/** The next seq of the task, taken in the insert; the seq it took. */
export const checkpointInsert = write('checkpointInsert', ['task_id', 'generation', 'kind', 'step', 'state', 'usage', 'at', 'event_seq', 'requeue_safe']).pluck<number>(
  `INSERT INTO checkpoints (task_id, seq, generation, kind, step, state, usage, at, event_seq, requeue_safe)
   VALUES (:task_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoints WHERE task_id = :task_id),
           :generation, :kind, :step, :state, :usage, :at, :event_seq, :requeue_safe)
   RETURNING seq`,
);

export const checkpointLast = read('checkpointLast', ['task_id']).one<CheckpointRow>('SELECT * FROM checkpoints WHERE task_id = :task_id ORDER BY seq DESC LIMIT 1');

export const checkpointLastFlags = read('checkpointLastFlags', ['task_id']).one<{ kind: 'A' | 'B'; requeue_safe: number }>(
  'SELECT kind, requeue_safe FROM checkpoints WHERE task_id = :task_id ORDER BY seq DESC LIMIT 1',
);

/** R4: what settlement charges from. PostgreSQL reads it ahead with a holder's row (pg-statements.ts holderRow). */
export const checkpointLastUsage = read('checkpointLastUsage', ['task_id']).pluck<string>('SELECT usage FROM checkpoints WHERE task_id = :task_id ORDER BY seq DESC LIMIT 1');

export const checkpointOperations = {
  checkpointInsert(checkpoint) {
    const { id, generation, kind, step, state, usage, now, eventSeq, requeueSafe } = checkpoint;
    return this.run(
      checkpointInsert,
      { task_id: id, generation, kind, step, state, usage, at: now, event_seq: eventSeq, requeue_safe: requeueSafe },
      (seq) => seq as number,
    );
  },
  checkpointLast(id) {
    return this.run(checkpointLast, { task_id: id });
  },
  checkpointLastFlags(id) {
    return this.run(checkpointLastFlags, { task_id: id });
  },
  checkpointLastUsage(id) {
    return this.run(checkpointLastUsage, { task_id: id });
  },
} satisfies Operations<'checkpointInsert' | 'checkpointLast' | 'checkpointLastFlags' | 'checkpointLastUsage'>;
