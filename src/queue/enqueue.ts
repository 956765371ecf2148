import type { Step, StoreTx } from '../store/store.ts';
import { write, type QueueContext } from './context.ts';
import { validateEnqueue, type ValidEnqueue } from './enqueue-input.ts';
import { createTask, transition } from './transition.ts';
import type { EnqueueRequest, EnqueueResult } from './types.ts';

/** Thrown inside the insert's savepoint to undo the insert when a new topic meets a full queue. */
class QueueFull extends Error {}

/**
 * Q1-Q3, Q14 at enqueue. The insert goes first and the unique key decides duplicates (never
 * check-then-insert); a queue_full rolls the insert back to its savepoint and records the rejection.
 */
export function enqueue(context: QueueContext, request: EnqueueRequest): Promise<EnqueueResult> {
  const checked = validateEnqueue(request, context.config);
  if (!checked.ok) return Promise.resolve({ ok: false, error: 'invalid_input', field: checked.field, message: checked.message });
  const task = checked.value;
  return write(context, 'enqueue', (tx, at) => enqueueIn(context, tx, at, task));
}

function* enqueueIn(context: QueueContext, tx: StoreTx, at: number, task: ValidEnqueue): Step<EnqueueResult> {
  // Q1 before Q14: a resend of a stored task is a duplicate (or a conflict) even once its deadline passed.
  if (task.deadline !== null && task.deadline <= at && (yield* tx.taskByKey(task.tenant, task.topic, task.version)) === undefined) {
    yield* tx.insertRejection(task.tenant, task.topic, task.version, 'expired', at);
    return { ok: false, error: 'expired', message: `deadline ${task.deadline} is not after now (${at})` };
  }
  return yield* insertOrExplain(context, tx, task, at);
}

function* insertOrExplain(context: QueueContext, tx: StoreTx, task: ValidEnqueue, at: number): Step<EnqueueResult> {
  let inserted: { taskId: number; status: 'enqueued' | 'replaced' | 'superseded' } | undefined;
  try {
    inserted = yield* tx.savepoint(() => insertNew(context, tx, task, at));
  } catch (error) {
    if (!(error instanceof QueueFull)) throw error;
    yield* tx.insertRejection(task.tenant, task.topic, task.version, 'queue_full', at);
    return {
      ok: false,
      error: 'queue_full',
      message: `capacity ${context.config.capacity} reached (ready + running + uncertain); topic ${task.topic} has no waiting version to replace`,
    };
  }
  if (inserted !== undefined) return { ok: true, ...inserted };
  const existing = yield* tx.taskByKey(task.tenant, task.topic, task.version);
  if (existing === undefined) throw new TypeError(`the insert of (${task.tenant}, ${task.topic}, v${task.version}) was refused but no row holds the key`);
  if (existing.input_hash === task.inputHash) return { ok: true, taskId: existing.id, status: 'duplicate' };
  yield* tx.insertRejection(task.tenant, task.topic, task.version, 'idempotency_conflict', at);
  return {
    ok: false,
    error: 'idempotency_conflict',
    taskId: existing.id,
    message: `task ${existing.id} already holds (${task.tenant}, ${task.topic}, v${task.version}) with different input; enqueue a new version instead`,
  };
}

/** Returns undefined when the key already exists (the unique constraint said no). */
function* insertNew(context: QueueContext, tx: StoreTx, task: ValidEnqueue, at: number): Step<{ taskId: number; status: 'enqueued' | 'replaced' | 'superseded' } | undefined> {
  const { config } = context;
  const latest = yield* tx.latestVersionOfTopic(task.tenant, task.topic);
  // R4: the hold is written with the task, in the same row and statement.
  const columns = { ...task, holdCredits: config.tierHolds[task.tier] };
  // Q2: a version older than one already queued arrives late; it is stored superseded and never runs.
  if (latest !== null && latest > task.version) {
    const created = yield* createTask(tx, at, columns, 'superseded', { reason: 'newer_version_queued', latestVersion: latest }, 'newer_version_queued');
    if (created === undefined) return undefined;
    yield* created.announce();
    return { taskId: created.taskId, status: 'superseded' };
  }
  const replaced = yield* tx.olderUnstartedVersions(task.tenant, task.topic, task.version);
  const created = yield* createTask(tx, at, columns, 'ready', { version: task.version, priority: task.priority, tier: task.tier, replaced: replaced.map((old) => old.id) }, 'enqueued');
  if (created === undefined) return undefined;
  // Q2: older versions that have not started never run; running ones finish as stale_input.
  for (const old of replaced) {
    yield* transition(context, tx, at, { by: 'other', event: 'supersede', row: old, to: 'superseded' }, { byTaskId: created.taskId }, 'replaced');
  }
  // Q3: a replacement frees the slot it takes, so it is accepted even when the queue is full.
  if (replaced.length === 0 && (yield* tx.liveCount()) > config.capacity) throw new QueueFull();
  yield* created.announce();
  return { taskId: created.taskId, status: replaced.length > 0 ? 'replaced' : 'enqueued' };
}
