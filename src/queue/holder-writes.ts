import { canonicalJson } from '../canonical-json.ts';
import type { CompletingRow, TaskRow } from '../store/statements.ts';
import {
  STALE_LEASE,
  emit,
  holdsLease,
  noteLiveness,
  requireGeneration,
  requireTaskId,
  requireWorkerId,
  type QueueContext,
} from './context.ts';
import { InputError, InvariantError } from './errors.ts';
import { retryBackoffMs } from './scoring.ts';
import { recordCredit, settlementFor } from '../runs/settlement.ts';
import { afterEnd, endRun } from '../runs/terminal.ts';
import { assertTransition } from './states.ts';
import {
  FATAL_ERROR_CLASSES,
  RETRYABLE_ERROR_CLASSES,
  type AppendEventResult,
  type CompleteResult,
  type FailResult,
  type FailureReport,
  type HeartbeatResult,
  type StaleLease,
  type TaskState,
} from './types.ts';

/**
 * The writes a lease holder makes. Each is fenced (Q8): it succeeds only while the task is running,
 * held by this worker, at this generation, with its lease unexpired; otherwise `stale_lease` and
 * nothing changes anywhere. The fence is in every UPDATE's WHERE clause, so it holds even if a
 * caller shares the handle with other writers.
 */
export interface Holder {
  taskId: number;
  workerId: string;
  generation: number;
}

function holder(taskId: unknown, workerId: unknown, generation: unknown): Holder {
  return { taskId: requireTaskId(taskId), workerId: requireWorkerId(workerId), generation: requireGeneration(generation) };
}

function fence(who: Holder, at: number) {
  return { id: who.taskId, workerId: who.workerId, generation: who.generation, now: at };
}

/** Q9: renews the lease to now + leaseMs; tells the worker whether a cancel was requested (Q13). */
export function heartbeat(context: QueueContext, taskId: number, workerId: string, generation: number): HeartbeatResult {
  const who = holder(taskId, workerId, generation);
  return context.write('heartbeat', (at) => {
    const leaseUntil = at + context.config.leaseMs;
    const renewed = context.statements.heartbeat.get({ ...fence(who, at), leaseUntil }) as { cancel_requested: number } | undefined;
    if (renewed === undefined) return STALE_LEASE;
    return { ok: true, leaseUntil, cancelRequested: renewed.cancel_requested === 1 };
  });
}

/**
 * Ends the run `done`. Q2: if a newer version of the topic is queued, the result is kept with outcome
 * `stale_input`. Q14: past the deadline the result is not committed and the task ends `expired`.
 * Q13: if a cancel was requested but this commit came first, completion wins and the event says so.
 */
export function complete(context: QueueContext, taskId: number, workerId: string, generation: number, result: unknown): CompleteResult {
  const who = holder(taskId, workerId, generation);
  const resultJson = serialiseResult(result);
  return context.write('complete', (at) => {
    const { statements } = context;
    const row = statements.completingRow.get(who.taskId) as CompletingRow | undefined;
    if (!holdsLease(row, who.workerId, who.generation, at)) return STALE_LEASE;
    if (row.deadline !== null && row.deadline <= at) {
      leaveRunning(context, row, who, at, 'expired', 'expired', { when: 'complete', deadline: row.deadline }, { outcome: null });
      return { ok: false, error: 'expired', message: `deadline ${row.deadline} passed before the result was committed` };
    }
    const outcome = statements.newerVersionExists.get(row.tenant, row.topic, row.version) === undefined ? 'done' : 'stale_input';
    const eventSeq = row.event_seq + 1;
    // R4: the hold settles here, in the statement that ends the run (held -> settled or released). A
    // hold is closed already only if it was released while the run sat uncertain past holdTtlMs; then
    // this run ends without a second settlement.
    const settlement = row.hold_state === 'held' ? settlementFor(context, row.id) : undefined;
    const written =
      settlement === undefined
        ? statements.completeTaskHoldClosed.run({ ...fence(who, at), result: resultJson, eventSeq, outcome })
        : statements.completeTask.run({
            ...fence(who, at),
            result: resultJson,
            eventSeq,
            outcome,
            holdState: settlement.state,
            charged: settlement.charged,
            usage: settlement.usage,
          });
    if (written.changes !== 1) throw new InvariantError(`task ${row.id} changed between its read and its completion in one transaction`);
    noteLiveness(context, 'running', 'done');
    if (settlement !== undefined) recordCredit(context, row.id, row.tenant, settlement, at);
    emit(
      context,
      row.id,
      eventSeq,
      'completed',
      at,
      {
        from: 'running',
        to: 'done',
        outcome,
        workerId: who.workerId,
        generation: who.generation,
        cancelRequested: row.cancel_requested === 1,
        settlement: settlement?.state ?? 'already_closed',
      },
      who,
    );
    return { ok: true, outcome };
  });
}

