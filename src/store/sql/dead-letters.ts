/**
 * Dead letters (R6) and their redrive (O1): table `dead_letters`, with the task reads and writes that
 * only a dead letter's life makes (its failure history from `events`, the reset of a redriven task).
 */
import type { DeadLetterRow, RedrivableRow } from '../store.ts';
import { NOTHING, type Operations } from './runner.ts';
import { read, write } from './statement.ts';

/** The events a dead letter's history keeps, in the task's order. */
export const taskFailureReasons = read('taskFailureReasons', ['task_id']).rows<{ type: string; data: string }>(
  `SELECT type, data FROM events WHERE task_id = :task_id
   AND type IN ('retry_scheduled', 'lease_expired', 'stop_confirmed', 'failed', 'expired') ORDER BY seq`,
);

/**
 * One dead letter per task: a second replaces the first (an upsert of every column). The values are
 * cast because PostgreSQL gives a parameter in a SELECT list no type of its own to take.
 */
export const deadLetterInsert = write('deadLetterInsert', ['task_id', 'reason', 'reasons', 'at']).changes(
  `INSERT INTO dead_letters (task_id, tenant, topic, version, reason, reasons, at)
   SELECT id, tenant, topic, version, CAST(:reason AS TEXT), CAST(:reasons AS TEXT), CAST(:at AS BIGINT) FROM tasks WHERE id = :task_id
   ON CONFLICT (task_id) DO UPDATE SET tenant = excluded.tenant, topic = excluded.topic, version = excluded.version,
     reason = excluded.reason, reasons = excluded.reasons, at = excluded.at`,
);

/** Keeps the `keep` newest by (at, task_id). */
export const deadLetterTrim = write('deadLetterTrim', ['keep']).changes(
  `DELETE FROM dead_letters WHERE task_id NOT IN
     (SELECT task_id FROM dead_letters ORDER BY at DESC, task_id DESC LIMIT :keep)`,
);

export const deadLetterList = read('deadLetterList').rows<DeadLetterRow>('SELECT * FROM dead_letters ORDER BY at DESC, task_id DESC');

/** O1: a redrive reads the task with its dead letter, and starts it afresh. */
export const deadLetterTask = read('deadLetterTask', ['task_id']).one<RedrivableRow>(
  `SELECT t.id, t.tenant, t.topic, t.version, t.state, t.generation, t.hold_state, t.attempts, t.deliveries, d.reason, d.reasons
   FROM tasks t JOIN dead_letters d ON d.task_id = t.id WHERE t.id = :task_id AND t.state = 'failed'`,
);

export const taskResetForRedrive = write('taskResetForRedrive', ['task_id', 'at']).changes(
  `UPDATE tasks SET attempts = 0, deliveries = 0, first_claimed_at = NULL, not_before = :at,
     error_class = NULL, error_message = NULL WHERE id = :task_id`,
);

export const deadLetterDelete = write('deadLetterDelete', ['task_id']).changes('DELETE FROM dead_letters WHERE task_id = :task_id');

export const deadLetterOperations = {
  taskFailureReasons(id) {
    return this.run(taskFailureReasons, { task_id: id });
  },
  deadLetterInsert(id, reason, reasonsJson, at, keep) {
    this.send(deadLetterInsert, { task_id: id, reason, reasons: reasonsJson, at });
    this.send(deadLetterTrim, { keep });
    return NOTHING;
  },
  deadLetterList() {
    return this.run(deadLetterList, {});
  },
  deadLetterTask(id) {
    return this.run(deadLetterTask, { task_id: id });
  },
  taskResetForRedrive(id, at) {
    this.send(taskResetForRedrive, { task_id: id, at });
    this.send(deadLetterDelete, { task_id: id });
    return NOTHING;
  },
} satisfies Operations<'taskFailureReasons' | 'deadLetterInsert' | 'deadLetterList' | 'deadLetterTask' | 'taskResetForRedrive'>;
