import type { Step, StoreTx } from '../store/store.ts';
import { emit, requireGeneration, requireTaskId, write, type QueueContext } from './context.ts';
import { isTerminal } from './states.ts';
import { transition } from './transition.ts';
import type { CancelResult, ConfirmStoppedResult, RedriveResult } from './types.ts';

/** Sources that must never be able to free an uncertain slot (Q11): they run inside the task. */
const UNTRUSTED_SOURCES = /^(model|tool)\b/i;

/**
 * Q11: the trusted execution layer confirms that the worker of an uncertain task has really stopped.
 * The task goes back to ready for another attempt, or ends failed once attempts or deliveries are
 * spent; a pending cancel or a passed deadline ends it there instead.
 */
export function confirmStopped(context: QueueContext, taskIdArgument: number, generationArgument: number, source: string): Promise<ConfirmStoppedResult> {
  const taskId = requireTaskId(taskIdArgument);
  const generation = requireGeneration(generationArgument);
  if (typeof source !== 'string' || source.trim() === '' || UNTRUSTED_SOURCES.test(source)) {
    return Promise.resolve({
      ok: false,
      error: 'invalid_input',
      message: `source must name the trusted execution layer (e.g. 'supervisor', 'operator'), got ${JSON.stringify(source)}`,
    });
  }
  return write(context, 'confirmStopped', (tx, at) => confirmStoppedIn(context, tx, at, taskId, generation, source));
}

function* confirmStoppedIn(context: QueueContext, tx: StoreTx, at: number, taskId: number, generation: number, source: string): Step<ConfirmStoppedResult> {
  const { config } = context;
  const row = yield* tx.taskById(taskId);
  if (row === undefined) return { ok: false, error: 'not_found', message: `no task ${taskId}` };
  if (row.state !== 'uncertain') return { ok: false, error: 'not_uncertain', message: `task ${taskId} is ${row.state}` };
  if (row.generation !== generation) {
    return { ok: false, error: 'stale_generation', message: `task ${taskId} is at generation ${row.generation}, not ${generation}` };
  }
  let next: 'ready' | 'failed' | 'cancelled' | 'expired' = 'ready';
  let reason = 'stopped';
  if (row.cancel_requested === 1) next = 'cancelled';
  else if (row.deadline !== null && row.deadline <= at) next = 'expired';
  else if (row.attempts >= config.maxAttempts) [next, reason] = ['failed', 'attempts_exhausted'];
  else if (row.deliveries >= config.maxDeliveries) [next, reason] = ['failed', 'deliveries_exhausted'];
  yield* transition(
    context,
    tx,
    at,
    { by: 'other', event: 'confirmStopped', row, to: next, outcome: next === 'cancelled' ? 'cancelled' : null },
    { source, generation, reason },
  );
  return { ok: true, next };
}

/**
 * Q13: a persisted cancel. Ready ends cancelled at once; running or uncertain records the request,
 * which the holder sees at its next step boundary (or confirmStopped applies). A task that already
 * ended is not changed and the caller is told which state won.
 */
export function cancel(context: QueueContext, taskIdArgument: number): Promise<CancelResult> {
  const taskId = requireTaskId(taskIdArgument);
  return write(context, 'cancel', (tx, at) => cancelIn(context, tx, at, taskId));
}

function* cancelIn(context: QueueContext, tx: StoreTx, at: number, taskId: number): Step<CancelResult> {
  const row = yield* tx.taskById(taskId);
  if (row === undefined) return { ok: false, error: 'not_found', message: `no task ${taskId}` };
  const { state } = row;
  if (isTerminal(state)) return { ok: false, error: 'already_terminal', state, message: `task ${taskId} already ended ${state}` };
  if (state === 'ready') {
    yield* transition(context, tx, at, { by: 'other', event: 'cancel', row, to: 'cancelled', outcome: 'cancelled' }, { source: 'cancel' });
    return { ok: true, state: 'cancelled' };
  }
  const seq = yield* tx.taskRequestCancel(taskId);
  if (seq !== undefined) yield* emit(tx, taskId, seq, 'cancel_requested', at, { state });
  return { ok: true, state: 'cancel_requested' };
}

/**
 * O1: an operator sends a dead letter (R6) back to ready, through the state machine's one operator
 * edge (states.ts REOPENING_EDGES). The task gets a fresh set of attempts and deliveries, and its retry
 * age restarts at its next claim, as a new task's does; its generation goes on (fencing never goes
 * back), so no lease of its earlier runs can write again. Its dead letter leaves the table and the
 * `redriven` event keeps what it said (reason, reasons, the attempts and deliveries it had); a task
 * dead-lettered again lists its whole reason history, the earlier deliveries' included. Its credits
 * were settled when it failed (R4: one settlement per run), so what the redriven run uses is recorded
 * by its checkpoints but not charged again. Refused, changing nothing: a task with no dead letter, one
 * whose topic has a newer version (that version is the work to run), or a queue at capacity (Q3).
 */
export function redrive(context: QueueContext, taskIdArgument: number): Promise<RedriveResult> {
  const taskId = requireTaskId(taskIdArgument);
  return write(context, 'redrive', (tx, at) => redriveIn(context, tx, at, taskId));
}

function* redriveIn(context: QueueContext, tx: StoreTx, at: number, taskId: number): Step<RedriveResult> {
  const row = yield* tx.deadLetterTask(taskId);
  if (row === undefined) return { ok: false, error: 'not_dead_lettered', message: `task ${taskId} is not a dead letter (only a failed task in deadLetters() can be redriven)` };
  if (yield* tx.taskNewerVersionExists(row.tenant, row.topic, row.version)) {
    return { ok: false, error: 'superseded', message: `task ${taskId}: a newer version of its topic exists; that version is the work to run` };
  }
  if ((yield* tx.counterLive()) >= context.config.capacity) return { ok: false, error: 'queue_full', message: `the queue holds ${context.config.capacity} live tasks (capacity)` };
  const { reason, reasons, attempts, deliveries } = row;
  yield* transition(context, tx, at, { by: 'other', event: 'redrive', row, to: 'ready' }, { source: 'operator', reason, reasons: JSON.parse(reasons) as unknown, attempts, deliveries });
  yield* tx.taskResetForRedrive(taskId, at);
  return { ok: true, state: 'ready' };
}
