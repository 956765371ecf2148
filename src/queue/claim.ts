import type { CandidateRow, HoldingRow, LevelHeadRow, Step, StoreTx } from '../store/store.ts';
import { requireWorkerId, write, type QueueContext } from './context.ts';
import { decide } from './admission.ts';
import { applyGrants, budgetSpec, planGrants, type PlannedGrant, type Refusal } from './budgets.ts';
import { InvariantError } from './errors.ts';
import { chargeAtClaim, lessServed, weightOf } from './fair-share.ts';
import { compareCandidates, PRIORITY_RANGE, score } from './scoring.ts';
import { hasBudgets, transition } from './transition.ts';
import type { AdmissionDecision, ClaimResult, ClaimedTask, Needs, Tier, Usage } from './types.ts';

/** A bound on tasks skipped in one claim (expired deadlines, exhausted retry age); the rest wait for the next. */
const MAX_SKIPS_PER_CLAIM = 64;

/** The highest base priority (Q4), where a walk over a tenant's levels starts. */
const TOP_PRIORITY = PRIORITY_RANGE.max;

/**
 * Q5: one write transaction expires overdue leases, counts occupied slots, picks the best eligible
 * task and marks it running. It commits before the caller does any model or tool work.
 */
export function claim(context: QueueContext, workerIdArgument: string): Promise<ClaimResult> {
  const workerId = requireWorkerId(workerIdArgument);
  // What the store may read ahead (ReadsFirst.claim): which head this claim most likely picks.
  const { agingCap, agingPeriodMs, perTenantLimit, tenantLimits } = context.config;
  return write(context, 'claim', (tx, at) => claimIn(context, tx, at, workerId), { claim: { agingCap, agingPeriodMs, perTenantLimit, tenantLimits } });
}

function* claimIn(context: QueueContext, tx: StoreTx, at: number, workerId: string): Step<ClaimResult> {
  const { config } = context;
  const holding = yield* tx.claimHolding();
  yield* expireOverdue(context, tx, holding, at);
  // Q6: a claim needs room in the global limit and in its tenant's limit; uncertain keeps its slot.
  if (holding.length >= config.globalLimit) return { ok: false, reason: (yield* tx.claimAnyReady()) ? 'quota' : 'empty' };
  const blocked = blockedTenants(context, holding);
  // A2: a paused tenant gets no new lease, whatever state its tasks came back to ready from.
  const paused = yield* tx.tenantPauseList();
  for (const row of paused) blocked.add(row.tenant);
  /** A1: buckets a better task waits for in this claim; a smaller need behind it may not take them. */
  const heldBack = new Map<string, Refusal>();
  let deferral: Deferral | undefined;
  /** A6: tasks whose session is busy; the rest of their tenant may still run. */
  const sessionWaits = new Set<number>();
  for (let skipped = 0; skipped <= MAX_SKIPS_PER_CLAIM; skipped++) {
    const { candidate, quotaBound } = yield* bestCandidate(context, tx, blocked, at, sessionWaits);
    if (candidate === undefined) {
      for (const row of paused) {
        const waiting = yield* deferPausedHead(tx, row.tenant, at);
        deferral ??= waiting;
      }
      if (deferral !== undefined) return { ok: false, reason: 'quota', admission: deferral };
      return { ok: false, reason: quotaBound ? 'quota' : 'empty' };
    }
    if (yield* retireIfUnclaimable(context, tx, candidate, at)) continue;
    const admitted = yield* admitAtClaim(context, tx, candidate, at, heldBack);
    if (admitted.action === 'RUN') return { ok: true, task: yield* markRunning(context, tx, candidate, workerId, at, admitted.grants) };
    if (admitted.action === 'RETIRED') continue;
    // DEFER: recorded once per change of (task, reason). A task waiting for its session holds nothing
    // back: other sessions of its tenant run (A6). Any other wait: nothing of its tenant overtakes it.
    yield* recordDeferral(tx, candidate, admitted.decision, at);
    deferral ??= admitted.decision;
    if (admitted.decision.reason === 'session_busy') sessionWaits.add(candidate.id);
    else blocked.add(candidate.tenant);
  }
  return deferral === undefined ? { ok: false, reason: 'empty' } : { ok: false, reason: 'quota', admission: deferral };
}

