import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { readScenarioFile } from '../check/scenario-file.ts';
import { i5Priority, i5Starvation } from '../checkers/i5-priority.ts';
import { analyse } from '../checkers/timeline.ts';
import { agingOvertake } from '../expectations/aging-overtake.ts';
import { eventCount } from '../expectations/event-count.ts';
import { expectationSchema } from '../expectations/index.ts';
import { maxWait } from '../expectations/max-wait.ts';
import { restartDurable } from '../expectations/restart-durable.ts';
import { retryBackoff } from '../expectations/retry-backoff.ts';
import { retryBounds } from '../expectations/retry-bounds.ts';
import { statesAtRestart } from '../expectations/states-at-restart.ts';
import { tenantProgress } from '../expectations/tenant-progress.ts';
import type { ExpectationKind } from '../expectations/types.ts';
import { simulate } from '../run-scenario.ts';
import type { ScenarioSpec } from '../scenario.ts';
import type { WorldResult } from '../world.ts';
import { without } from '../workloads/__test-helpers__/parts.ts';

/**
 * The seed 003 / 004 catalogue scenarios about load and outages (starvation-flood, tenant-flood,
 * retry-storm, scheduler-restart) and the expectation kinds they brought. Each scenario passes on a
 * few seeds with every expectation checked (`leasehold check` runs fifty and more); each kind holds
 * where it should and fails where it should not: on a real run of a variant that breaks the property
 * (the default aging cap, no tenant limit), or on a run whose log is altered the way a bug would
 * alter it (a shorter backoff, a lost event), the hand-made bad history S7 asks of every checker.
 */

const ROOT = join(import.meta.dirname, '..', '..', 'scenarios');
const NAMES = ['starvation-flood', 'tenant-flood', 'retry-storm', 'scheduler-restart'] as const;

/** The file as a scenario file is read: its parts resolved into the runner's spec. */
function load(name: (typeof NAMES)[number]): ScenarioSpec {
  return readScenarioFile(join(ROOT, `${name}.json`));
}

function check<S extends { kind: string }>(kind: ExpectationKind<S>, spec: Omit<S, 'kind'>, run: WorldResult): string[] {
  return kind.check({ kind: kind.kind, ...spec } as S, run);
}

/** The same run with another event log (a fresh object, so the memoised analysis is rebuilt). */
function withEvents(run: WorldResult, change: (events: WorldResult['events']) => WorldResult['events']): WorldResult {
  return { ...run, events: change(run.events.map((event) => ({ ...event, data: { ...event.data } }))) };
}

function failures(report: { violations: { invariant: string }[] }): string[] {
  return [...new Set(report.violations.map((violation) => violation.invariant))].sort();
}

describe('the flood, retry and restart scenarios', () => {
  for (const name of NAMES) {
    it(`${name}: a valid file whose expectations hold on seeds 1 and 2`, async () => {
      const spec = load(name);
      expect(spec.name).toBe(name);
      expect(spec.description).not.toBe('');
      expect(spec.source).toMatch(/^seed 00[34]/);
      expect(spec.expect?.length).toBeGreaterThan(1);
      for (const expectation of spec.expect ?? []) expect(expectationSchema.safeParse(expectation).error?.issues ?? []).toEqual([]);
      for (const seed of ['1', '2']) {
        const { report } = await simulate({ scenario: spec, seed });
        expect(report.violations.map((violation) => `${violation.invariant}: ${violation.message}`)).toEqual([]);
      }
    });
  }
});

