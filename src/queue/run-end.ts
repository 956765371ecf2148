import type { HoldClosure, StoreTx, Step } from '../store/store.ts';
import type { QueueContext } from './context.ts';
import { HOLD_OPEN, holdEdgeFor } from './holds.ts';
import type { Usage } from './types.ts';

/**
 * What an edge that ends a run does in its transaction, besides the state change (R4, R6). The hold
 * of a run closes exactly once: settled with the usage its checkpoints recorded (usage accumulates
 * only there), or released when the run never checkpointed. The closing statement is conditional
 * (`hold_state = 'held'`), so a hold already closed is never closed again and no second ledger row is
 * written.
 */

/** How many dead letters are kept for people to inspect (R6); the oldest go first. */
export const DEAD_LETTERS_KEPT = 1_000;

/** Reasons that mean the task ran out of deliveries, attempts or retry age, rather than failing on purpose. */
export const EXHAUSTION_REASONS: ReadonlySet<string> = new Set(['attempts_exhausted', 'deliveries_exhausted', 'retry_age_exceeded']);

export function creditsFor(usage: Usage, tokensPerCredit: number): number {
  return Math.ceil((usage.inputTokens + usage.outputTokens) / tokensPerCredit);
}

/** How closing the hold now would go: settle the checkpointed usage, or release if there is none. */
export function* closureFor(context: QueueContext, tx: StoreTx, taskId: number, reason: string): Step<HoldClosure> {
  const usageJson = yield* tx.checkpointLastUsage(taskId);
  // Each closure is an edge of the hold table (holds.ts) out of its open state.
  if (usageJson === undefined) return { state: holdEdgeFor(taskId, HOLD_OPEN, 'released').to, charged: 0, usage: null, reason };
  return { state: holdEdgeFor(taskId, HOLD_OPEN, 'settled').to, charged: creditsFor(JSON.parse(usageJson) as Usage, context.config.tokensPerCredit), usage: usageJson, reason };
}

/** The ledger entry of a hold just closed, in the closing transaction. */
export function* recordCredit(tx: StoreTx, taskId: number, tenant: string, hold: HoldClosure, at: number): Step<void> {
  yield* tx.creditInsert(taskId, tenant, hold.state === 'settled' ? 'charge' : 'release', hold.charged, at);
}

/**
 * Closes a hold outside an end (R4: its run sat uncertain past holdTtlMs). Returns what happened to it:
 * settled, released, or nothing because it was already closed.
 */
export function* closeHold(context: QueueContext, tx: StoreTx, taskId: number, at: number, reason: string): Step<'settled' | 'released' | 'already_closed'> {
  const hold = yield* closureFor(context, tx, taskId, reason);
  const tenant = yield* tx.holdClose(taskId, hold, at);
  if (tenant === undefined) return 'already_closed';
  yield* recordCredit(tx, taskId, tenant, hold, at);
  return hold.state;
}

/**
 * R6: a task that ran out of deliveries, attempts or retry age goes to the dead-letter table with the
 * history of why each delivery ended. Written after the end event, so the history includes it. Dead
 * letters are never replayed automatically.
 */
export function* deadLetterIfExhausted(tx: StoreTx, taskId: number, reason: string, at: number): Step<void> {
  if (!EXHAUSTION_REASONS.has(reason)) return;
  const reasons = (yield* tx.taskFailureReasons(taskId)).map(({ type, data }) => {
    const parsed = JSON.parse(data) as { reason?: string; errorClass?: string };
    return parsed.errorClass ?? parsed.reason ?? type;
  });
  yield* tx.deadLetterInsert(taskId, reason, JSON.stringify(reasons), at, DEAD_LETTERS_KEPT);
}