type Deferral = AdmissionDecision & { action: 'DEFER' };
type Grants = readonly PlannedGrant[];

/**
 * A1, A2 at claim: the policy decides on the candidate with what its budgets say of its needs. A budget
 * that cannot grant is never overdrawn, whatever the policy answers; a total budget (per run or
 * session) that cannot grant never will, so the task ends failed with the reason (A4) instead of
 * waiting forever; a policy's REJECT of an accepted task ends it failed with the policy's reason.
 */
function* admitAtClaim(
  context: QueueContext,
  tx: StoreTx,
  row: CandidateRow,
  at: number,
  heldBack: Map<string, Refusal>,
): Step<{ action: 'RUN'; grants: Grants } | { action: 'DEFER'; decision: Deferral } | { action: 'RETIRED' }> {
  const { config } = context;
  // A6: under `serial` and `cancel_in_progress` a session (tenant, topic) runs one task at a time; an
  // uncertain one still holds it (its worker may be running). `versioned` lets versions run at once.
  if (config.sessionPolicy !== 'versioned' && (yield* tx.sessionBusy(row.tenant, row.topic, row.id))) {
    return { action: 'DEFER', decision: { action: 'DEFER', reason: 'session_busy', taskId: row.id } };
  }
  const needs = row.needs === null || !hasBudgets(context) ? null : (JSON.parse(row.needs) as Needs);
  const plan = needs === null ? undefined : yield* planGrants(config, tx, row, needs, at, heldBack);
  const refusal = plan !== undefined && !plan.ok ? plan.refusal : undefined;
  if (refusal !== undefined && budgetSpec(config, refusal.budget)?.kind === 'total') {
    yield* transition(context, tx, at, { by: 'other', event: 'retire', row, to: 'failed' }, { reason: 'budget_exhausted', budget: refusal.budget }, 'budget_exhausted');
    return { action: 'RETIRED' };
  }
  const decision = decide(context.admission, {
    stage: 'claim',
    task: { id: row.id, tenant: row.tenant, priority: row.priority, critical: row.critical === 1, deadline: row.deadline },
    tenantPaused: false,
    inFlight: 0,
    capacity: config.capacity,
    criticalHeadroom: config.criticalHeadroom,
    replacesWaiting: false,
    ...(refusal === undefined ? {} : { budget: { reason: refusal.reason, budget: refusal.budget, ...(refusal.retryAt === undefined ? {} : { retryAt: refusal.retryAt }) } }),
    now: at,
  });
  if (decision.action === 'REJECT') {
    yield* transition(context, tx, at, { by: 'other', event: 'retire', row, to: 'failed' }, { reason: `admission_${decision.reason}` }, `admission_${decision.reason}`);
    return { action: 'RETIRED' };
  }
  if (refusal !== undefined) {
    // The head keeps the bucket it waits for: later candidates that need it wait behind it (A1).
    heldBack.set(`${refusal.budget}\u0000${refusal.scope}`, refusal);
    const waiting: Deferral = { action: 'DEFER', reason: refusal.reason, taskId: row.id, budget: refusal.budget };
    if (refusal.retryAt !== undefined) waiting.retryAt = refusal.retryAt;
    return { action: 'DEFER', decision: waiting };
  }
  if (decision.action === 'DEFER') return { action: 'DEFER', decision: { ...decision, action: 'DEFER', taskId: row.id } };
  return { action: 'RUN', grants: plan !== undefined && plan.ok ? plan.grants : [] };
}

