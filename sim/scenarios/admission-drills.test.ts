import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readScenarioFile } from '../check/scenario-file.ts';
import { coverageMarks, SCENARIO_MARKS } from '../checkers/marks.ts';
import { budgetRestart, claimsReserve, deferredThenRan, reservationsOnce, tenantPaused } from '../expectations/admission.ts';
import { checkExpectations, expectationSchema } from '../expectations/index.ts';
import type { ExpectationKind } from '../expectations/types.ts';
import { simulate } from '../run-scenario.ts';
import type { ScenarioSpec } from '../scenario.ts';
import type { WorldResult } from '../world.ts';

/**
 * Seed 004's drills that issue 16 brought (D1 critical-under-full, D6 tenant-pause, D8 reconcile-auto)
 * and the budgets added to kill-takeover, retry-storm and scheduler-restart. Each scenario's own
 * expectations hold on a real run, and every mark SCENARIO_MARKS anchors to it is reached there; each
 * new expectation kind fails on the run altered the way a bug would alter it (a claim of a paused
 * tenant, a reservation released twice, a retry that reserved nothing, a restart that refilled a
 * bucket, a critical task never deferred).
 */

const ROOT = join(import.meta.dirname, '..', '..', 'scenarios');

function load(name: string): ScenarioSpec {
  return readScenarioFile(join(ROOT, `${name}.json`));
}

const runs = new Map<string, Promise<WorldResult>>();
function run(name: string, seed = '1'): Promise<WorldResult> {
  const key = `${name}/${seed}`;
  let found = runs.get(key);
  if (found === undefined) runs.set(key, (found = simulate({ scenario: load(name), seed }).then(({ world }) => world)));
  return found;
}

function check<S extends { kind: string }>(kind: ExpectationKind<S>, spec: Omit<S, 'kind'>, world: WorldResult): string[] {
  return kind.check({ kind: kind.kind, ...spec } as S, world);
}

/** The same run with another event log (a fresh object, so the memoised analysis is rebuilt). */
function withEvents(world: WorldResult, change: (events: WorldResult['events']) => WorldResult['events']): WorldResult {
  return { ...world, events: change(world.events.map((event) => ({ ...event, data: structuredClone(event.data) }))) };
}

const NEW = ['critical-under-full', 'tenant-pause', 'reconcile-auto'] as const;
const CHANGED = ['kill-takeover', 'retry-storm', 'scheduler-restart'] as const;