/**
 * Q16: a retryable failure goes back to ready after a jittered exponential backoff, while attempts,
 * deliveries and retry age allow; anything else ends failed. A pending cancel wins over a retry.
 */
export function fail(context: QueueContext, taskId: number, workerId: string, generation: number, failure: FailureReport): FailResult {
  const who = holder(taskId, workerId, generation);
  const errorClass = failure?.errorClass;
  const retryable = (RETRYABLE_ERROR_CLASSES as readonly string[]).includes(errorClass);
  if (!retryable && !(FATAL_ERROR_CLASSES as readonly string[]).includes(errorClass)) {
    return {
      ok: false,
      error: 'invalid_input',
      field: 'errorClass',
      message: `errorClass must be one of ${[...RETRYABLE_ERROR_CLASSES, ...FATAL_ERROR_CLASSES].join(', ')}; got ${String(errorClass)}`,
    };
  }
  const message = typeof failure.message === 'string' ? failure.message : String(failure.message ?? '');
  return context.write('fail', (at) => {
    const row = context.statements.taskById.get(who.taskId) as TaskRow | undefined;
    if (!holdsLease(row, who.workerId, who.generation, at)) return STALE_LEASE;
    const failure = { errorClass, errorMessage: message };
    if (row.cancel_requested === 1) {
      leaveRunning(context, row, who, at, 'cancelled', 'cancelled', { errorClass, message }, { outcome: 'cancelled', ...failure });
      return { ok: true, next: 'cancelled' };
    }
    const decision = retryDecision(context, row, retryable, at);
    if (decision.retry) {
      leaveRunning(context, row, who, at, 'ready', 'retry_scheduled', { errorClass, message, backoffMs: decision.backoffMs, attempt: row.attempts }, {
        ...failure,
        notBefore: at + decision.backoffMs,
      });
      return { ok: true, next: 'retry', notBefore: at + decision.backoffMs };
    }
    leaveRunning(context, row, who, at, 'failed', 'failed', { errorClass, message, reason: decision.reason }, failure);
    return { ok: true, next: 'failed' };
  });
}

function retryDecision(context: QueueContext, row: TaskRow, retryable: boolean, at: number) {
  const { config } = context;
  if (!retryable) return { retry: false as const, reason: 'not_retryable' };
  if (row.attempts >= config.maxAttempts) return { retry: false as const, reason: 'attempts_exhausted' };
  if (row.deliveries >= config.maxDeliveries) return { retry: false as const, reason: 'deliveries_exhausted' };
  // The jitter is drawn from the injected Random, so a seed reproduces every backoff.
  const backoffMs = retryBackoffMs(row.attempts, context.random.next(), config);
  if (at + backoffMs - (row.first_claimed_at ?? at) > config.maxRetryAgeMs) return { retry: false as const, reason: 'retry_age_exceeded' };
  if (row.deadline !== null && row.deadline <= at + backoffMs) return { retry: false as const, reason: 'deadline_before_retry' };
  return { retry: true as const, backoffMs };
}