/** A2: a DEFER is written only when the task's reason changes, so an idle poll that meets it again writes nothing. */
function* recordDeferral(tx: StoreTx, row: Pick<CandidateRow, 'id' | 'tenant' | 'deferred'>, decision: Deferral, at: number): Step<void> {
  const reason = decision.reason as string;
  if (row.deferred === reason) return;
  const seq = yield* tx.taskDefer(row.id, reason);
  if (seq === undefined) throw new InvariantError(`task ${row.id} was deferred but is not ready`);
  const data: Record<string, unknown> = { reason };
  if (decision.retryAt !== undefined) data.retryAt = decision.retryAt;
  if (decision.budget !== undefined) data.budget = decision.budget;
  yield* tx.eventAppend(row.id, seq, 'deferred', at, JSON.stringify(data), null, null);
  yield* tx.admissionInsert({ at, action: 'DEFER', reason, tenant: row.tenant, task_id: row.id, retry_at: decision.retryAt ?? null, budget: decision.budget ?? null });
}

/** A2: the head of a paused tenant's ready work is recorded as deferred (once per change); the claim says why it waited. */
function* deferPausedHead(tx: StoreTx, tenant: string, at: number): Step<Deferral | undefined> {
  const head = yield* tx.claimLevelHead({ tenant, maxPriority: TOP_PRIORITY, minPriority: PRIORITY_RANGE.min, now: at });
  if (head === undefined) return undefined;
  const row = yield* tx.claimCandidate(head.id);
  if (row === undefined) throw new InvariantError(`task ${head.id} was a level head but has no row`);
  const decision: Deferral = { action: 'DEFER', reason: 'tenant_paused', taskId: row.id };
  yield* recordDeferral(tx, row, decision, at);
  return decision;
}

/**
 * Q4: the best eligible task by (score, enqueue time, id), with index seeks only. Within one (tenant,
 * base priority) level the earliest-enqueued task also has the highest aged score, so the winner is
 * the head of some level. Each tenant's levels are walked from the top down, one seek per level. A
 * level b scores at most b + agingCap: once that is below the best score found, no task there can win
 * or tie, and the walk stops. The cost grows with tenants and with the levels within agingCap of the
 * best, never with the backlog. (An index on each tenant's oldest ready task would prune harder, but
 * it costs every claim a page write, and the WAL pages of a commit are what a cycle mostly pays for.)
 */
function* bestCandidate(
  context: QueueContext,
  tx: StoreTx,
  blocked: ReadonlySet<string>,
  at: number,
  skip: ReadonlySet<number>,
): Step<{ candidate?: CandidateRow; quotaBound: boolean }> {
  const { config } = context;
  if (config.fairness === 'fair_share') return yield* fairCandidate(context, tx, blocked, at, skip);
  let best: LevelHeadRow | undefined;
  let quotaBound = false;
  for (const { tenant, head } of yield* tx.claimReadyHeads(at)) {
    if (blocked.has(tenant)) {
      quotaBound = true;
      continue;
    }
    best = yield* tenantBest(context, tx, tenant, at, skip, best, head);
  }
  if (best === undefined) return { quotaBound };
  const candidate = yield* tx.claimCandidate(best.id);
  if (candidate === undefined) throw new InvariantError(`task ${best.id} was a level head but has no row`);
  candidate.score = best.score;
  return { candidate, quotaBound };
}

/**
 * The best of `best` and the eligible tasks of one tenant by Q4: its levels from the top down, one seek
 * per level, stepping over `skip` (A6), stopping once a level cannot beat or tie the best so far.
 */
