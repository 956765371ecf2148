import type { TaskRow } from '../store/statements.ts';
import { emit, noteLiveness, type QueueContext } from './context.ts';
import { endRun } from '../runs/terminal.ts';
import { holdCreditsFor } from '../runs/settlement.ts';
import { validateEnqueue, type ValidEnqueue } from './enqueue-input.ts';
import type { EnqueueRequest, EnqueueResult } from './types.ts';

/** Thrown inside the insert savepoint to undo the insert when a new topic meets a full queue. */
class QueueFull extends Error {}

/**
 * Q1-Q3, Q14 at enqueue. The insert goes first and the unique key decides duplicates (never
 * check-then-insert); a queue_full rolls the insert back to its savepoint and records the rejection.
 */
export function enqueue(context: QueueContext, request: EnqueueRequest): EnqueueResult {
  const checked = validateEnqueue(request, context.config);
  if (!checked.ok) return { ok: false, error: 'invalid_input', field: checked.field, message: checked.message };
  const task = checked.value;
  return context.write('enqueue', (at) => {
    // Q1 before Q14: a resend of a stored task is a duplicate (or a conflict) even once its deadline passed.
    if (task.deadline !== null && task.deadline <= at && context.statements.taskByKey.get(task.tenant, task.topic, task.version) === undefined) {
      context.statements.insertRejection.run(task.tenant, task.topic, task.version, 'expired', at);
      return { ok: false, error: 'expired', message: `deadline ${task.deadline} is not after now (${at})` };
    }
    return insertOrExplain(context, task, at);
  });
}

function insertOrExplain(context: QueueContext, task: ValidEnqueue, at: number): EnqueueResult {
  const { statements } = context;
  const insertAtSavepoint = context.db.transaction(() => insertNew(context, task, at));
  let inserted: { taskId: number; status: 'enqueued' | 'replaced' | 'superseded' } | undefined;
  try {
    inserted = insertAtSavepoint();
  } catch (error) {
    if (!(error instanceof QueueFull)) throw error;
    statements.insertRejection.run(task.tenant, task.topic, task.version, 'queue_full', at);
    return {
      ok: false,
      error: 'queue_full',
      message: `capacity ${context.config.capacity} reached (ready + running + uncertain); topic ${task.topic} has no waiting version to replace`,
    };
  }
  if (inserted !== undefined) return { ok: true, ...inserted };
  const existing = statements.taskByKey.get(task.tenant, task.topic, task.version) as TaskRow;
  if (existing.input_hash === task.inputHash) return { ok: true, taskId: existing.id, status: 'duplicate' };
  statements.insertRejection.run(task.tenant, task.topic, task.version, 'idempotency_conflict', at);
  return {
    ok: false,
    error: 'idempotency_conflict',
    taskId: existing.id,
    message: `task ${existing.id} already holds (${task.tenant}, ${task.topic}, v${task.version}) with different input; enqueue a new version instead`,
  };
}

/** Returns undefined when the key already exists (the unique constraint said no). */
function insertNew(context: QueueContext, task: ValidEnqueue, at: number) {
  const { statements, config } = context;
  const latest = statements.latestVersionOfTopic.get(task.tenant, task.topic) as number | null;
  // Q2: a version older than one already queued arrives late; it must never run.
  const arrivedLate = latest !== null && latest > task.version;
  // R4: the hold is written with the task, in the same row and statement.
  const holdCredits = holdCreditsFor(context, task.tier);
  const taskId = statements.insertTask.get({ ...task, state: arrivedLate ? 'superseded' : 'ready', now: at, holdCredits }) as number | undefined;
  if (taskId === undefined) return undefined;
  if (arrivedLate) {
    const ending = endRun(context, taskId, 'superseded', at, 'newer_version_queued');
    emit(context, taskId, 1, 'superseded', at, { to: 'superseded', reason: 'newer_version_queued', latestVersion: latest, ...ending });
    return { taskId, status: 'superseded' as const };
  }
  // Q2: older versions that have not started never run; running ones finish as stale_input.
  const replaced = statements.supersedeOlderReady.all({ tenant: task.tenant, topic: task.topic, version: task.version, now: at }) as {
    id: number;
    event_seq: number;
  }[];
  noteLiveness(context, undefined, 'ready');
  for (const old of replaced) {
    noteLiveness(context, 'ready', 'superseded');
    const ending = endRun(context, old.id, 'superseded', at, 'replaced');
    emit(context, old.id, old.event_seq, 'superseded', at, { from: 'ready', to: 'superseded', byTaskId: taskId, ...ending });
  }
  // Q3: a replacement frees the slot it takes, so it is accepted even when the queue is full.
  if (replaced.length === 0 && (statements.liveCount.get() as number) > config.capacity) throw new QueueFull();
  emit(context, taskId, 1, 'enqueued', at, {
    to: 'ready',
    version: task.version,
    priority: task.priority,
    tier: task.tier,
    replaced: replaced.map((old) => old.id),
  });
  return { taskId, status: replaced.length > 0 ? ('replaced' as const) : ('enqueued' as const) };
}
