import type { Fence, HoldClosure, MovableRow, NewTask, StoreTx, Step } from '../store/store.ts';
import type { QueueContext } from './context.ts';
import { InvariantError } from './errors.ts';
import { releaseReservations } from './budgets.ts';
import { correctAtEnd } from './fair-share.ts';
import { isHoldOpen } from './holds.ts';
import { closureFor, deadLetterIfExhausted, recordCredit } from './run-end.ts';
import { edgeFor, isLive, isTerminal, type TransitionEvent } from './states.ts';
import type { TaskState } from './types.ts';

/** Who moves the task, and what the write must re-check: the fence, or state and generation. */
export type TransitionRequest =
  | {
      /** The lease holder moves its own running task (Q8). */
      by: 'holder';
      event: TransitionEvent;
      row: MovableRow & { event_seq: number };
      fence: Fence;
      to: TaskState;
      /** Written only by complete (Q12), kept otherwise. */
      result?: string;
      outcome?: string | null;
      errorClass?: string | null;
      errorMessage?: string | null;
      notBefore?: number;
    }
  | {
      /** A claim of a ready task (Q5, Q7). */
      by: 'claim';
      row: MovableRow & { event_seq: number };
      workerId: string;
      leaseUntil: number;
    }
  | {
      /** Anyone else: expiry, confirmation, cancel, reconciliation, claim-time ends, supersede. */
      by: 'other';
      event: TransitionEvent;
      row: MovableRow;
      to: TaskState;
      outcome?: string | null;
    };

/**
 * The one function through which every state change goes. It checks the edge against the table in
 * states.ts, writes the change (StoreTx.taskWriteState is the only statement that writes tasks.state),
 * keeps the live count exact (Q3), appends the edge's event in the same transaction (Q15), and does
 * what an end of a run does there too: the hold closes in the statement that ends the run (R4), and a
 * task that ran out of attempts, deliveries or retry age goes to the dead-letter table (R6).
 *
 * Every caller has read `row` in this transaction; the write re-checks it in its WHERE clause (the
 * fence for a holder, state and generation otherwise), so a miss is a bug, never a race.
 */
export function* transition(
  context: QueueContext,
  tx: StoreTx,
  at: number,
  request: TransitionRequest,
  data: Record<string, unknown>,
  /** Why the run ended, for the hold and the dead letter; defaults to data.reason, then the edge's event. */
  reason?: string,
): Step<void> {
  const { row } = request;
  const to = request.by === 'claim' ? 'running' : request.to;
  const event = request.by === 'claim' ? 'claim' : request.event;
  const edge = edgeFor(row.id, event, row.state, to);
  const ends = isTerminal(to);
  const why = reason ?? String(data.reason ?? edge.records);
  const hold: HoldClosure | null = ends && isHoldOpen(row.hold_state) ? yield* closureFor(context, tx, row.id, why) : null;
  const eventSeq = yield* write(tx, at, request, to, ends, hold);
  if (eventSeq === undefined) throw new InvariantError(`task ${row.id} changed during its own transaction (${event} ${row.state} -> ${to})`);
  const delta = (isLive(to) ? 1 : 0) - (isLive(row.state) ? 1 : 0);
  if (delta !== 0) yield* tx.counterLiveAdjust(delta);
  if (hold !== null) yield* recordCredit(tx, row.id, row.tenant, hold, at);
  // A1: the edge that frees the slot ends the attempt's hold on its budget units: the unused part goes
  // back once (an uncertain task, whose edge keeps the slot, keeps them). Without budgets nothing is read.
  const units = edge.slot === 'free' && hasBudgets(context) ? yield* releaseReservations(context.config, tx, row.id, at) : undefined;
  // A3: under fair share the tenant's service is corrected to the run's checkpointed tokens.
  const serviceDelta = edge.slot === 'free' && context.config.fairness === 'fair_share' ? yield* correctAtEnd(tx, row) : 0;
  const settlement = ends ? (hold?.state ?? 'already_closed') : undefined;
  const withService = serviceDelta === 0 ? data : { ...data, serviceDelta };
  const withUnits = units === undefined ? withService : { ...withService, released: units.released, consumed: units.consumed };
  const logged = settlement === undefined ? { from: row.state, to, ...withUnits } : { from: row.state, to, ...withUnits, settlement };
  const by = request.by === 'holder' ? request.fence : request.by === 'claim' ? { workerId: request.workerId, generation: row.generation + 1 } : undefined;
  yield* tx.eventAppend(row.id, eventSeq, edge.records, at, JSON.stringify(logged), by?.workerId ?? null, by?.generation ?? null);
  if (to === 'failed') yield* deadLetterIfExhausted(tx, row.id, why, at);
  // W1: a task back in ready (a retry due now, a release, an interrupt, a confirmation, a re-queue) wakes
  // idle workers once this commits. A retry with a backoff is claimable only later: the workers' bounded
  // poll finds it then.
  if (to === 'ready' && (request.by !== 'holder' || (request.notBefore ?? at) <= at)) tx.txMarkClaimable();
}

