import type { QueueContext } from '../queue/context.ts';
import { InvariantError } from '../queue/errors.ts';
import type { Tier, Usage } from '../queue/types.ts';

/**
 * R4: the hold of a run is closed exactly once, at its terminal transition and in that transaction:
 * settled with the usage its checkpoints recorded (usage accumulates only there), or released when the
 * run never checkpointed. The conditional UPDATE is the guard: zero rows means it was already closed,
 * and then no second ledger row is written.
 */
export function holdCreditsFor(context: QueueContext, tier: Tier): number {
  return context.config.tierHolds[tier];
}

export function creditsFor(usage: Usage, tokensPerCredit: number): number {
  return Math.ceil((usage.inputTokens + usage.outputTokens) / tokensPerCredit);
}

export interface Settlement {
  state: 'settled' | 'released';
  charged: number;
  /** The checkpointed usage as stored, or null when the run never checkpointed. */
  usage: string | null;
}

/** What closing the hold now would do: settle the checkpointed usage, or release if there is none. */
export function settlementFor(context: QueueContext, taskId: number): Settlement {
  const usageJson = context.statements.lastCheckpointUsage.get(taskId) as string | undefined;
  if (usageJson === undefined) return { state: 'released', charged: 0, usage: null };
  return { state: 'settled', charged: creditsFor(JSON.parse(usageJson) as Usage, context.config.tokensPerCredit), usage: usageJson };
}

/** The ledger entry of a hold just closed, in the closing transaction. */
export function recordCredit(context: QueueContext, taskId: number, tenant: string, settlement: Settlement, at: number): void {
  context.statements.insertCredit.run(taskId, tenant, settlement.state === 'settled' ? 'charge' : 'release', settlement.charged, at);
}

/** Returns what happened to the hold: settled, released, or nothing because it was already closed. */
export function closeHold(context: QueueContext, taskId: number, at: number, reason: string): 'settled' | 'released' | 'already_closed' {
  const settlement = settlementFor(context, taskId);
  const closed = context.statements.closeHold.get({ id: taskId, state: settlement.state, charged: settlement.charged, usage: settlement.usage, reason, now: at }) as
    | { tenant: string }
    | undefined;
  if (closed === undefined) return 'already_closed';
  recordCredit(context, taskId, closed.tenant, settlement, at);
  return settlement.state;
}

/**
 * R4: a hold whose task ended without closing it (never expected), or whose run has sat uncertain
 * with no live worker for holdTtlMs, is released so the credits do not stay reserved forever.
 */
export function releaseStaleHolds(context: QueueContext, at: number): number {
  const stale = context.statements.staleHolds.all({ cutoff: at - context.config.holdTtlMs }) as { task_id: number; state: string }[];
  let released = 0;
  for (const hold of stale) {
    const result = closeHold(context, hold.task_id, at, hold.state === 'uncertain' ? 'hold_ttl' : 'orphaned');
    if (result === 'already_closed') throw new InvariantError(`hold of task ${hold.task_id} listed as open but already closed`);
    released++;
  }
  return released;
}
