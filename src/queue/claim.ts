import type { CandidateRow, HoldingRow } from '../store/statements.ts';
import { emit, moveTask, requireWorkerId, type QueueContext } from './context.ts';
import type { ClaimResult, ClaimedTask, Tier } from './types.ts';

/** A bound on tasks skipped in one claim (expired deadlines, exhausted retry age); the rest wait for the next. */
const MAX_SKIPS_PER_CLAIM = 64;

/** Base priorities are 0..30 (Q4). */
const TOP_PRIORITY = 30;

/**
 * Q5: one BEGIN IMMEDIATE transaction expires overdue leases, counts occupied slots, picks the best
 * eligible task and marks it running. It commits before the caller does any model or tool work.
 */
export function claim(context: QueueContext, workerIdArgument: string): ClaimResult {
  const workerId = requireWorkerId(workerIdArgument);
  return context.write('claim', (at) => {
    const { statements, config } = context;
    const holding = statements.holding.all() as HoldingRow[];
    expireOverdue(context, holding, at);
    // Q6: a claim needs room in the global limit and in its tenant's limit; uncertain keeps its slot.
    if (holding.length >= config.globalLimit) {
      return { ok: false, reason: statements.anyReady.get() === undefined ? 'empty' : 'quota' };
    }
    const blocked = JSON.stringify(blockedTenants(context, holding));
    for (let skipped = 0; skipped <= MAX_SKIPS_PER_CLAIM; skipped++) {
      const candidate = bestCandidate(context, blocked, at);
      if (candidate === undefined) {
        const quotaBound = blocked !== '[]' && statements.anyReadyForTenants.get(blocked) !== undefined;
        return { ok: false, reason: quotaBound ? 'quota' : 'empty' };
      }
      if (retireIfUnclaimable(context, candidate, at)) continue;
      return { ok: true, task: markRunning(context, candidate, workerId, at) };
    }
    return { ok: false, reason: 'empty' };
  });
}

/**
 * Q4: the best eligible task by (score, enqueue time, id). A task at base level b scores at most
 * b + agingCap, so once the top level of every open tenant gave a best score s, levels below
 * s - agingCap cannot win or tie and are not visited. Most claims then touch a level or two per tenant.
 */
function bestCandidate(context: QueueContext, blocked: string, at: number): CandidateRow | undefined {
  const { statements, config } = context;
  const parameters = { blocked, now: at, agingCap: config.agingCap, agingPeriodMs: config.agingPeriodMs };
  const top = statements.candidates.get({ ...parameters, minPriority: TOP_PRIORITY + 1 }) as CandidateRow | undefined;
  if (top !== undefined && top.score >= TOP_PRIORITY + config.agingCap) return top;
  const minPriority = top === undefined ? 0 : Math.max(0, top.score - config.agingCap);
  return statements.candidates.get({ ...parameters, minPriority }) as CandidateRow | undefined;
}

/** Q14 at claim: an expired task becomes expired instead of running. Q16: retry age is bounded. */
function retireIfUnclaimable(context: QueueContext, row: CandidateRow, at: number): boolean {
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

function markRunning(context: QueueContext, row: CandidateRow, workerId: string, at: number): ClaimedTask {
  const leaseUntil = at + context.config.leaseMs;
  const claimed = context.statements.claimTask.get({ id: row.id, workerId, leaseUntil, now: at }) as CandidateRow;
  // Q7: generation + 1 and attempts + 1 at claim; the wait is recorded per task (Q15).
  emit(context, row.id, claimed.event_seq, 'claimed', at, {
    from: 'ready',
    to: 'running',
    workerId,
    generation: claimed.generation,
    attempt: claimed.attempts,
    leaseUntil,
    score: row.score,
    queueWaitMs: claimed.queue_wait_ms,
  }, { workerId, generation: claimed.generation });
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
function blockedTenants(context: QueueContext, holding: readonly HoldingRow[]): string[] {
  const { perTenantLimit, tenantLimits } = context.config;
  const occupied = new Map<string, number>();
  for (const row of holding) occupied.set(row.tenant, (occupied.get(row.tenant) ?? 0) + 1);
  const blocked = new Set<string>();
  for (const [tenant, limit] of Object.entries(tenantLimits)) if (limit === 0) blocked.add(tenant);
  for (const [tenant, n] of occupied) if (n >= (tenantLimits[tenant] ?? perTenantLimit)) blocked.add(tenant);
  return [...blocked].sort();
}

/**
 * Q10: a running task past its lease becomes uncertain and keeps its slot. Its worker may be dead,
 * slow or paused, so nothing re-runs it until a confirmation or a reconciliation decision (Q11, R5).
 */
function expireOverdue(context: QueueContext, holding: readonly HoldingRow[], at: number): number {
  let expired = 0;
  for (const row of holding) {
    if (row.state !== 'running' || row.lease_until === null || row.lease_until > at) continue;
    moveTask(context, row, 'uncertain', at, 'lease_expired', { workerId: row.worker_id, generation: row.generation, leaseUntil: row.lease_until });
    row.state = 'uncertain';
    expired++;
  }
  return expired;
}

/** expireLeases(): the same expiry, for a supervisor or sweeper that does not claim. */
export function expireOverdueLeases(context: QueueContext, at: number): number {
  return expireOverdue(context, context.statements.overdueLeases.all(at) as HoldingRow[], at);
}
