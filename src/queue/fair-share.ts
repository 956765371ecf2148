import type { Step, StoreTx } from '../store/store.ts';
import type { PlannedGrant } from './budgets.ts';
import type { QueueContext } from './context.ts';
import type { QueueConfig, Usage } from './types.ts';

/**
 * A3: weighted fair share by consumed service, when `fairness: 'fair_share'`.
 *
 * Service is model tokens. A claim charges the tenant what the attempt reserved of budgets metered in
 * tokens (0 when it reserves none); the edge that frees the slot corrects the tenant's service to the
 * run's checkpointed tokens (R1: usage accumulates only through checkpoints), so a 60-second task that
 * used sixty times the tokens of a 1-second task is charged sixty times as much: fairness counts work,
 * not tasks. Each tenant's total is one row (tenant_service), written in the transaction of the claim or
 * the end, in integers.
 *
 * The claim serves, among tenants with an eligible task, the one whose normalised service S_t / w_t is
 * least (compared as S_a x w_b < S_b x w_a, exact), and within it Q4's aged priority. Critical work
 * bypasses it (A2: the best task by Q4, if critical, runs first). A tenant that comes back from idle (no
 * ready, running or uncertain task when its work arrives) earns no credit for its absence: its service
 * is raised to the least normalised service among the tenants then active, scaled to its weight. Active
 * means backlogged or being served (a ready, running or uncertain task): a tenant served steadily may
 * have nothing ready at the instant the other comes back (its next task not yet enqueued), and it is
 * still the tenant the returning one competes with (issue 31: compared with backlogged tenants only, the
 * returning tenant kept its old service and took all of its next 30 claims).
 *
 * The bound (I19). Let C be the most service one attempt is charged at its claim plus the most its end
 * corrects it by (for a run: its reservation, then its tokens), L_t the tenant's slot limit and w_t its
 * weight. Take two tenants a and b that are both backlogged and eligible over an interval. Whenever the
 * claim serves a, a's normalised service was the least: S_a/w_a <= S_b/w_b. After that claim a's
 * normalised service grows by at most C/w_a; between claims of a, its service grows only by corrections
 * of its own runs in flight, at most L_a of them, each by at most C. So at every instant of the interval
 * S_a/w_a - S_b/w_b <= (L_a + 1) x C / w_a, and symmetrically for b, once each has been served once in it;
 * before that the difference is what it was at the interval's start, which the idle clamp bounds for a
 * tenant that just came back. In integers, for the checker:
 *
 *   |S_a x w_b - S_b x w_a| <= max((L_a + 1) x C x w_b, (L_b + 1) x C x w_a) + |D_0|
 *
 * with D_0 the difference at the interval's start. `fairShareBound` computes the first term. Counting
 * tasks instead of tokens (the mutant `fairness-by-task-count`) breaks it as soon as the tenants' tasks
 * differ in size by more than the bound's slack.
 */

export function weightOf(config: QueueConfig, tenant: string): number {
  return Object.hasOwn(config.tenantWeights, tenant) ? (config.tenantWeights[tenant] as number) : 1;
}

/** Whether tenant a (service sa, weight wa) is less served than b: sa / wa < sb / wb, exactly. */
export function lessServed(sa: number, wa: number, sb: number, wb: number): boolean {
  return BigInt(sa) * BigInt(wb) < BigInt(sb) * BigInt(wa);
}

/** I19's bound on |S_a x w_b - S_b x w_a| for two tenants both backlogged since the interval began (see above). */
export function fairShareBound(maxCharge: number, limitA: number, weightA: number, limitB: number, weightB: number): bigint {
  const a = BigInt(limitA + 1) * BigInt(maxCharge) * BigInt(weightB);
  const b = BigInt(limitB + 1) * BigInt(maxCharge) * BigInt(weightA);
  return a > b ? a : b;
}

function tokensOf(usage: Usage): number {
  return usage.inputTokens + usage.outputTokens;
}

/** At claim: the tenant is charged the tokens the attempt reserved; the amount, for the claim's event. */
export function* chargeAtClaim(tx: StoreTx, row: { id: number; tenant: string }, grants: readonly PlannedGrant[]): Step<number> {
  let charge = 0;
  for (const grant of grants) if (grant.spec.kind !== 'concurrency' && grant.spec.meter === 'tokens') charge += grant.units;
  if (charge === 0) return 0;
  yield* tx.serviceAdd(row.tenant, charge);
  yield* tx.taskAddServiceCharged(row.id, charge);
  return charge;
}

/** When the slot is freed: the tenant's service is corrected to the run's checkpointed tokens; the change. */
export function* correctAtEnd(tx: StoreTx, row: { id: number; tenant: string }): Step<number> {
  const usage = yield* tx.checkpointLastUsage(row.id);
  const used = usage === undefined ? 0 : tokensOf(JSON.parse(usage) as Usage);
  const charged = yield* tx.taskServiceCharged(row.id);
  const delta = used - charged;
  if (delta === 0) return 0;
  yield* tx.serviceAdd(row.tenant, delta);
  yield* tx.taskAddServiceCharged(row.id, delta);
  return delta;
}

/**
 * At enqueue: a tenant back from idle is raised to the least normalised service of the tenants that are
 * active now (scaled to its weight, rounded up); the change, or undefined when there was none.
 */
export function* clampReturning(context: QueueContext, tx: StoreTx, tenant: string, taskId: number): Step<{ from: number; to: number } | undefined> {
  if (yield* tx.tenantHasLive(tenant, taskId)) return undefined;
  // A3: the active tenants, in tenant order: those with ready work, and those being served (running or
  // uncertain tasks, read through the holding index; at most the global limit of them).
  const active = new Set<string>();
  for (let other = yield* tx.claimFirstReadyTenant(); other !== undefined; other = yield* tx.claimNextReadyTenant(other)) active.add(other);
  for (const row of yield* tx.taskOccupiedByTenant()) active.add(row.tenant);
  let least: { service: number; weight: number } | undefined;
  for (const other of [...active].sort()) {
    if (other === tenant) continue;
    const service = yield* tx.serviceGet(other);
    const weight = weightOf(context.config, other);
    if (least === undefined || lessServed(service, weight, least.service, least.weight)) least = { service, weight };
  }
  if (least === undefined) return undefined;
  const weight = weightOf(context.config, tenant);
  const floor = Number((BigInt(least.service) * BigInt(weight) + BigInt(least.weight) - 1n) / BigInt(least.weight));
  const from = yield* tx.serviceGet(tenant);
  if (from >= floor) return undefined;
  yield* tx.serviceAdd(tenant, floor - from);
  return { from, to: floor };
}
