import type { QueueContext } from '../queue/context.ts';
import { InvariantError } from '../queue/errors.ts';
import type { Tier, Usage } from '../queue/types.ts';

/**
 * R4: the hold of a run is closed exactly once, at its terminal transition and in that transaction:
 * settled with the usage its checkpoints recorded (usage accumulates only there), or released when the
 * run never checkpointed. The conditional UPDATE is the guard: zero rows means it was already closed,
 * and then no second ledger row is written.
 */
export function openHold(context: QueueContext, taskId: number, tenant: string, tier: Tier, at: number): void {
  context.statements.insertHold.run(taskId, tenant, tier, context.config.tierHolds[tier], at);
}

export function creditsFor(usage: Usage, tokensPerCredit: number): number {
  return Math.ceil((usage.inputTokens + usage.outputTokens) / tokensPerCredit);
}

/** Returns what happened to the hold: settled, released, or nothing because it was already closed. */
export function closeHold(context: QueueContext, taskId: number, at: number, reason: string): 'settled' | 'released' | 'already_closed' {
  const { statements, config } = context;
  const usageJson = statements.lastCheckpointUsage.get(taskId) as string | undefined;
  const usage = usageJson === undefined ? undefined : (JSON.parse(usageJson) as Usage);
  const state = usage === undefined ? 'released' : 'settled';
  const charged = usage === undefined ? 0 : creditsFor(usage, config.tokensPerCredit);
  const closed = statements.closeHold.get({ id: taskId, state, charged, usage: usageJson ?? null, reason, now: at }) as { tenant: string } | undefined;
  if (closed === undefined) return 'already_closed';
  statements.insertCredit.run(taskId, closed.tenant, state === 'settled' ? 'charge' : 'release', charged, at);
  return state;
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