function write(tx: StoreTx, at: number, request: TransitionRequest, to: TaskState, ends: boolean, hold: HoldClosure | null): Step<number | undefined> {
  if (request.by === 'claim') {
    const { row } = request;
    return tx.taskWriteState({
      kind: 'claim',
      id: row.id,
      previousGeneration: row.generation,
      workerId: request.workerId,
      generation: row.generation + 1,
      leaseUntil: request.leaseUntil,
      eventSeq: row.event_seq + 1,
      now: at,
    });
  }
  if (request.by === 'holder') {
    const { row } = request;
    return tx.taskWriteState({
      kind: 'holder',
      fence: request.fence,
      to,
      eventSeq: row.event_seq + 1,
      result: request.result ?? null,
      outcome: request.outcome ?? null,
      errorClass: request.errorClass ?? null,
      errorMessage: request.errorMessage ?? null,
      // A retry sets its backoff; for every other move not_before no longer matters.
      notBefore: request.notBefore ?? at,
      finishedAt: to === 'ready' ? null : at,
      hold,
    });
  }
  const { row } = request;
  return tx.taskWriteState({
    kind: 'other',
    id: row.id,
    from: row.state,
    generation: row.generation,
    to,
    outcome: request.outcome ?? null,
    finishedAt: ends ? at : null,
    keepLease: to === 'uncertain',
    hold,
  });
}

/**
 * Creates a task (Q1): the enqueue edge, or a late version that is stored already superseded (Q2),
 * its hold closed in the same insert. Returns undefined when the key exists (the unique key said no).
 * The creation's event is appended by `announce()`, which the caller runs once the versions this task
 * replaces have ended, so the log reads in the order the changes were decided.
 */
export function* createTask(
  tx: StoreTx,
  at: number,
  task: Omit<NewTask, 'state' | 'now' | 'hold'>,
  to: 'ready' | 'superseded',
  data: Record<string, unknown>,
  reason: string,
): Step<{ taskId: number; announce: () => Step<void> } | undefined> {
  const edge = edgeFor(0, to === 'ready' ? 'enqueue' : 'supersede', null, to);
  // A task created ended never checkpointed, so its hold is released with nothing charged (R4).
  const hold: HoldClosure | null = to === 'ready' ? null : { state: 'released', charged: 0, usage: null, reason };
  const taskId = yield* tx.taskCreate({ ...task, state: to, now: at, hold });
  if (taskId === undefined) return undefined;
  if (isLive(to)) yield* tx.counterLiveAdjust(1);
  if (hold !== null) yield* recordCredit(tx, taskId, task.tenant, hold, at);
  // The event is built when announced, so what the caller decided after the insert (A2's admission) is in it.
  const logged = () => (hold === null ? { to, ...data } : { to, ...data, settlement: hold.state });
  return { taskId, announce: () => tx.eventAppend(taskId, 1, edge.records, at, JSON.stringify(logged()), null, null) };
}

/** Whether any budget is configured: without one the budget statements are never run (A1 costs nothing unused). */
export function hasBudgets(context: QueueContext): boolean {
  for (const _ in context.config.budgets) return true;
  return false;
}