describe('starvation under a flood: max-wait and aging-overtake', () => {
  it('with the default aging cap of 30 the flood starves L0 until it ends: I5 allows it, max-wait does not', async () => {
    const spec = load('starvation-flood');
    const { world, report } = await simulate({ scenario: { ...spec, queue: { ...spec.queue, agingCap: 30 } }, seed: '1' });
    expect(failures(report)).toEqual(['expect:aging-overtake', 'expect:max-wait']);
    expect(i5Priority.check(world)).toEqual([]);
    expect(i5Starvation.check(world)).toEqual([]);
    const messages = check(maxWait, { tasks: { labels: ['L0'] }, agingSlackMs: 90_000 }, world);
    expect(messages.join('\n')).toMatch(/'L0'\) \(base 0\) waited \d+ ms for its first claim, bound 390000 ms/);
    // Capped at 30, L0 outranks no flood task that has waited a period: it starts only after the flood (0..450 s).
    const l0 = analyse(world).eventsByTask.get(11)!;
    expect(l0.find((event) => event.type === 'claimed')!.at - world.startMs).toBeGreaterThan(450_000);
  });

  it('without the flood the low-priority tasks start at once: max-wait holds, aging-overtake says aging decided nothing', async () => {
    const spec = load('starvation-flood');
    const { world } = await simulate({ scenario: { ...spec, workload: without(spec.workload, 'flood') }, seed: '1' });
    const selection = { labels: ['L0', 'L10', 'L20'], minTasks: 3 };
    expect(check(maxWait, { tasks: selection, agingSlackMs: 90_000 }, world)).toEqual([]);
    expect(check(maxWait, { tasks: selection, maxMs: 5_000 }, world)).toEqual([]);
    const overtakes = check(agingOvertake, { tasks: selection }, world);
    expect(overtakes).toHaveLength(3);
    expect(overtakes[0]).toMatch(/'L0'\) \(base 0\) was first claimed at \d+ over 0 eligible tasks of higher base priority/);
  });

  it('max-wait: the selection must be big enough, a task that never starts fails, and the aging bound needs a cap that reaches the top', async () => {
    const { world } = await simulate({ scenario: load('starvation-flood'), seed: '3' });
    expect(check(maxWait, { tasks: { labels: ['no-such-task'] }, maxMs: 1 }, world)).toEqual([
      "the selection (labels no-such-task) matched 0 accepted tasks, expected at least 1",
    ]);
    expect(check(maxWait, { tasks: { labelPrefix: 'hot-', minTasks: 150 }, maxMs: 1_000_000 }, world)).toEqual([]);
    expect(check(maxWait, { tasks: { priority: [0, 0] }, maxMs: 1_000 }, world)).toHaveLength(1);
    const stillWaiting = withEvents(world, (events) => events.filter((event) => !(event.taskId === 1 && event.seq > 1)));
    expect(check(maxWait, { tasks: { labels: ['hot-1'] }, maxMs: 1_000_000 }, stillWaiting).join('\n')).toMatch(
      /^task 1 \('hot-1'\) \(base \d+\) never started: it was still waiting when the run ended, bound 1000000 ms$/,
    );
    const lowCap = { ...world, scenario: { ...world.scenario, queue: { ...world.scenario.queue, agingCap: 20 } } };
    expect(check(maxWait, { tasks: { labels: ['L0'] }, agingSlackMs: 0 }, lowCap)).toEqual([
      "task 11 ('L0') (base 0): agingCap 20 < 30, so aging alone never lifts it to the top score and there is no aging bound",
    ]);
    expect(expectationSchema.safeParse({ kind: 'max-wait', maxMs: 1, agingSlackMs: 1 }).success).toBe(false);
    expect(expectationSchema.safeParse({ kind: 'max-wait' }).success).toBe(false);
    expect(expectationSchema.safeParse({ kind: 'max-wait', maxMs: 1, tasks: { label: ['x'] } }).success).toBe(false);
  });
});

describe('a tenant fills its budget: tenant-progress', () => {
  it('without bulk\'s limit bulk takes all six slots: acme and globex get no claim while it is full and wait long', async () => {
    const spec = load('tenant-flood');
    const { report, world } = await simulate({ scenario: { ...spec, queue: { ...spec.queue, tenantLimits: { bulk: 6 } } }, seed: '1' });
    expect(failures(report)).toEqual(['expect:max-wait', 'expect:peak-occupancy', 'expect:tenant-progress']);
    expect(check(tenantProgress, { flooding: 'bulk', others: ['acme', 'globex'] }, world)).toEqual([
      'tenant acme got 0 claim(s) while tenant bulk held all 6 of its slots with work waiting, expected at least 1',
      'tenant globex got 0 claim(s) while tenant bulk held all 6 of its slots with work waiting, expected at least 1',
    ]);
  });

  it('holds with the limit, fails when the flood never fills the budget, and refuses to count the flooding tenant as another', async () => {
    const { world } = await simulate({ scenario: load('tenant-flood'), seed: '1' });
    expect(check(tenantProgress, { flooding: 'bulk', minClaims: 10 }, world)).toEqual([]);
    expect(check(tenantProgress, { flooding: 'globex', others: ['acme'] }, world).join('\n')).toMatch(/tenant globex never held all 2 of its slots with work still waiting/);
    expect(check(tenantProgress, { flooding: 'bulk', others: ['bulk'] }, world)).toEqual(['others names the flooding tenant bulk itself']);
    expect(check(tenantProgress, { flooding: 'bulk', minClaims: 1_000 }, world)).toHaveLength(2);
  });
});

