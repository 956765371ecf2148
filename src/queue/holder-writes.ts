import { canonicalJson } from '../canonical-json.ts';
import type { CompletingRow, Step, StoreTx } from '../store/store.ts';
import { STALE_LEASE, fence, holder, holdsLease, write, type Holder, type QueueContext } from './context.ts';
import { InputError } from './errors.ts';
import { retryBackoffMs } from './scoring.ts';
import { transition } from './transition.ts';
import {
  FATAL_ERROR_CLASSES,
  RETRYABLE_ERROR_CLASSES,
  type AppendEventResult,
  type ErrorClass,
  type CompleteResult,
  type FailResult,
  type FailureReport,
  type HeartbeatResult,
  type StaleLease,
} from './types.ts';

/**
 * The writes a lease holder makes. Each is fenced (Q8): it succeeds only while the task is running,
 * held by this worker, at this generation, with its lease unexpired; otherwise `stale_lease` and
 * nothing changes anywhere. The fence is in every UPDATE's WHERE clause, so it holds even if a
 * caller shares the database with other writers.
 */

/** Q9: renews the lease to now + leaseMs; tells the worker whether a cancel was requested (Q13). */
export function heartbeat(context: QueueContext, taskId: number, workerId: string, generation: number): Promise<HeartbeatResult> {
  const who = holder(taskId, workerId, generation);
  return write(context, 'heartbeat', (tx, at) => heartbeatIn(context, tx, at, who));
}

function* heartbeatIn(context: QueueContext, tx: StoreTx, at: number, who: Holder): Step<HeartbeatResult> {
  const leaseUntil = at + context.config.leaseMs;
  const renewed = yield* tx.holderHeartbeat(fence(who, at), leaseUntil);
  if (renewed === undefined) return STALE_LEASE;
  return { ok: true, leaseUntil, cancelRequested: renewed.cancelRequested };
}

/**
 * Ends the run `done`. Q2: if a newer version of the topic is queued, the result is kept with outcome
 * `stale_input`. Q14: past the deadline the result is not committed and the task ends `expired`.
 * Q13: if a cancel was requested but this commit came first, completion wins and the event says so.
 */
export function complete(context: QueueContext, taskId: number, workerId: string, generation: number, result: unknown): Promise<CompleteResult> {
  const who = holder(taskId, workerId, generation);
  const resultJson = serialise(result);
  return write(context, 'complete', (tx, at) => completeIn(context, tx, at, who, resultJson), { holderRow: who.taskId });
}

function* completeIn(context: QueueContext, tx: StoreTx, at: number, who: Holder, resultJson: string): Step<CompleteResult> {
  const row = yield* tx.holderRow(who.taskId);
  if (!holdsLease(row, who.workerId, who.generation, at)) return STALE_LEASE;
  if (row.deadline !== null && row.deadline <= at) {
    yield* endAsHolder(context, tx, row, who, at, 'complete', 'expired', { when: 'complete', deadline: row.deadline }, {});
    return { ok: false, error: 'expired', message: `deadline ${row.deadline} passed before the result was committed` };
  }
  const outcome = (yield* tx.taskNewerVersionExists(row.tenant, row.topic, row.version)) ? 'stale_input' : 'done';
  // R4: the hold settles here, in the statement that ends the run. A hold is closed already only if
  // it was released while the run sat uncertain past holdTtlMs; then this run ends without a second
  // settlement.
  yield* transition(
    context,
    tx,
    at,
    { by: 'holder', event: 'complete', row, fence: fence(who, at), to: 'done', result: resultJson, outcome },
    { outcome, workerId: who.workerId, generation: who.generation, cancelRequested: row.cancel_requested === 1 },
    'completed',
  );
  return { ok: true, outcome };
}

/**
 * Q16: a retryable failure goes back to ready after a jittered exponential backoff, while attempts,
 * deliveries and retry age allow; anything else ends failed. A pending cancel wins over a retry.
 */
export function fail(context: QueueContext, taskId: number, workerId: string, generation: number, failure: FailureReport): Promise<FailResult> {
  const who = holder(taskId, workerId, generation);
  const errorClass = failure?.errorClass;
  const retryable = (RETRYABLE_ERROR_CLASSES as readonly string[]).includes(errorClass);
  if (!retryable && !(FATAL_ERROR_CLASSES as readonly string[]).includes(errorClass)) {
    return Promise.resolve({
      ok: false,
      error: 'invalid_input',
      field: 'errorClass',
      message: `errorClass must be one of ${[...RETRYABLE_ERROR_CLASSES, ...FATAL_ERROR_CLASSES].join(', ')}; got ${String(errorClass)}`,
    });
  }
  const message = typeof failure.message === 'string' ? failure.message : String(failure.message ?? '');
  return write(context, 'fail', (tx, at) => failIn(context, tx, at, who, { errorClass, message, retryable }), { holderRow: who.taskId });
}

