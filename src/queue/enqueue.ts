import type { Step, StoreTx } from '../store/store.ts';
import { decide } from './admission.ts';
import { unsatisfiable } from './budgets.ts';
import { clampReturning } from './fair-share.ts';
import { emit, write, type QueueContext } from './context.ts';
import { validateEnqueue, type ValidEnqueue } from './enqueue-input.ts';
import { createTask, transition } from './transition.ts';
import type { AdmissionDecision, EnqueueRequest, EnqueueResult } from './types.ts';

/** Thrown inside the insert's savepoint to undo the insert when admission refuses a new topic for capacity. */
class QueueFull extends Error {
  constructor(readonly decision: AdmissionDecision) {
    super(decision.reason);
  }
}

/** A2: every REJECT is recorded, in the rejections (Q3, I4) and among the admission decisions. */
export function* recordRejection(tx: StoreTx, task: { tenant: string; topic: string; version: number }, reason: string, at: number, budget?: string): Step<void> {
  yield* tx.rejectionInsert(task.tenant, task.topic, task.version, reason, at);
  yield* tx.admissionInsert({ at, action: 'REJECT', reason, tenant: task.tenant, task_id: null, retry_at: null, budget: budget ?? null });
}

/**
 * Q1-Q3, Q14 at enqueue. The insert goes first and the unique key decides duplicates (never
 * check-then-insert); a queue_full rolls the insert back to its savepoint and records the rejection.
 */
export function enqueue(context: QueueContext, request: EnqueueRequest): Promise<EnqueueResult> {
  const checked = validateEnqueue(request, context.config);
  if (!checked.ok) return Promise.resolve({ ok: false, error: 'invalid_input', field: checked.field, message: checked.message });
  const task = checked.value;
  return write(context, 'enqueue', (tx, at) => enqueueIn(context, tx, at, task), { enqueue: { tenant: task.tenant, topic: task.topic, version: task.version } });
}

function* enqueueIn(context: QueueContext, tx: StoreTx, at: number, task: ValidEnqueue): Step<EnqueueResult> {
  // Q1 before Q14: a resend of a stored task is a duplicate (or a conflict) even once its deadline passed.
  if (task.deadline !== null && task.deadline <= at && (yield* tx.taskByKey(task.tenant, task.topic, task.version)) === undefined) {
    yield* recordRejection(tx, task, 'expired', at);
    return { ok: false, error: 'expired', message: `deadline ${task.deadline} is not after now (${at})` };
  }
  // A1: a need that no grant of its budget could ever cover would wait forever: refused, nothing stored.
  const never = task.needs === null ? undefined : unsatisfiable(context.config, task.needs);
  if (never !== undefined && (yield* tx.taskByKey(task.tenant, task.topic, task.version)) === undefined) {
    yield* recordRejection(tx, task, 'exceeds_budget', at, never.budget);
    return { ok: false, error: 'exceeds_budget', budget: never.budget, message: never.message };
  }
  return yield* insertOrExplain(context, tx, task, at);
}

