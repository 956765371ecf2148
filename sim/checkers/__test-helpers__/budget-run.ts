import type { Needs, QueueConfig } from '../../../src/queue/types.ts';
import type { Arrival } from '../../workload.ts';
import type { WorldResult } from '../../world.ts';
import { oneStepScript, realRun, type RealRun, type RealTaskSpec } from './real-run.ts';

/**
 * Test support for the issue 16 checkers (I15, I16, I17, I20): a hand-driven real queue whose tasks
 * name budget needs and a critical class, and the admin reads the world exports at its end.
 */

export interface BudgetTaskSpec extends RealTaskSpec {
  needs?: Needs;
  critical?: boolean;
}

/** The client's enqueue with needs and critical, recorded as `World.enqueue` records it. */
export async function enqueueWith(run: RealRun, spec: BudgetTaskSpec = {}): Promise<number | undefined> {
  const tenant = spec.tenant ?? 'acme';
  const topic = spec.topic ?? `topic-${run.arrivals.length + 1}`;
  const version = spec.version ?? 1;
  const script = spec.script ?? oneStepScript(`${tenant}/${topic}/v${version}`);
  const request: Arrival['request'] = { tenant, topic, version, priority: spec.priority ?? 10, tier: spec.tier ?? 'standard', input: { script } as unknown as Arrival['request']['input'] };
  if (spec.needs !== undefined) request.needs = spec.needs;
  if (spec.critical !== undefined) request.critical = spec.critical;
  const arrival: Arrival = { atMs: run.clock.elapsedMs, request };
  run.arrivals.push(arrival);
  const invoke = run.history.invoke('client', 'enqueue', { data: { tenant, topic, version } });
  const result = await run.queue.enqueue(request);
  run.enqueued.push({ arrival, result });
  const ev = await run.queue.eventCursor();
  if (result.ok) run.history.ok(invoke, { taskId: result.taskId, data: { outcome: result.status, ev } });
  else run.history.fail(invoke, result.error, { data: { ev } });
  return result.ok ? result.taskId : undefined;
}

/** An operator's pause or resume, recorded with the tenant in the invoke's data and the cursor at commit. */
export async function pause(run: RealRun, tenant: string, reason = 'maintenance') {
  const invoke = run.history.invoke('operator', 'pauseTenant', { data: { tenant, reason, args: [tenant, reason] } });
  const result = await run.queue.pauseTenant(tenant, reason);
  const ev = await run.queue.eventCursor();
  if (result.ok) run.history.ok(invoke, { data: { ev, changed: result.changed } });
  else run.history.fail(invoke, result.error, { data: { ev } });
  return result;
}

export async function resume(run: RealRun, tenant: string) {
  const invoke = run.history.invoke('operator', 'resumeTenant', { data: { tenant, args: [tenant] } });
  const result = await run.queue.resumeTenant(tenant);
  const ev = await run.queue.eventCursor();
  if (result.ok) run.history.ok(invoke, { data: { ev, changed: result.changed } });
  else run.history.fail(invoke, result.error, { data: { ev } });
  return result;
}

/** The finished run with the four issue 16 reads, as sim/world.ts `finish` exports them. */
export async function buildWithBudgets(run: RealRun, overrides: Partial<WorldResult> = {}): Promise<WorldResult> {
  const extra: Partial<WorldResult> = {
    budgetLevelsAt: run.clock.now(),
    budgetLevels: await run.queue.budgetLevels(),
    reservations: await run.queue.reservations(),
    admissionDecisions: await run.queue.admissionDecisions(),
    pausedTenants: await run.queue.pausedTenants(),
    tenantServices: await run.queue.tenantServices(),
  };
  return await run.build({ ...extra, ...overrides });
}

export function budgetRun(config: Partial<QueueConfig>): RealRun {
  return realRun(config);
}

/** A copy of a world judged under other queue settings (checkers memoise per result object). */
export function judgedUnder(world: WorldResult, queue: Partial<QueueConfig>): WorldResult {
  return { ...world, scenario: { ...world.scenario, queue: { ...world.scenario.queue, ...queue } } };
}

/** A copy of a world whose events are edited by `edit` (a new object, so the memoised analysis is not reused). */
export function withEvents(world: WorldResult, edit: (events: WorldResult['events']) => WorldResult['events']): WorldResult {
  return { ...world, events: edit(world.events.map((event) => ({ ...event, data: { ...event.data } }))) };
}