describe("seed 004's admission drills", () => {
  for (const name of [...NEW, ...CHANGED]) {
    it(`${name}: its expectations are valid and hold on seed 1, and it reaches the marks anchored to it`, { timeout: 120_000 }, async () => {
      const spec = load(name);
      expect(spec.source).toMatch(/seed 00[24]/);
      expect(spec.expect?.length).toBeGreaterThan(2);
      for (const expectation of spec.expect ?? []) expect(expectationSchema.safeParse(expectation).error?.issues ?? []).toEqual([]);
      expect(Object.keys(spec.queue.budgets ?? {}).length).toBeGreaterThan(0);
      const world = await run(name);
      expect(checkExpectations(world).map((violation) => violation.message)).toEqual([]);
      const marks = coverageMarks(world);
      for (const mark of SCENARIO_MARKS[name] ?? []) expect(marks[mark], mark).toBeGreaterThan(0);
    });
  }

  it("records the operator's pauseTenant and resumeTenant calls (args as the queue takes them) and the workers' reserve calls", async () => {
    const paused = await run('tenant-pause');
    const calls = paused.history.entries().filter((entry) => entry.type === 'invoke' && (entry.op === 'pauseTenant' || entry.op === 'resumeTenant'));
    expect(calls.map((entry) => [entry.actor, (entry as { op: string }).op, (entry.data as { args: unknown }).args])).toEqual([
      ['operator', 'pauseTenant', ['acme', 'drill: pending work, no new lease']],
      ['operator', 'resumeTenant', ['acme']],
    ]);
    const reserves = (await run('reconcile-auto')).history.entries().filter((entry) => entry.type !== 'note' && entry.op === 'reserve');
    expect(reserves.filter((entry) => entry.type === 'invoke').length).toBeGreaterThan(10);
    expect(reserves.every((entry) => /^w\d+#\d+$/.test(entry.actor) && (entry as { taskId?: number }).taskId !== undefined)).toBe(true);
  });

  it('resumes a tenant still paused when the safety phase ends, so its work drains (S5)', { timeout: 60_000 }, async () => {
    const spec = load('tenant-pause');
    const plan = (spec.faults as { plan: { timed: { kind: string }[] } }).plan;
    const unresumed: ScenarioSpec = { ...spec, faults: { plan: { ...plan, timed: plan.timed.filter((fault) => fault.kind !== 'resume-tenant') } } as ScenarioSpec['faults'] };
    const { world } = await simulate({ scenario: unresumed, seed: '1' });
    const resumes = world.history.entries().filter((entry) => entry.type === 'ok' && entry.op === 'resumeTenant');
    expect(resumes.map((entry) => entry.timeMs)).toEqual([world.safetyEndMs]);
    expect(world.drained).toBe(true);
    expect(check(tenantPaused, { tenant: 'acme' }, world)).toEqual([]);
    expect(world.final.tasks.every((task) => task.state === 'done')).toBe(true);
  });

  it('critical-under-full: a critical task never deferred, or a normal one treated as critical, fails deferred-then-ran', async () => {
    const world = await run('critical-under-full');
    const spec = { tasks: { labels: ['C1', 'C2', 'C3'], minTasks: 3 }, critical: true, reason: 'capacity' as const, state: 'done' };
    expect(check(deferredThenRan, spec, world)).toEqual([]);
    const undeferred = withEvents(world, (events) => events.map((event) => (event.type === 'enqueued' && event.data.critical === true ? { ...event, data: { ...event.data, admission: undefined } } : event)));
    expect(check(deferredThenRan, spec, undeferred).join('\n')).toMatch(/was not deferred capacity before its first claim/);
    expect(check(deferredThenRan, { ...spec, tasks: { labels: ['F1'], minTasks: 1 } }, world).join('\n')).toMatch(/matched 0 accepted tasks.*critical/);
  });

  it("tenant-pause: a claim of the paused tenant's task inside the pause fails tenant-paused", async () => {
    const world = await run('tenant-pause');
    expect(check(tenantPaused, { tenant: 'acme' }, world)).toEqual([]);
    const pause = world.history.entries().find((entry) => entry.type === 'ok' && entry.op === 'pauseTenant');
    const ev = (pause?.data as { ev: number }).ev;
    const acme = new Set(world.final.tasks.filter((task) => task.tenant === 'acme').map((task) => task.id));
    // A globex claim just after the pause is relabelled as an acme task's: the queue would have leased a paused tenant.
    const victim = world.events.find((event) => event.id > ev && event.type === 'claimed' && !acme.has(event.taskId))!;
    const bad = withEvents(world, (events) => events.map((event) => (event.id === victim.id ? { ...event, taskId: [...acme][0]! } : event)));
    expect(check(tenantPaused, { tenant: 'acme' }, bad).join('\n')).toMatch(/of paused tenant acme was claimed/);
    expect(check(tenantPaused, { tenant: 'globex' }, world).join('\n')).toMatch(/paused 0 time/);
  });

  it('reconcile-auto: a reservation released twice, or released at the expiry to uncertain, fails reservations-once', async () => {
    const world = await run('reconcile-auto');
    expect(check(reservationsOnce, { minCarried: 1, minReconciled: 1 }, world)).toEqual([]);
    const expiry = world.events.find((event) => event.type === 'lease_expired')!;
    const releasedAtExpiry = withEvents(world, (events) => events.map((event) => (event.id === expiry.id ? { ...event, data: { ...event.data, released: { browser_sessions: 1 } } } : event)));
    expect(check(reservationsOnce, {}, releasedAtExpiry).join('\n')).toMatch(/expiry to uncertain .* released units/);
    const completion = world.events.find((event) => event.type === 'completed' && event.data.released !== undefined)!;
    const twice = withEvents(world, (events) => {
      const at = events.findIndex((event) => event.id === completion.id);
      return [...events.slice(0, at + 1), { ...completion, id: completion.id + 0.5, seq: completion.seq + 1 }, ...events.slice(at + 1)];
    });
    expect(check(reservationsOnce, {}, twice).join('\n')).toMatch(/released .* with nothing reserved/);
  });

  it('reservations-once reads a budget named constructor as data: the same history with the budget renamed still passes', async () => {
    const world = await run('reconcile-auto');
    const dropZeros = (map: unknown) => (map === undefined || map === null || typeof map !== 'object' ? map : Object.fromEntries(Object.entries(map).filter(([, units]) => units !== 0)));
    const rename = (map: unknown) =>
      map === undefined || map === null || typeof map !== 'object' ? map : Object.fromEntries(Object.entries(map).map(([budget, units]) => [budget === 'browser_sessions' ? 'constructor' : budget, units]));
    const renamed = withEvents(world, (events) =>
      events.map((event) => ({
        ...event,
        data: Object.fromEntries(Object.entries(event.data).map(([field, value]) => [field, ['reserved', 'released', 'overdraft'].includes(field) ? rename(value) : field === 'consumed' ? dropZeros(rename(value)) : value])),
      })),
    );
    expect(renamed.events.some((event) => JSON.stringify(event.data.reserved ?? {}).includes('"constructor"'))).toBe(true);
    // A consumed map that leaves out what it consumed none of (a missing budget reads as 0): the name
    // must not be looked up on Object.prototype.
    expect(check(reservationsOnce, { minCarried: 1, minReconciled: 1 }, renamed)).toEqual([]);
  });

  it('retry-storm: a retry claim that reserved nothing fails claims-reserve', async () => {
    const world = await run('retry-storm');
    expect(check(claimsReserve, { minRetryClaims: 1 }, world)).toEqual([]);
    const retried = new Set(world.events.filter((event) => event.type === 'retry_scheduled').map((event) => event.taskId));
    const claim = world.events.filter((event) => event.type === 'claimed' && retried.has(event.taskId)).at(-1)!;
    const free = withEvents(world, (events) => events.map((event) => (event.id === claim.id ? { ...event, data: { ...event.data, reserved: undefined } } : event)));
    expect(check(claimsReserve, {}, free).join('\n')).toMatch(/reserved \{\}, the task needs/);
  });

  it('scheduler-restart: a bucket refilled across a restart (or with the clock gone back) fails budget-restart', async () => {
    const world = await run('scheduler-restart');
    expect(check(budgetRestart, { minRestarts: 5 }, world)).toEqual([]);
    const entries = world.history.entries();
    const refill = (levels: { kind: string; level: number; limit: number }[]) => levels.map((level) => (level.kind === 'rate' ? { ...level, level: level.limit } : level));
    const bumped = entries.map((entry) => (entry.type === 'note' && entry.kind === 'budget-levels' ? { ...entry, data: { ...(entry.data as object), levels: refill((entry.data as { levels: never[] }).levels) } } : entry));
    const history = Object.assign(Object.create(world.history) as WorldResult['history'], { entries: () => bumped });
    const problems = check(budgetRestart, {}, { ...world, history });
    expect(problems.join('\n')).toMatch(/the restart granted units/);
  });
});
