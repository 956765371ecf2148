import type { EventRow, TaskRow } from '../store/store.ts';
import type { TaskEvent, TaskState, TaskView, Tier } from './types.ts';

/** Turns a stored row into the public view (get, listForTenant, snapshot). */
export function toTaskView(row: TaskRow): TaskView {
  const view: TaskView = {
    id: row.id,
    tenant: row.tenant,
    topic: row.topic,
    version: row.version,
    priority: row.priority,
    state: row.state as TaskState,
    generation: row.generation,
    attempts: row.attempts,
    deliveries: row.deliveries,
    tier: row.tier as Tier,
    cancelRequested: row.cancel_requested === 1,
    enqueuedAt: row.enqueued_at,
    notBefore: row.not_before,
  };
  if (row.worker_id !== null) view.workerId = row.worker_id;
  if (row.lease_until !== null) view.leaseUntil = row.lease_until;
  if (row.result !== null) view.result = JSON.parse(row.result);
  if (row.outcome !== null) view.outcome = row.outcome as NonNullable<TaskView['outcome']>;
  if (row.error_class !== null) view.errorClass = row.error_class;
  if (row.error_message !== null) view.errorMessage = row.error_message;
  if (row.store !== null) view.store = row.store;
  if (row.deadline !== null) view.deadline = row.deadline;
  if (row.queue_wait_ms !== null) view.queueWaitMs = row.queue_wait_ms;
  if (row.run_ms !== null) view.runMs = row.run_ms;
  return view;
}


export function toTaskEvent(row: EventRow): TaskEvent {
  const event: TaskEvent = { id: row.id, taskId: row.task_id, seq: row.seq, type: row.type, at: row.at, data: JSON.parse(row.data) };
  if (row.worker_id !== null) event.workerId = row.worker_id;
  if (row.generation !== null) event.generation = row.generation;
  return event;
}