function* failIn(context: QueueContext, tx: StoreTx, at: number, who: Holder, { errorClass, message, retryable }: { errorClass: ErrorClass; message: string; retryable: boolean }): Step<FailResult> {
  const row = yield* tx.holderRow(who.taskId);
  if (!holdsLease(row, who.workerId, who.generation, at)) return STALE_LEASE;
  const recorded = { errorClass, errorMessage: message };
  if (row.cancel_requested === 1) {
    yield* endAsHolder(context, tx, row, who, at, 'fail', 'cancelled', { errorClass, message }, { outcome: 'cancelled', ...recorded });
    return { ok: true, next: 'cancelled' };
  }
  const decision = retryDecision(context, row, retryable, at);
  if (decision.retry) {
    const notBefore = at + decision.backoffMs;
    yield* endAsHolder(context, tx, row, who, at, 'fail', 'ready', { errorClass, message, backoffMs: decision.backoffMs, attempt: row.attempts }, { ...recorded, notBefore });
    // A5: retries by error class, counted in the retry's transaction.
    yield* tx.signalBump(`retry:${errorClass}`, 1);
    return { ok: true, next: 'retry', notBefore };
  }
  yield* endAsHolder(context, tx, row, who, at, 'fail', 'failed', { errorClass, message, reason: decision.reason }, recorded);
  return { ok: true, next: 'failed' };
}

function retryDecision(context: QueueContext, row: CompletingRow, retryable: boolean, at: number) {
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
): Promise<AppendEventResult> {
  const who = holder(taskId, workerId, generation);
  if (typeof type !== 'string' || type === '') throw new InputError('type', 'expected a non-empty string');
  const dataJson = serialise(data, 'data');
  return write(context, 'appendEvent', (tx, at) => appendEventIn(tx, at, who, type, dataJson));
}

function* appendEventIn(tx: StoreTx, at: number, who: Holder, type: string, dataJson: string): Step<AppendEventResult> {
  const seq = yield* tx.holderBumpEventSeq(fence(who, at));
  if (seq === undefined) return STALE_LEASE;
  yield* tx.eventAppend(who.taskId, seq, type, at, dataJson, who.workerId, who.generation);
  return { ok: true, seq };
}

/** Q13: the holder saw cancelRequested at a step boundary and ends the run cancelled. */
export function acknowledgeCancel(
  context: QueueContext,
  taskId: number,
  workerId: string,
  generation: number,
): Promise<{ ok: true } | StaleLease | { ok: false; error: 'not_requested'; message: string }> {
  const who = holder(taskId, workerId, generation);
  return write(context, 'acknowledgeCancel', (tx, at) => acknowledgeCancelIn(context, tx, at, who), { holderRow: who.taskId });
}

function* acknowledgeCancelIn(context: QueueContext, tx: StoreTx, at: number, who: Holder): Step<{ ok: true } | StaleLease | { ok: false; error: 'not_requested'; message: string }> {
  const row = yield* tx.holderRow(who.taskId);
  if (!holdsLease(row, who.workerId, who.generation, at)) return STALE_LEASE;
  // Q13: a run ends cancelled only because someone asked; the request is what was persisted.
  if (row.cancel_requested !== 1) return { ok: false, error: 'not_requested', message: `task ${who.taskId} has no cancel request` };
  yield* endAsHolder(context, tx, row, who, at, 'cancel', 'cancelled', { source: 'worker' }, { outcome: 'cancelled' });
  return { ok: true };
}

interface HolderFields {
  outcome?: string | null;
  errorClass?: string | null;
  errorMessage?: string | null;
  notBefore?: number;
}

/**
 * The holder moves its running task (the caller checked the lease in this transaction). The event
 * names the holder first, then what the caller adds; shared by fail, acknowledgeCancel and R8's
 * interrupt (src/runs/interrupt.ts).
 */
export function* endAsHolder(
  context: QueueContext,
  tx: StoreTx,
  row: CompletingRow,
  who: Holder,
  at: number,
  event: 'complete' | 'fail' | 'cancel' | 'interrupt',
  to: 'ready' | 'failed' | 'cancelled' | 'expired',
  data: Record<string, unknown>,
  fields: HolderFields,
): Step<void> {
  yield* transition(
    context,
    tx,
    at,
    { by: 'holder', event, row, fence: fence(who, at), to, ...fields },
    { workerId: who.workerId, generation: who.generation, ...data },
  );
}

/** `field` names the argument in the InputError, so a caller can tell a bad result from bad event data. */
export function serialise(value: unknown, field: 'result' | 'data' = 'result'): string {
  try {
    return canonicalJson(value === undefined ? null : value);
  } catch (error) {
    throw new InputError(field, `is not JSON-serialisable: ${(error as Error).message}`);
  }
}