function* tenantBest(
  context: QueueContext,
  tx: StoreTx,
  tenant: string,
  at: number,
  skip: ReadonlySet<number>,
  bestSoFar?: LevelHeadRow,
  /** The head of the tenant's highest eligible level, read already (claimReadyHeads), or null for none. */
  firstTop?: LevelHeadRow | null,
): Step<LevelHeadRow | undefined> {
  const { config } = context;
  let best = bestSoFar;
  for (let maxPriority = TOP_PRIORITY; ; ) {
    const minPriority = best === undefined ? PRIORITY_RANGE.min : Math.max(PRIORITY_RANGE.min, best.score - config.agingCap);
    if (maxPriority < minPriority) break;
    // The first seek is the whole range's head: within [minPriority, TOP] it is that head when its level
    // reaches minPriority, and nothing otherwise.
    const top =
      maxPriority === TOP_PRIORITY && firstTop !== undefined
        ? firstTop !== null && firstTop.priority >= minPriority
          ? { ...firstTop }
          : undefined
        : yield* tx.claimLevelHead({ tenant, maxPriority, minPriority, now: at });
    if (top === undefined) break;
    // A6: a task that waits for its session in this claim is stepped over within its level.
    let head: LevelHeadRow | undefined = top;
    while (head !== undefined && skip.has(head.id)) head = yield* tx.claimLevelNext({ tenant, priority: top.priority, enqueuedAt: head.enqueued_at, id: head.id, now: at });
    maxPriority = top.priority - 1;
    if (head === undefined) continue;
    head.score = score(head.priority, head.enqueued_at, at, config);
    if (best === undefined || compareCandidates(toOrder(head), toOrder(best)) < 0) best = head;
  }
  return best;
}

/**
 * A3 fair share: the tenant with eligible work and the least weighted service is served (fair-share.ts),
 * its best task by Q4; critical work bypasses it (the best task across tenants by Q4, if critical).
 */
function* fairCandidate(context: QueueContext, tx: StoreTx, blocked: ReadonlySet<string>, at: number, skip: ReadonlySet<number>): Step<{ candidate?: CandidateRow; quotaBound: boolean }> {
  let quotaBound = false;
  let overall: LevelHeadRow | undefined;
  let fair: { head: LevelHeadRow; service: number; weight: number } | undefined;
  for (const { tenant, head: firstTop } of yield* tx.claimReadyHeads(at)) {
    if (blocked.has(tenant)) {
      quotaBound = true;
      continue;
    }
    const head = yield* tenantBest(context, tx, tenant, at, skip, undefined, firstTop);
    if (head === undefined) continue;
    if (overall === undefined || compareCandidates(toOrder(head), toOrder(overall)) < 0) overall = head;
    const service = yield* tx.serviceGet(tenant);
    const weight = weightOf(context.config, tenant);
    const better = fair === undefined || lessServed(service, weight, fair.service, fair.weight) || (!lessServed(fair.service, fair.weight, service, weight) && compareCandidates(toOrder(head), toOrder(fair.head)) < 0);
    if (better) fair = { head, service, weight };
  }
  if (overall === undefined || fair === undefined) return { quotaBound };
  const top = yield* tx.claimCandidate(overall.id);
  if (top === undefined) throw new InvariantError(`task ${overall.id} was a level head but has no row`);
  if (top.critical === 1) {
    top.score = overall.score;
    return { candidate: top, quotaBound };
  }
  const candidate = fair.head.id === top.id ? top : yield* tx.claimCandidate(fair.head.id);
  if (candidate === undefined) throw new InvariantError(`task ${fair.head.id} was a level head but has no row`);
  candidate.score = fair.head.score;
  return { candidate, quotaBound };
}

function toOrder(row: LevelHeadRow) {
  return { score: row.score, enqueuedAt: row.enqueued_at, id: row.id };
}

/** Q14 at claim: an expired task becomes expired instead of running. Q16: retry age is bounded. */
function* retireIfUnclaimable(context: QueueContext, tx: StoreTx, row: CandidateRow, at: number): Step<boolean> {
  if (row.deadline !== null && row.deadline <= at) {
    yield* transition(context, tx, at, { by: 'other', event: 'retire', row, to: 'expired' }, { when: 'claim', deadline: row.deadline }, 'expired');
    return true;
  }
  if (row.first_claimed_at !== null && at - row.first_claimed_at > context.config.maxRetryAgeMs) {
    yield* transition(context, tx, at, { by: 'other', event: 'retire', row, to: 'failed' }, { reason: 'retry_age_exceeded', firstClaimedAt: row.first_claimed_at });
    return true;
  }
  return false;
}