/** A fenced event from the lease holder (Q8), e.g. a tool call it made. */
export function appendEvent(
  context: QueueContext,
  taskId: number,
  workerId: string,
  generation: number,
  type: string,
  data: Record<string, unknown> = {},
): AppendEventResult {
  const who = holder(taskId, workerId, generation);
  if (typeof type !== 'string' || type === '') throw new InputError('type', 'expected a non-empty string');
  const dataJson = serialiseResult(data, 'data');
  return context.write('appendEvent', (at) => {
    const bumped = context.statements.bumpEventSeqFenced.get(fence(who, at)) as { event_seq: number } | undefined;
    if (bumped === undefined) return STALE_LEASE;
    context.statements.insertEvent.run(who.taskId, bumped.event_seq, type, at, dataJson, who.workerId, who.generation);
    return { ok: true, seq: bumped.event_seq };
  });
}

/** Q13: the holder saw cancelRequested at a step boundary and ends the run cancelled. */
export function acknowledgeCancel(
  context: QueueContext,
  taskId: number,
  workerId: string,
  generation: number,
): { ok: true } | StaleLease | { ok: false; error: 'not_requested'; message: string } {
  const who = holder(taskId, workerId, generation);
  return context.write('acknowledgeCancel', (at) => {
    const row = context.statements.taskById.get(who.taskId) as TaskRow | undefined;
    if (!holdsLease(row, who.workerId, who.generation, at)) return STALE_LEASE;
    // Q13: a run ends cancelled only because someone asked; the request is what was persisted.
    if (row.cancel_requested !== 1) return { ok: false, error: 'not_requested', message: `task ${who.taskId} has no cancel request` };
    endCancelled(context, row, who, at, { source: 'worker' });
    return { ok: true };
  });
}

/**
 * Q13: the holder's run ends `cancelled` because a cancel was requested, in the caller's transaction
 * (the caller checked the lease). Shared by acknowledgeCancel and by R8's interrupt, which must not
 * hand a task with a pending cancel back to ready.
 */
export function endCancelled(context: QueueContext, row: Pick<TaskRow, 'id'>, who: Holder, at: number, data: Record<string, unknown>): void {
  leaveRunning(context, row, who, at, 'cancelled', 'cancelled', data, { outcome: 'cancelled' });
}

interface LeaveFields {
  outcome?: string | null;
  errorClass?: string | null;
  errorMessage?: string | null;
  notBefore?: number;
}

function leaveRunning(
  context: QueueContext,
  row: Pick<TaskRow, 'id'>,
  who: Holder,
  at: number,
  to: TaskState,
  eventType: string,
  data: Record<string, unknown>,
  fields: LeaveFields,
): void {
  assertTransition(row.id, 'running', to);
  const reason = String(data.reason ?? eventType);
  const ending = to === 'ready' ? {} : endRun(context, row.id, to, at, reason);
  const left = context.statements.leaveRunning.get({
    ...fence(who, at),
    state: to,
    outcome: fields.outcome ?? null,
    errorClass: fields.errorClass ?? null,
    errorMessage: fields.errorMessage ?? null,
    // A retry sets its backoff; for every other move not_before no longer matters.
    notBefore: fields.notBefore ?? at,
    finishedAt: to === 'ready' ? null : at,
  }) as { event_seq: number } | undefined;
  if (left === undefined) throw new InvariantError(`task ${row.id}: fenced write lost its lease inside its own transaction`);
  noteLiveness(context, 'running', to);
  emit(context, row.id, left.event_seq, eventType, at, { from: 'running', to, workerId: who.workerId, generation: who.generation, ...data, ...ending }, who);
  if (to !== 'ready') afterEnd(context, row.id, to, at, reason);
}

/** `field` names the argument in the InputError, so a caller can tell a bad result from bad event data. */
function serialiseResult(value: unknown, field: 'result' | 'data' = 'result'): string {
  try {
    return canonicalJson(value === undefined ? null : value);
  } catch (error) {
    throw new InputError(field, `is not JSON-serialisable: ${(error as Error).message}`);
  }
}