describe('a retry storm: retry-backoff, retry-bounds and event-count', () => {
  let world: WorldResult;
  beforeAll(async () => {
    world = (await simulate({ scenario: load('retry-storm'), seed: '1' })).world;
  });

  it('retry-backoff holds on the run, and fails on a backoff off the formula or a claim before the backoff passed', () => {
    expect(check(retryBackoff, {}, world)).toEqual([]);
    const retry = world.events.find((event) => event.type === 'retry_scheduled')!;
    const short = withEvents(world, (events) => events.map((event) => (event.id === retry.id ? { ...event, data: { ...event.data, backoffMs: 1 } } : event)));
    expect(check(retryBackoff, {}, short).join('\n')).toMatch(new RegExp(`task ${retry.taskId} .*: retry after attempt 1 backs off 1 ms, expected \\[1600, 2400\\]`));
    const next = world.events.find((event) => event.taskId === retry.taskId && event.type === 'claimed' && event.id > retry.id)!;
    const early = withEvents(world, (events) => events.map((event) => (event.id === next.id ? { ...event, at: retry.at + 1 } : event)));
    expect(check(retryBackoff, {}, early).join('\n')).toMatch(new RegExp(`task ${retry.taskId} .* was claimed at ${retry.at + 1}, \\d+ ms before its retry backoff ended`));
    const fatal = withEvents(world, (events) => events.map((event) => (event.id === retry.id ? { ...event, data: { ...event.data, errorClass: 'permission_denied' } } : event)));
    expect(check(retryBackoff, {}, fatal).join('\n')).toMatch(/records error class permission_denied, not a retryable one/);
  });

  it('retry-bounds holds with the configured numbers, fails with stricter ones and without the dead letters', () => {
    expect(check(retryBounds, {}, world)).toEqual([]);
    expect(check(retryBounds, { maxAttempts: 4, maxDeliveries: 4, maxRetryAgeMs: 20_000 }, world)).toEqual([]);
    const strict = check(retryBounds, { maxAttempts: 2, maxDeliveries: 3, maxRetryAgeMs: 5_000 }, world).join('\n');
    expect(strict).toMatch(/is attempt 3, expected at most 2/);
    expect(strict).toMatch(/was delivered more than 3 times/);
    expect(strict).toMatch(/ms after its first claim, expected at most 5000/);
    const noLetters = check(retryBounds, {}, { ...world, deadLetters: [] });
    expect(noLetters.length).toBe(world.deadLetters.length);
    expect(noLetters[0]).toMatch(/ran out \((attempts_exhausted|retry_age_exceeded)\) but has no dead letter/);
    const exhausted = world.deadLetters[0]!;
    const failedAt = world.events.find((event) => event.taskId === exhausted.taskId && event.type === 'failed')!;
    const again = withEvents(world, (events) => [...events, { ...failedAt, id: events.length + 1, seq: failedAt.seq + 1, type: 'claimed', at: failedAt.at + 1, data: { attempt: 1, generation: 99 } }]);
    expect(check(retryBounds, {}, again).join('\n')).toMatch(new RegExp(`task ${exhausted.taskId} .* was claimed at ${failedAt.at + 1} after it had ended \\(failed\\)`));
  });

  it('event-count counts by type, data and selection', () => {
    const retries = world.events.filter((event) => event.type === 'retry_scheduled').length;
    const rateLimited = world.events.filter((event) => event.type === 'retry_scheduled' && event.data.errorClass === 'rate_limited').length;
    expect(check(eventCount, { type: 'retry_scheduled', atLeast: retries, atMost: retries }, world)).toEqual([]);
    expect(check(eventCount, { type: 'retry_scheduled', atMost: retries - 1 }, world)).toEqual([`${retries} retry_scheduled events, expected at most ${retries - 1}`]);
    expect(check(eventCount, { type: 'retry_scheduled', data: { errorClass: 'rate_limited' }, atLeast: rateLimited + 1 }, world)).toEqual([
      `${rateLimited} retry_scheduled events with errorClass="rate_limited", expected at least ${rateLimited + 1}`,
    ]);
    expect(check(eventCount, { type: 'superseded', atMost: 0 }, world)).toEqual([]);
    expect(check(eventCount, { type: 'enqueued', tasks: { tenants: ['acme'] }, atLeast: 20, atMost: 20 }, world)).toEqual([]);
    expect(expectationSchema.safeParse({ kind: 'event-count', type: 'failed' }).success).toBe(false);
  });
});