function* markRunning(context: QueueContext, tx: StoreTx, row: CandidateRow, workerId: string, at: number, grants: Grants): Step<ClaimedTask> {
  const leaseUntil = at + context.config.leaseMs;
  // Q7: generation + 1 and attempts + 1 at claim; the wait is recorded per task (Q15).
  const generation = row.generation + 1;
  const attempt = row.attempts + 1;
  const data: Record<string, unknown> = {
    workerId,
    generation,
    attempt,
    leaseUntil,
    score: row.score,
    queueWaitMs: at - row.enqueued_at,
  };
  let reserved: Needs | undefined;
  if (grants.length > 0) {
    // A1: every need reserved in this transaction, all or nothing (the plan found room for all). A
    // metered budget counts consumption from the usage the run resumes with.
    const metered = grants.some((grant) => grant.spec.kind !== 'concurrency' && grant.spec.meter !== undefined);
    const usage = metered && row.attempts > 0 ? yield* tx.checkpointLastUsage(row.id) : undefined;
    reserved = yield* applyGrants(tx, row.id, generation, grants, usage === undefined ? undefined : (JSON.parse(usage) as Usage), at);
    data.reserved = reserved;
    // A3: under fair share the tenant is charged the tokens this attempt reserved.
    if (context.config.fairness === 'fair_share') {
      const charged = yield* chargeAtClaim(tx, row, grants);
      if (charged !== 0) data.service = charged;
    }
  }
  yield* transition(context, tx, at, { by: 'claim', row, workerId, leaseUntil }, data);
  const task: ClaimedTask = {
    id: row.id,
    tenant: row.tenant,
    topic: row.topic,
    version: row.version,
    priority: row.priority,
    input: JSON.parse(row.input),
    generation,
    attempt,
    leaseUntil,
    tier: row.tier as Tier,
    cancelRequested: row.cancel_requested === 1,
  };
  if (row.deadline !== null) task.deadline = row.deadline;
  if (reserved !== undefined) task.needs = JSON.parse(row.needs as string) as Needs;
  if (row.critical === 1) task.critical = true;
  return task;
}

/** Tenants with no room left: at their limit, or paused with a limit of 0 (A2). */
function blockedTenants(context: QueueContext, holding: readonly HoldingRow[]): Set<string> {
  const { perTenantLimit, tenantLimits } = context.config;
  const occupied = new Map<string, number>();
  for (const row of holding) occupied.set(row.tenant, (occupied.get(row.tenant) ?? 0) + 1);
  const blocked = new Set<string>();
  for (const [tenant, limit] of Object.entries(tenantLimits)) if (limit === 0) blocked.add(tenant);
  // Own keys only: a tenant called "constructor" must not find Object.prototype's member as its limit.
  for (const [tenant, n] of occupied) if (n >= (Object.hasOwn(tenantLimits, tenant) ? (tenantLimits[tenant] as number) : perTenantLimit)) blocked.add(tenant);
  return blocked;
}

/**
 * Q10: a running task past its lease becomes uncertain and keeps its slot. Its worker may be dead,
 * slow or paused, so nothing re-runs it until a confirmation or a reconciliation decision (Q11, R5).
 */
function* expireOverdue(context: QueueContext, tx: StoreTx, holding: readonly HoldingRow[], at: number): Step<number> {
  let expired = 0;
  for (const row of holding) {
    if (row.state !== 'running' || row.lease_until === null || row.lease_until > at) continue;
    yield* transition(context, tx, at, { by: 'other', event: 'expiry', row, to: 'uncertain' }, {
      workerId: row.worker_id,
      generation: row.generation,
      leaseUntil: row.lease_until,
    });
    row.state = 'uncertain';
    expired++;
  }
  return expired;
}

/** expireLeases(): the same expiry, for a supervisor or sweeper that does not claim. */
export function expireLeases(context: QueueContext): Promise<number> {
  return write(context, 'expireLeases', (tx, at) => expireLeasesIn(context, tx, at));
}

function* expireLeasesIn(context: QueueContext, tx: StoreTx, at: number): Step<number> {
  return yield* expireOverdue(context, tx, yield* tx.claimOverdueLeases(at), at);
}
