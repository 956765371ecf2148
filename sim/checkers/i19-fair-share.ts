import type { TaskState } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';
import { SPEC_LIVE_STATES, SPEC_OCCUPYING_STATES } from './spec-rules.ts';
import { analyse, tenantLimit, ViolationList } from './timeline.ts';
import type { Checker } from './types.ts';

const LIVE = new Set<TaskState | undefined>(SPEC_LIVE_STATES);
const OCCUPYING = new Set<TaskState | undefined>(SPEC_OCCUPYING_STATES);

/**
 * I19: weighted fair share (A3), under `fairness: 'fair_share'`. The judge keeps its own books of
 * service from the SPEC's rule, never the queue's: model tokens, reserved at claim (a claim's
 * data.reserved of budgets metered in tokens) and corrected to the actual use at the end (when an edge
 * frees the task's slot, the task's charge becomes the tokens of its newest checkpoint, R1); a tenant
 * back from idle is raised to the least normalised service of the tenants then active, with work waiting
 * or being served (a ready, running or uncertain task): no credit for its absence (A3). Issue 31: books
 * that raised it only to the tenants with work waiting shared the queue's blind spot, so a tenant that
 * came back while the other was served with nothing ready at that instant started its interval far
 * behind, that head start became |D_0|, and its run of claims alone passed.
 *
 * Rule: over every interval in which two tenants a and b are both backlogged and eligible (ready work
 * whose backoff has passed, and a free place under the tenant's slot limit), D = S_a x w_b - S_b x w_a
 * stays within |D_0| + max((L_a + 1) x C x w_b, (L_b + 1) x C x w_a) of zero, D_0 its value when the
 * interval began, w_t the weight (1 unless named), L_t the tenant's slot limit and C the most service
 * one run was charged in this run (the bound src/queue/fair-share.ts derives, restated). A tenant held
 * at its slot limit (by long runs, or by uncertain ones awaiting the supervisor) is not eligible: the
 * other is served meanwhile, as the SPEC allows, and a new interval begins when both are again.
 */
/** Each tenant's service in the judge's books after every change, per judged run (for the report's plot). */
const booksOf = new WeakMap<WorldResult, Map<string, { at: number; service: number }[]>>();

/** The judge's books of a fair-share run: each tenant's cumulative service (model tokens) over time. */
export function serviceBooks(world: WorldResult): Map<string, { at: number; service: number }[]> {
  if (!booksOf.has(world)) i19FairShare.check(world);
  return booksOf.get(world) ?? new Map();
}

/** C of a fair-share run: the most service one run was charged in the judge's books (0 when none). */
const maxChargeOf = new WeakMap<WorldResult, number>();

export function serviceMaxCharge(world: WorldResult): number {
  if (!maxChargeOf.has(world)) i19FairShare.check(world);
  return maxChargeOf.get(world) ?? 0;
}

