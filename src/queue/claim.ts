import type { CandidateRow, TaskRow } from '../store/statements.ts';
import { emit, moveTask, requireWorkerId, type QueueContext } from './context.ts';
import type { ClaimResult, ClaimedTask, Tier } from './types.ts';

/** A bound on tasks skipped in one claim (expired deadlines, exhausted retry age); the rest wait for the next. */
const MAX_SKIPS_PER_CLAIM = 64;

/**
 * Q5: one BEGIN IMMEDIATE transaction expires overdue leases, counts occupied slots, picks the best
 * eligible task and marks it running. It commits before the caller does any model or tool work.
 */
export function claim(context: QueueContext, workerIdArgument: string): ClaimResult {
  const workerId = requireWorkerId(workerIdArgument);
  return context.write('claim', (at) => {
    const { statements, config } = context;
    expireOverdueLeases(context, at);
    const occupied = statements.occupiedByTenant.all() as { tenant: string; n: number }[];
    const occupiedTotal = occupied.reduce((sum, row) => sum + row.n, 0);
    // Q6: a claim needs room in the global limit and in its tenant's limit; uncertain keeps its slot.
    if (occupiedTotal >= config.globalLimit) {
      return { ok: false, reason: statements.anyReady.get() === undefined ? 'empty' : 'quota' };
    }
    const blocked = blockedTenants(context, occupied);
    const blockedJson = JSON.stringify(blocked);
    for (let skipped = 0; skipped <= MAX_SKIPS_PER_CLAIM; skipped++) {
      const candidate = statements.candidates.get({
        blocked: blockedJson,
        now: at,
        agingCap: config.agingCap,
        agingPeriodMs: config.agingPeriodMs,
      }) as CandidateRow | undefined;
      if (candidate === undefined) {
        const quotaBound = blocked.length > 0 && statements.anyReadyForTenants.get(blockedJson) !== undefined;
        return { ok: false, reason: quotaBound ? 'quota' : 'empty' };
      }
      if (retireIfUnclaimable(context, candidate, at)) continue;
      return { ok: true, task: markRunning(context, candidate, workerId, at, candidate.score) };
    }
    return { ok: false, reason: 'empty' };
  });
}

/** Q14 at claim: an expired task becomes expired instead of running. Q16: retry age is bounded. */
function retireIfUnclaimable(context: QueueContext, row: TaskRow, at: number): boolean {
  if (row.deadline !== null && row.deadline <= at) {
    moveTask(context, row, 'expired', at, 'expired', { when: 'claim', deadline: row.deadline });
    return true;
  }
  if (row.first_claimed_at !== null && at - row.first_claimed_at > context.config.maxRetryAgeMs) {
    moveTask(context, row, 'failed', at, 'failed', { reason: 'retry_age_exceeded', firstClaimedAt: row.first_claimed_at });
    return true;
  }
  return false;
}

function markRunning(context: QueueContext, row: TaskRow, workerId: string, at: number, score: number): ClaimedTask {
  const leaseUntil = at + context.config.leaseMs;
  const claimed = context.statements.claimTask.get({ id: row.id, workerId, leaseUntil, now: at }) as TaskRow;
  // Q7: generation + 1 and attempts + 1 at claim; the wait is recorded per task (Q15).
  emit(context, row.id, claimed.event_seq, 'claimed', at, {
    from: 'ready',
    to: 'running',
    workerId,
    generation: claimed.generation,
    attempt: claimed.attempts,
    leaseUntil,
    score,
    queueWaitMs: claimed.queue_wait_ms,
  });
  const task: ClaimedTask = {
    id: claimed.id,
    tenant: claimed.tenant,
    topic: claimed.topic,
    version: claimed.version,
    priority: claimed.priority,
    input: JSON.parse(claimed.input),
    generation: claimed.generation,
    attempt: claimed.attempts,
    leaseUntil,
    tier: claimed.tier as Tier,
    cancelRequested: claimed.cancel_requested === 1,
  };
  if (claimed.deadline !== null) task.deadline = claimed.deadline;
  return task;
}

/** Tenants with no room left: at their limit, or paused with a limit of 0 (A2). */
function blockedTenants(context: QueueContext, occupied: readonly { tenant: string; n: number }[]): string[] {
  const { perTenantLimit, tenantLimits } = context.config;
  const blocked = new Set<string>();
  for (const [tenant, limit] of Object.entries(tenantLimits)) if (limit === 0) blocked.add(tenant);
  for (const { tenant, n } of occupied) if (n >= (tenantLimits[tenant] ?? perTenantLimit)) blocked.add(tenant);
  return [...blocked].sort();
}

/**
 * Q10: a running task past its lease becomes uncertain and keeps its slot. Its worker may be dead,
 * slow or paused, so nothing re-runs it until a confirmation or a reconciliation decision (Q11, R5).
 */
export function expireOverdueLeases(context: QueueContext, at: number): number {
  const overdue = context.statements.overdueLeases.all(at) as TaskRow[];
  for (const row of overdue) {
    moveTask(context, row, 'uncertain', at, 'lease_expired', {
      workerId: row.worker_id,
      generation: row.generation,
      leaseUntil: row.lease_until,
    });
  }
  return overdue.length;
}
