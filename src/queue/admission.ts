import { ADMISSION_REASONS, type AdmissionDecision } from './types.ts';

/**
 * A2: admission. A decision is RUN, DEFER or REJECT with a reason, made before a slot or a budget unit
 * is taken, from facts the caller's transaction already read: cheap, deterministic and pure, so a team
 * can replace it (openWorkQueue's `admission` option) and the harness checks whatever policy is in
 * force (I20). The queue enforces what no policy may override: a budget that cannot grant is never
 * overdrawn (a RUN it cannot honour is a DEFER for that budget), and an unknown reason is a bug.
 */

/** Where the decision is made: at enqueue (accept or refuse) or at claim (run now or wait). */
export type AdmissionStage = 'enqueue' | 'claim';

export interface AdmissionRequest {
  stage: AdmissionStage;
  task: { id?: number; tenant: string; priority: number; critical: boolean; deadline: number | null };
  /** The tenant is paused (pauseTenant). */
  tenantPaused: boolean;
  /** Q3: tasks counted against capacity (ready + running + uncertain), the new one excluded. */
  inFlight: number;
  capacity: number;
  criticalHeadroom: number;
  /** At enqueue: the new task replaces a waiting version of its topic, so it takes no new room (Q3). */
  replacesWaiting: boolean;
  /** At claim: what the budgets said of the task's needs (undefined: every need can be granted). */
  budget?: { reason: 'rate_limited' | 'budget'; budget: string; retryAt?: number };
  now: number;
}

export type AdmissionPolicy = (request: AdmissionRequest) => AdmissionDecision;

/**
 * Seed 004's `admit()`, the default: a paused tenant waits; a full in-flight budget refuses ordinary
 * work and lets critical work wait (within its headroom: critical work is never refused for capacity
 * until capacity + criticalHeadroom tasks are live); work past its deadline is refused; a budget that
 * cannot grant makes the task wait, a rate budget until the instant its bucket holds enough.
 */
export const defaultAdmission: AdmissionPolicy = (request) => {
  const { task } = request;
  if (request.tenantPaused) return { action: 'DEFER', reason: 'tenant_paused' };
  if (request.stage === 'enqueue' && !request.replacesWaiting && request.inFlight >= request.capacity) {
    if (!task.critical) return { action: 'REJECT', reason: 'over_capacity' };
    if (request.inFlight < request.capacity + request.criticalHeadroom) return { action: 'DEFER', reason: 'capacity' };
    return { action: 'REJECT', reason: 'queue_full' };
  }
  if (task.deadline !== null && task.deadline <= request.now) return { action: 'REJECT', reason: 'expired' };
  if (request.budget !== undefined) {
    const { reason, budget, retryAt } = request.budget;
    return { action: 'DEFER', reason, budget, ...(retryAt === undefined ? {} : { retryAt }) };
  }
  return { action: 'RUN' };
};

const REASONS: ReadonlySet<string> = new Set<string>(ADMISSION_REASONS);

/** The policy's answer, checked: a known action, a reason from the set for anything but RUN (I20). */
export function decide(policy: AdmissionPolicy, request: AdmissionRequest): AdmissionDecision {
  const decision = policy(request);
  if (decision === null || typeof decision !== 'object' || !['RUN', 'DEFER', 'REJECT'].includes(decision.action)) {
    throw new TypeError(`the admission policy answered ${JSON.stringify(decision)}; expected { action: 'RUN' | 'DEFER' | 'REJECT', reason }`);
  }
  if (decision.action !== 'RUN' && (decision.reason === undefined || !REASONS.has(decision.reason))) {
    throw new TypeError(`the admission policy gave ${decision.action} without a known reason (${JSON.stringify(decision.reason)})`);
  }
  // Critical work is never refused for capacity within its headroom, whatever the policy says (A2).
  if (
    decision.action === 'REJECT' &&
    request.task.critical &&
    (decision.reason === 'over_capacity' || decision.reason === 'capacity') &&
    request.inFlight < request.capacity + request.criticalHeadroom
  ) {
    return { action: 'DEFER', reason: 'capacity' };
  }
  return decision;
}
