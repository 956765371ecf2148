import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { faultCount, emptyPlan } from '../faults/plan.ts';
import { simulate } from '../run-scenario.ts';
import type { ScenarioSpec } from '../scenario.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import { readCounterexample } from './counterexample.ts';
import { defaultInvariant, planOf, shrinkCase, smallerSizes, type ShrunkCounterexample } from './shrink.ts';
import { drawnPartOf } from '../workloads/index.ts';
import { withTasks, withTopics } from '../workloads/__test-helpers__/parts.ts';

const scratch = mkdtempSync(join(tmpdir(), 'leasehold-shrink-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * mixed (its client swarm and its swarm of faults) with one more task, L, and an expectation that cannot
 * hold on sound code: L is expected to end failed, and it ends done. Every seed fails with
 * expect:final-state, whatever the faults, so the shrinker can take them all away.
 */
function expectsTheImpossible(topics = 8): ScenarioSpec {
  const mixed = catalogueScenario('mixed');
  return {
    ...mixed,
    name: 'expects-the-impossible',
    workload: withTasks(withTopics(mixed.workload, topics), [{ atMs: 0, tenant: 'acme', topic: 'lunch', priority: 30, label: 'L' }]),
    expect: [{ kind: 'final-state', task: 'L', state: 'failed' }],
  };
}

describe('shrink (sim/check/shrink.ts)', () => {
  it('shrinks a real failing case to fewer faults and a smaller workload, and the file replays to the same invariant and hash', async () => {
    const spec = expectsTheImpossible();
    const seed = '2';
    const first = await simulate({ scenario: spec, seed });
    expect(first.report.violations.map((violation) => violation.invariant)).toEqual(['expect:final-state']);
    expect(faultCount(first.world.plan)).toBeGreaterThan(0);
    const out = join(scratch, 'shrunk.json');
    const lines: string[] = [];
    const outcome = await shrinkCase({
      case: { scenario: spec.name, scenarioSpec: spec, seed, plan: first.world.plan, violations: first.report.violations },
      invariant: 'expect:final-state',
      out,
      maxRuns: 30,
      maxMs: 120_000,
      onProgress: (line) => lines.push(line),
    });
    expect(outcome).toMatchObject({ reproduced: true, invariant: 'expect:final-state', verdict: 'safety', file: out, replay: `leasehold replay ${out}` });
    expect(outcome.before).toEqual({ faults: faultCount(first.world.plan), tasks: first.world.final.tasks.length });
    expect(outcome.after.faults).toBeLessThanOrEqual(outcome.before.faults);
    // This expectation holds under no faults at all, and on one topic.
    expect(outcome.after.faults).toBe(0);
    expect(outcome.after.tasks).toBeLessThan(outcome.before.tasks);
    expect(outcome.workload).toEqual(['topics 8 -> 1']);
    expect(lines[0]).toMatch(/^shrink: expects-the-impossible seed 2 fails with expect:final-state: \d+ fault\(s\), \d+ task\(s\)/);
    expect(lines.at(-1)).toMatch(/^shrink: \d+ -> 0 fault\(s\), \d+ -> \d+ task\(s\) in \d+ runs$/);

    const file = readCounterexample(out) as ShrunkCounterexample;
    expect(file.shrunk).toMatchObject({ invariant: 'expect:final-state', before: outcome.before, after: outcome.after, from: null });
    // The shrunk file keeps the workload's typed parts: the topics part drew one topic.
    expect(file.scenarioSpec.workload.parts.map((item) => item.kind)).toEqual(['topics', 'client-swarm', 'tasks']);
    expect(drawnPartOf(file.scenarioSpec.workload)).toMatchObject({ kind: 'topics', count: 1 });
    const replayed = await simulate({ scenario: file.scenarioSpec, seed: file.seed, ...(file.plan === undefined ? {} : { plan: file.plan }) });
    expect(replayed.report.traceHash).toBe(file.traceHash);
    expect(replayed.report.violations.map((violation) => violation.invariant)).toContain('expect:final-state');
    expect(faultCount(replayed.world.plan)).toBe(0);
  });

  it('keeps the case as it is when the budget runs out, and says so', async () => {
    const spec = expectsTheImpossible(3);
    const out = join(scratch, 'budget.json');
    const outcome = await shrinkCase({ case: { scenario: spec.name, scenarioSpec: spec, seed: '5' }, invariant: 'expect:final-state', out, maxRuns: 1, maxMs: 120_000 });
    expect(outcome).toMatchObject({ reproduced: true, exhausted: true, runs: 2, workload: [] });
    expect(outcome.after).toEqual(outcome.before);
    expect(JSON.parse(readFileSync(out, 'utf8')).shrunk.exhausted).toBe(true);
  });

  it('does not shrink, nor write, a case that does not fail with the invariant', async () => {
    const spec = { ...expectsTheImpossible(2), expect: [], faults: { plan: emptyPlan() } };
    const out = join(scratch, 'never.json');
    const outcome = await shrinkCase({ case: { scenario: spec.name, scenarioSpec: spec, seed: '1' }, invariant: 'I8', out, maxRuns: 10, maxMs: 60_000 });
    expect(outcome).toMatchObject({ reproduced: false, runs: 1, verdict: 'pass' });
    expect(outcome.file).toBeUndefined();
    expect(() => readFileSync(out)).toThrow();
  });

  it('steps sizes up from 1 along Fibonacci, removes faults by index, and names the invariant of a case', () => {
    expect(smallerSizes(20)).toEqual([1, 2, 3, 5, 8, 13]);
    expect(smallerSizes(1)).toEqual([]);
    const plan = { ...emptyPlan(), timed: [{ kind: 'kill' as const, atMs: 1, worker: 0, reviveAfterMs: 1 }, { kind: 'kill' as const, atMs: 2, worker: 1, reviveAfterMs: 1 }] };
    plan.rates = { ...plan.rates, toolErrorProbability: 0.1 };
    const kept = planOf(plan, [{ kind: 'timed', index: 1 }]);
    expect(kept.timed).toEqual([plan.timed[1]]);
    expect(kept.rates.toolErrorProbability).toBe(0);
    expect(defaultInvariant({ violations: [{ invariant: 'I8', kind: 'safety', message: '' }] })).toBe('I8');
    expect(defaultInvariant({ violations: [], crash: 'boom' })).toBe('harness');
    expect(defaultInvariant({ violations: [] })).toBeUndefined();
  });
});
