import { describe, expect, it } from 'vitest';
import { NO_RATES, type FaultPlan } from '../faults/plan.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import { World } from '../world.ts';
import { ALL_PATH_PAIRS, ALL_WINDOWS, windowTally } from './windows.ts';
import { topicsOnly } from '../workloads/__test-helpers__/parts.ts';

const mixed = catalogueScenario('mixed');

/** One tenant, two topics of two steps with a write each: every kind of await, under one plan. */
function probe(plan: FaultPlan) {
  return {
    ...mixed,
    name: 'windows-probe',
    workers: { ...mixed.workers, count: 2 },
    queue: { globalLimit: 2, perTenantLimit: 2 },
    workload: topicsOnly(mixed.workload, { tenants: ['acme'], count: 2, newVersionProbability: 0, arrivalWindowMs: 0 }, { writeProbability: 1, steps: [2, 2], callsPerStep: [1, 1] }),
    faults: { plan },
    fleet: { interleave: 0, maxWaitMs: 0 },
    phases: { safetyMs: 240_000, livenessMs: 600_000 },
  };
}

describe('windows and path pairs (issue 15 item 4)', () => {
  it('names the window each point fault hit: a kill between two commits, a pause, a clock jump and a cancel at a boundary', async () => {
    const plan: FaultPlan = {
      timed: [],
      points: [
        { kind: 'kill-at', point: 'before_recordEffect', occurrence: 1, reviveAfterMs: 5_000 },
        { kind: 'pause-at', point: 'before_checkpoint', occurrence: 3, durationMs: 1_000 },
        { kind: 'clock-jump-at', point: 'before_heartbeat', occurrence: 1, deltaMs: 2_000 },
        { kind: 'cancel-at', point: 'before_appendEvent', occurrence: 2 },
      ],
      rates: { ...NO_RATES },
    };
    const run = await new World(probe(plan), 'windows').run();
    expect(run.crash).toBeUndefined();
    const { windows, pairs } = windowTally(run);
    expect(windows).toMatchObject({ 'kill@before_recordEffect': 1, 'pause@before_checkpoint': 1, 'cancel@before_appendEvent': 1 });
    for (const name of Object.keys(windows)) expect(ALL_WINDOWS).toContain(name);
    expect(pairs['new>ready + ready>running']).toBe(2);
    for (const name of Object.keys(pairs)) expect(ALL_PATH_PAIRS).toContain(name);
    // The cancel was the operator's, of the task whose boundary it was, recorded like any cancel.
    const note = run.history.entries().find((entry) => entry.type === 'note' && entry.kind === 'cancel-at');
    const taskId = (note?.data as { taskId?: number } | undefined)?.taskId;
    expect(taskId).toBeDefined();
    expect(run.history.entries().some((entry) => entry.type === 'ok' && entry.actor === 'operator' && entry.op === 'cancel' && entry.taskId === taskId)).toBe(true);
  });

  it('counts a pair once per task that combined both moves, and never two moves into terminal states', () => {
    expect(ALL_PATH_PAIRS.length).toBeGreaterThan(50);
    expect(ALL_PATH_PAIRS).toContain('running>uncertain + uncertain>ready');
    expect(ALL_PATH_PAIRS).not.toContain('running>done + running>failed');
    expect(new Set(ALL_PATH_PAIRS).size).toBe(ALL_PATH_PAIRS.length);
  });

  it('reaches windows and pairs on a real mixed seed, every one of them in the universe', async () => {
    const run = await new World(mixed, 3).run();
    const { windows, pairs } = windowTally(run);
    for (const name of Object.keys(windows)) expect(ALL_WINDOWS).toContain(name);
    for (const name of Object.keys(pairs)) expect(ALL_PATH_PAIRS).toContain(name);
    expect(Object.keys(pairs).length).toBeGreaterThan(3);
  }, 60_000);
});