export const i19FairShare: Checker = {
  invariant: 'I19',
  kind: 'safety',
  description: 'fair share: two tenants with work waiting stay within the stated bound of weighted consumed service',
  check(world: WorldResult) {
    const analysis = analyse(world);
    const { config } = analysis;
    const out = new ViolationList('I19', 'safety');
    if (config.fairness !== 'fair_share') return out.list;
    const weight = (tenant: string) => (Object.hasOwn(config.tenantWeights, tenant) ? (config.tenantWeights[tenant] as number) : 1);
    const tokenBudgets = new Set(Object.entries(config.budgets).filter(([, spec]) => spec.kind !== 'concurrency' && spec.meter === 'tokens').map(([name]) => name));
    // The books: per task what its tenant has been charged, per task its newest checkpointed tokens.
    const charged = new Map<number, number>();
    const checkpointed = new Map<number, number>();
    const service = new Map<string, bigint>();
    const perRun = new Map<number, number>();
    const ready = new Map<string, number>();
    const live = new Map<string, number>();
    const occupied = new Map<string, number>();
    const readyTasks = new Map<string, Set<number>>();
    const notBefore = new Map<number, number>();
    const since = new Map<string, bigint>();
    const abs = (x: bigint) => (x < 0n ? -x : x);
    const D = (a: string, b: string) => (service.get(a) ?? 0n) * BigInt(weight(b)) - (service.get(b) ?? 0n) * BigInt(weight(a));
    const series = new Map<string, { at: number; service: number }[]>();
    let clock = 0;
    const record = (tenant: string) => {
      let points = series.get(tenant);
      if (points === undefined) series.set(tenant, (points = []));
      points.push({ at: clock, service: Number(service.get(tenant) ?? 0n) });
    };
    const charge = (taskId: number, tenant: string, amount: number) => {
      if (amount === 0) return;
      charged.set(taskId, (charged.get(taskId) ?? 0) + amount);
      perRun.set(taskId, (perRun.get(taskId) ?? 0) + Math.abs(amount));
      service.set(tenant, (service.get(tenant) ?? 0n) + BigInt(amount));
      record(tenant);
    };
    // C: the most one run is charged, from the books (claims and corrections), computed first.
    const steps: (() => void)[] = [];
    world.events.forEach((event, position) => {
      const task = analysis.tasks.get(event.taskId);
      if (task === undefined) return;
      const tenant = task.tenant;
      const before = analysis.stateBefore[position];
      const after = analysis.stateAfter[position];
      steps.push(() => {
        clock = event.at;
        if (event.type === 'enqueued' && (live.get(tenant) ?? 0) === 0) {
          // Back from idle: no credit for the absence, measured against every active tenant (A3).
          let least: { service: bigint; weight: number } | undefined;
          for (const [other, count] of live) {
            if (other === tenant || count === 0) continue;
            const s = service.get(other) ?? 0n;
            if (least === undefined || s * BigInt(least.weight) < least.service * BigInt(weight(other))) least = { service: s, weight: weight(other) };
          }
          if (least !== undefined) {
            const floor = (least.service * BigInt(weight(tenant)) + BigInt(least.weight) - 1n) / BigInt(least.weight);
            if ((service.get(tenant) ?? 0n) < floor) {
              service.set(tenant, floor);
              record(tenant);
            }
          }
        }
        if (event.type === 'checkpoint') {
          const usage = event.data.usage as { inputTokens?: unknown; outputTokens?: unknown } | undefined;
          if (typeof usage?.inputTokens === 'number' && typeof usage.outputTokens === 'number') checkpointed.set(event.taskId, usage.inputTokens + usage.outputTokens);
        }
        if (event.type === 'claimed') {
          const reserved = (event.data.reserved ?? {}) as Record<string, unknown>;
          let amount = 0;
          for (const [budget, units] of Object.entries(reserved)) if (tokenBudgets.has(budget) && typeof units === 'number') amount += units;
          charge(event.taskId, tenant, amount);
        }
        if (OCCUPYING.has(before) && !OCCUPYING.has(after)) charge(event.taskId, tenant, (checkpointed.get(event.taskId) ?? 0) - (charged.get(event.taskId) ?? 0));
        ready.set(tenant, (ready.get(tenant) ?? 0) + (after === 'ready' ? 1 : 0) - (before === 'ready' ? 1 : 0));
        live.set(tenant, (live.get(tenant) ?? 0) + (LIVE.has(after) ? 1 : 0) - (LIVE.has(before) ? 1 : 0));
        occupied.set(tenant, (occupied.get(tenant) ?? 0) + (OCCUPYING.has(after) ? 1 : 0) - (OCCUPYING.has(before) ? 1 : 0));
        let mine = readyTasks.get(tenant);
        if (mine === undefined) readyTasks.set(tenant, (mine = new Set()));
        if (after === 'ready') mine.add(event.taskId);
        else mine.delete(event.taskId);
        if (event.type === 'enqueued') notBefore.set(event.taskId, event.at);
        if (event.type === 'retry_scheduled' && typeof event.data.backoffMs === 'number') notBefore.set(event.taskId, event.at + event.data.backoffMs);
        if (event.type === 'interrupted' || event.type === 'stop_confirmed' || event.type === 'reconciled') notBefore.set(event.taskId, event.at);
      });
    });
    for (const step of steps) step();
    const C = Math.max(0, ...perRun.values());
    // The judgement: replay again with C known.
    for (const map of [charged, checkpointed, perRun, occupied, readyTasks, notBefore] as Map<unknown, unknown>[]) map.clear();
    service.clear();
    series.clear();
    ready.clear();
    live.clear();
    /** Eligible at `at`: work whose backoff has passed, and a free place under the tenant's slot limit. */
    const eligible = (tenant: string, at: number): boolean => {
      if ((occupied.get(tenant) ?? 0) >= tenantLimit(config, tenant)) return false;
      for (const id of readyTasks.get(tenant) ?? []) if ((notBefore.get(id) ?? 0) <= at) return true;
      return false;
    };
    steps.forEach((step, index) => {
      step();
      const event = world.events[index]!;
      // Read in place, once per event: no copy of the books or of a tenant's ready tasks.
      const backlogged: string[] = [];
      for (const [tenant, n] of ready) if (n > 0 && eligible(tenant, event.at)) backlogged.push(tenant);
      backlogged.sort();
      // Deleting the entry being visited is safe in a Map's iteration; the others are all still visited.
      for (const key of since.keys()) {
        const [a, b] = key.split('\u0000') as [string, string];
        if (!backlogged.includes(a) || !backlogged.includes(b)) since.delete(key);
      }
      for (let i = 0; i < backlogged.length; i++) {
        for (let j = i + 1; j < backlogged.length; j++) {
          const a = backlogged[i]!;
          const b = backlogged[j]!;
          const key = `${a}\u0000${b}`;
          const d = D(a, b);
          const start = since.get(key);
          if (start === undefined) {
            since.set(key, d);
            continue;
          }
          const la = BigInt(tenantLimit(config, a) + 1) * BigInt(C) * BigInt(weight(b));
          const lb = BigInt(tenantLimit(config, b) + 1) * BigInt(C) * BigInt(weight(a));
          const bound = abs(start) + (la > lb ? la : lb);
          if (abs(d) > bound) {
            out.add('bound', `after event ${event.id}: tenants ${a} and ${b}, both with work waiting, both eligible, differ by ${d} in weighted service (S_a x w_b - S_b x w_a), over the bound ${bound} (C ${C} tokens)`, { taskId: event.taskId });
            since.set(key, d);
          }
        }
      }
    });
    booksOf.set(world, series);
    maxChargeOf.set(world, C);
    // The final rows (when the world exported them) are the judge's books.
    if (world.tenantServices !== undefined) {
      const rows = new Map(world.tenantServices.map((row) => [row.tenant, BigInt(row.service)]));
      for (const [tenant, books] of service) {
        if ((rows.get(tenant) ?? 0n) !== books) out.add('books', `tenant ${tenant}'s service row says ${rows.get(tenant) ?? 'nothing'}, the books ${books}`);
      }
      for (const [tenant, value] of rows) if (!service.has(tenant) && value !== 0n) out.add('books', `tenant ${tenant} has a service row (${value}) but the books never charged it`);
    }
    return out.list;
  },
};