function* insertOrExplain(context: QueueContext, tx: StoreTx, task: ValidEnqueue, at: number): Step<EnqueueResult> {
  let inserted: { taskId: number; status: 'enqueued' | 'replaced' | 'superseded' } | undefined;
  try {
    inserted = yield* tx.txSavepoint(() => insertNew(context, tx, task, at));
  } catch (error) {
    if (!(error instanceof QueueFull)) throw error;
    // Q3's error name for a full queue; the admission decision's reason says which refusal it was (A2).
    yield* recordRejection(tx, task, 'queue_full', at);
    const { capacity, criticalHeadroom } = context.config;
    return {
      ok: false,
      error: 'queue_full',
      message:
        error.decision.reason === 'over_capacity'
          ? `capacity ${capacity} reached (ready + running + uncertain); topic ${task.topic} has no waiting version to replace`
          : `capacity ${capacity} and the critical headroom of ${criticalHeadroom} are both reached`,
    };
  }
  if (inserted !== undefined) return { ok: true, ...inserted };
  const existing = yield* tx.taskByKey(task.tenant, task.topic, task.version);
  if (existing === undefined) throw new TypeError(`the insert of (${task.tenant}, ${task.topic}, v${task.version}) was refused but no row holds the key`);
  if (existing.input_hash === task.inputHash) return { ok: true, taskId: existing.id, status: 'duplicate' };
  yield* tx.rejectionInsert(task.tenant, task.topic, task.version, 'idempotency_conflict', at);
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
  const latest = yield* tx.taskLatestVersion(task.tenant, task.topic);
  // R4: the hold is written with the task, in the same row and statement.
  const { needs: _needs, ...fields } = task;
  const columns = { ...fields, holdCredits: config.tierHolds[task.tier] };
  // Q2: a version older than one already queued arrives late; it is stored superseded and never runs.
  if (latest !== null && latest > task.version) {
    const created = yield* createTask(tx, at, columns, 'superseded', { reason: 'newer_version_queued', latestVersion: latest }, 'newer_version_queued');
    if (created === undefined) return undefined;
    yield* created.announce();
    return { taskId: created.taskId, status: 'superseded' };
  }
  const replaced = yield* tx.taskOlderUnstarted(task.tenant, task.topic, task.version);
  const data: Record<string, unknown> = { version: task.version, priority: task.priority, tier: task.tier, replaced: replaced.map((old) => old.id) };
  if (task.needs !== null) data.needs = task.needs;
  if (task.critical === 1) data.critical = true;
  const created = yield* createTask(tx, at, columns, 'ready', data, 'enqueued');
  if (created === undefined) return undefined;
  // Q2: older versions that have not started never run; running ones finish as stale_input.
  for (const old of replaced) {
    yield* transition(context, tx, at, { by: 'other', event: 'supersede', row: old, to: 'superseded' }, { byTaskId: created.taskId }, 'replaced');
  }
  // A2 (Q3): a replacement frees the slot it takes, so it is accepted even when the queue is full; a new
  // topic meets the admission policy with the live count it found (the new task not counted).
  const paused = (yield* tx.tenantPauseList()).some((row) => row.tenant === task.tenant);
  const decision = decide(context.admission, {
    stage: 'enqueue',
    task: { tenant: task.tenant, priority: task.priority, critical: task.critical === 1, deadline: task.deadline },
    tenantPaused: paused,
    inFlight: (yield* tx.counterLive()) - 1,
    capacity: config.capacity,
    criticalHeadroom: config.criticalHeadroom,
    replacesWaiting: replaced.length > 0,
    now: at,
  });
  if (decision.action === 'REJECT') throw new QueueFull(decision);
  // A3: a tenant back from idle earns no credit for its absence.
  if (config.fairness === 'fair_share') {
    const clamped = yield* clampReturning(context, tx, task.tenant, created.taskId);
    if (clamped !== undefined) data.serviceClamp = clamped;
  }
  if (decision.action === 'DEFER') {
    const reason = decision.reason as string;
    data.admission = { action: 'DEFER', reason };
    yield* tx.taskDeferredSet(created.taskId, reason);
    yield* tx.admissionInsert({ at, action: 'DEFER', reason, tenant: task.tenant, task_id: created.taskId, retry_at: null, budget: null });
  }
  yield* created.announce();
  // W1: idle workers are told once this commits; a paused tenant's or a deferred task is not claimable yet.
  if (!paused && decision.action !== 'DEFER') tx.txMarkClaimable();
  // A6: under cancel_in_progress a newer version persists a cancel of the session's running one (Q13);
  // it waits (session_busy) until that run has ended.
  if (config.sessionPolicy === 'cancel_in_progress') {
    for (const holder of yield* tx.sessionOlderHolders(task.tenant, task.topic, task.version)) {
      const seq = yield* tx.taskRequestCancel(holder.id);
      if (seq !== undefined) yield* emit(tx, holder.id, seq, 'cancel_requested', at, { state: holder.state, source: 'newer_version', byTaskId: created.taskId });
    }
  }
  return { taskId: created.taskId, status: replaced.length > 0 ? 'replaced' : 'enqueued' };
}