describe('restarts: states-at-restart and restart-durable', () => {
  let world: WorldResult;
  beforeAll(async () => {
    world = (await simulate({ scenario: load('scheduler-restart'), seed: '1' })).world;
  });

  it('states-at-restart sees the states from the log committed before each restart, and fails for a state nobody was in', () => {
    expect(check(statesAtRestart, { states: ['ready', 'running', 'uncertain', 'retry-waiting', 'terminal'], minRestarts: 5 }, world)).toEqual([]);
    expect(check(statesAtRestart, { states: ['ready', 'terminal'], restart: 'each' }, world)).toEqual([]);
    const cancelled = check(statesAtRestart, { states: ['cancelled'] }, world);
    expect(cancelled).toHaveLength(1);
    expect(cancelled[0]).toMatch(/^no restart saw tasks in all of cancelled: restart 1 at \+50000 ms saw .*ready \d+.*; none cancelled \| restart 2/);
    expect(check(statesAtRestart, { states: ['ready'], restart: 6 }, world)).toEqual(['there is no restart 6: the scheduler restarted 5 time(s)']);
    expect(check(statesAtRestart, { states: ['ready', 'running', 'uncertain', 'retry-waiting', 'terminal'], restart: 'all' }, world)).toEqual([]);
    expect(check(statesAtRestart, { states: ['ready', 'cancelled'], restart: 'all' }, world)).toEqual([expect.stringMatching(/^no restart saw a task cancelled: restart 1 at/)]);
    expect(check(statesAtRestart, { states: ['ready'], minRestarts: 6 }, world)).toEqual(['the scheduler restarted 5 time(s), expected at least 6']);
  });

  it('states-at-restart tells a task waiting out a retry from a ready one', () => {
    const analysis = analyse(world);
    // The last restart: the events before it include a claim and a completion whatever the seed drew.
    const restart = [...world.history.entries()].reverse().find((entry) => entry.type === 'note' && entry.kind === 'restart')!;
    const cursor = analysis.cursorBefore[restart.index]!;
    // Move every retry before the first restart far back in time: their backoffs have passed, they are plain ready.
    const passed = withEvents(world, (events) => events.map((event) => (event.type === 'retry_scheduled' && event.id <= cursor ? { ...event, at: event.at - 1_000_000 } : event)));
    expect(check(statesAtRestart, { states: ['retry-waiting'], restart: 1 }, world)).toEqual([]);
    expect(check(statesAtRestart, { states: ['retry-waiting'], restart: 1 }, passed).join('\n')).toMatch(/restart 1 at \+50000 ms saw .*; none retry-waiting/);
  });

  it('restart-durable holds on the run, and fails when an acknowledged write is missing from the final database', () => {
    expect(check(restartDurable, { minRestarts: 5 }, world)).toEqual([]);
    const analysis = analyse(world);
    // The last restart: the events before it include a claim and a completion whatever the seed drew.
    const restart = [...world.history.entries()].reverse().find((entry) => entry.type === 'note' && entry.kind === 'restart')!;
    const cursor = analysis.cursorBefore[restart.index]!;
    const claim = world.events.find((event) => event.type === 'claimed' && event.id <= cursor)!;
    const lostClaim = check(restartDurable, {}, withEvents(world, (events) => events.filter((event) => event.id !== claim.id)));
    expect(lostClaim[0]).toMatch(/^the event log had reached id (\d+) before the last restart; the final database holds (\d+) of those events$/);
    expect(lostClaim.join('\n')).toMatch(new RegExp(`claim of task ${claim.taskId} \\(generation ${String(claim.data.generation)}\\) at \\+\\d+ ms was acknowledged before a restart, but its claimed event is not in the final database`));
    const completed = world.events.find((event) => event.type === 'completed' && event.id <= cursor)!;
    const lostCompletion = check(restartDurable, {}, withEvents(world, (events) => events.filter((event) => event.id !== completed.id)));
    expect(lostCompletion.join('\n')).toMatch(new RegExp(`complete of task ${completed.taskId} .*but no completed event of that generation is in the final database`));
    const lostTask = check(restartDurable, {}, { ...world, final: { ...world.final, tasks: world.final.tasks.filter((task) => task.id !== 1) }, events: [...world.events] });
    expect(lostTask.join('\n')).toMatch(/enqueue of task 1 at \+\d+ ms was acknowledged before a restart, but the task is not in the final database/);
  });

  it('both fail on a run without restarts', async () => {
    const { world: quiet } = await simulate({ scenario: load('tenant-flood'), seed: '1' });
    expect(check(restartDurable, {}, quiet)).toEqual(['the scheduler restarted 0 time(s), expected at least 1']);
    expect(check(statesAtRestart, { states: ['ready'] }, quiet)).toEqual(['the scheduler restarted 0 time(s), expected at least 1']);
  });
});
