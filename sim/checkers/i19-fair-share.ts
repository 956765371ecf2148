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
 * back from idle is raised to the least normalised service of the tenants with work waiting (no credit
 * for its absence).
 *
 * Rule: over every interval in which two tenants a and b both have ready work, D = S_a x w_b - S_b x w_a
 * stays within |D_0| + max((L_a + 1) x C x w_b, (L_b + 1) x C x w_a) of zero, D_0 its value when the
 * interval began, w_t the weight (1 unless named), L_t the tenant's slot limit and C the most service
 * one run was charged in this run (the bound src/queue/fair-share.ts derives, restated). "Both have
 * ready work" is stricter than the SPEC's "backlogged and eligible" (a tenant at its slot limit still
 * counts): the claim serves the least served eligible tenant, and a tenant held at its limit is served
 * again as soon as a slot frees, so its lag stays within the same bound.
 */
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
    const since = new Map<string, bigint>();
    const abs = (x: bigint) => (x < 0n ? -x : x);
    const D = (a: string, b: string) => (service.get(a) ?? 0n) * BigInt(weight(b)) - (service.get(b) ?? 0n) * BigInt(weight(a));
    const charge = (taskId: number, tenant: string, amount: number) => {
      if (amount === 0) return;
      charged.set(taskId, (charged.get(taskId) ?? 0) + amount);
      perRun.set(taskId, (perRun.get(taskId) ?? 0) + Math.abs(amount));
      service.set(tenant, (service.get(tenant) ?? 0n) + BigInt(amount));
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
        if (event.type === 'enqueued' && (live.get(tenant) ?? 0) === 0) {
          // Back from idle: no credit for the absence.
          let least: { service: bigint; weight: number } | undefined;
          for (const [other, count] of ready) {
            if (other === tenant || count === 0) continue;
            const s = service.get(other) ?? 0n;
            if (least === undefined || s * BigInt(least.weight) < least.service * BigInt(weight(other))) least = { service: s, weight: weight(other) };
          }
          if (least !== undefined) {
            const floor = (least.service * BigInt(weight(tenant)) + BigInt(least.weight) - 1n) / BigInt(least.weight);
            if ((service.get(tenant) ?? 0n) < floor) service.set(tenant, floor);
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
      });
    });
    for (const step of steps) step();
    const C = Math.max(0, ...perRun.values());
    // The judgement: replay again with C known.
    for (const map of [charged, checkpointed, perRun] as Map<unknown, unknown>[]) map.clear();
    service.clear();
    ready.clear();
    live.clear();
    steps.forEach((step, index) => {
      step();
      const event = world.events[index]!;
      const backlogged = [...ready].filter(([, n]) => n > 0).map(([t]) => t).sort();
      for (const key of [...since.keys()]) {
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
            out.add('bound', `after event ${event.id}: tenants ${a} and ${b}, both with work waiting, differ by ${d} in weighted service (S_a x w_b - S_b x w_a), over the bound ${bound} (C ${C} tokens)`, { taskId: event.taskId });
            since.set(key, d);
          }
        }
      }
    });
    return out.list;
  },
};
