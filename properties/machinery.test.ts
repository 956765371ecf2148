/**
 * The property machinery itself: the arbitraries only make scenarios and plans the World accepts, the
 * run budget scales with LEASEHOLD_RUNS, and a property that fails is caught, shrunk to a single fault,
 * written out as a counterexample file and reported with the replay line last.
 */
import fc from 'fast-check';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../src/queue/config.ts';
import { validatePlan, validateScenario } from '../sim/check/scenario-file.ts';
import type { Checker } from '../sim/checkers/types.ts';
import { faultCount } from '../sim/faults/plan.ts';
import { World } from '../sim/world.ts';
import { drawnPartOf } from '../sim/workloads/index.ts';
import { BALANCED_FAULTS, CRASH_HEAVY_FAULTS, simulationCaseArbitrary, type SimulationCase } from './arbitraries.ts';
import { casesFor, DEFAULT_TOTAL_RUNS, plannedRuns } from './budget.ts';
import { counterexampleId, type PropertyCounterexample } from './counterexample.ts';
import { checkCase, collectingEscapes, reportFailure, runCase, simulationProperty, type InvariantFamily } from './simulation-property.ts';

describe('the arbitraries', () => {
  it('generate only scenarios and plans that a scenario file may hold, with a valid queue configuration', () => {
    for (const faults of [BALANCED_FAULTS, CRASH_HEAVY_FAULTS]) {
      const cases = fc.sample(simulationCaseArbitrary({ name: 'sample', faults, scenario: { agingHeavy: faults === CRASH_HEAVY_FAULTS } }), { numRuns: 300, seed: 7 });
      for (const { scenario, plan } of cases) {
        expect(() => validateScenario(JSON.parse(JSON.stringify(scenario)))).not.toThrow();
        expect(() => validatePlan(plan, 'plan', scenario.workers.count)).not.toThrow();
        const config = resolveConfig(scenario.queue);
        expect(config.leaseMs).toBeGreaterThanOrEqual(3 * config.heartbeatMs);
        for (const fault of plan.timed) expect(fault.atMs).toBeLessThan(scenario.phases.safetyMs);
      }
    }
  });

  it('shrink a plan to nothing and a workload to one topic', () => {
    const arbitrary = simulationCaseArbitrary({ name: 'shrink', faults: CRASH_HEAVY_FAULTS });
    const result = fc.check(
      fc.property(arbitrary, () => false),
      { seed: 3, numRuns: 1 },
    );
    const [smallest] = result.counterexample as [SimulationCase];
    expect(faultCount(smallest.plan)).toBe(0);
    expect(drawnPartOf(smallest.scenario.workload)).toMatchObject({ kind: 'topics', count: 1 });
    expect(smallest.scenario.workers.count).toBe(1);
  });
});

describe('the run budget', () => {
  it('makes at least 2,000 simulated runs by default and scales with LEASEHOLD_RUNS', () => {
    expect(DEFAULT_TOTAL_RUNS).toBeGreaterThanOrEqual(2_000);
    expect(plannedRuns({})).toBe(DEFAULT_TOTAL_RUNS);
    expect(plannedRuns({ LEASEHOLD_RUNS: '20000' })).toBe(20_000);
    expect(casesFor('determinism', {})).toBe(100);
    expect(casesFor('safety', { LEASEHOLD_RUNS: '1' })).toBe(1);
    expect(() => plannedRuns({ LEASEHOLD_RUNS: 'lots' })).toThrow(/LEASEHOLD_RUNS/);
  });
});

/** A deliberately wrong checker: any kill at all is a "violation". */
const flagsAnyKill: Checker = {
  invariant: 'WRONG',
  kind: 'safety',
  description: 'deliberately wrong: a run with a kill fails',
  check: (run) =>
    run.history
      .entries()
      .filter((entry) => entry.type === 'note' && entry.kind === 'kill')
      .map((entry) => ({ invariant: 'WRONG', kind: 'safety' as const, message: `a kill happened (history #${entry.index})`, at: [entry.index] })),
};

describe('a failing simulation property', () => {
  const root = mkdtempSync(join(tmpdir(), 'leasehold-properties-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  /** Each test writes into a directory of its own, so what one finds there never depends on which tests ran before it. */
  const ownDirectory = () => mkdtempSync(join(root, 'case-'));
  const family: InvariantFamily = { suite: 'machinery', checkers: [flagsAnyKill] };
  const property = 'flags any run with a kill';

  it('is caught, shrunk to exactly one fault, written out, and reported with the replay line last', async () => {
    const cases = simulationCaseArbitrary({ name: 'machinery', scenario: { topicsMax: 3 }, faults: BALANCED_FAULTS });
    const details = await fc.check(simulationProperty(cases, family), { seed: 42, numRuns: 100 });
    expect(details.failed).toBe(true);
    const [shrunk] = details.counterexample as [SimulationCase];
    const directory = ownDirectory();
    expect(details.numShrinks).toBeGreaterThan(0);
    expect(faultCount(shrunk.plan), JSON.stringify(shrunk.plan)).toBe(1);
    const [only] = [...shrunk.plan.timed, ...shrunk.plan.points];
    expect(only?.kind === 'kill' || only?.kind === 'kill-at').toBe(true);

    const error = await reportFailure(details, family, property, directory).then(
      () => undefined,
      (thrown: unknown) => thrown as Error,
    );
    expect(error).toBeInstanceOf(Error);
    const lines = error!.message.split('\n');
    const file = join(directory, `${counterexampleId({ suite: 'machinery', ...shrunk })}.json`);
    expect(lines.at(-1)).toBe(`Replay: leasehold replay ${file}`);
    expect(error!.message).toContain('WRONG (safety) a kill happened');
    expect(readdirSync(directory)).toEqual([`${counterexampleId({ suite: 'machinery', ...shrunk })}.json`]);

    const written = JSON.parse(readFileSync(file, 'utf8')) as PropertyCounterexample;
    expect(written).toMatchObject({ shrunk: true, suite: 'machinery', property, seed: shrunk.seed, plan: shrunk.plan, scenario: shrunk.scenario, verdict: 'safety' });
    expect(written.replay).toBe(`leasehold replay ${file}`);
    expect(written.scenarioSpec).toEqual(written.scenario);
    expect(written.violations.map((violation) => violation.invariant)).toEqual(['WRONG']);
    // The file alone replays the run: the same World gives the recorded trace hash.
    const replayed = await new World(written.scenario, written.seed, written.plan).run();
    expect(replayed.history.traceHash()).toBe(written.traceHash);
  });

  it('still writes the counterexample and the replay line when the time limit cuts the shrinking short', async () => {
    const cases = simulationCaseArbitrary({ name: 'machinery', scenario: { topicsMax: 3 }, faults: BALANCED_FAULTS });
    // The search above (its first failure comes within a second), except that once a case has failed
    // every later one first waits 8 s: the first shrink step is still waiting when the 5 s limit strikes.
    let failedOnce = false;
    let over = false;
    const slowToShrink = fc.asyncProperty(cases, async (simulation) => {
      if (failedOnce) await new Promise((resolve) => setTimeout(resolve, 8_000));
      if (over) return;
      await checkCase(simulation, family).catch((error: unknown) => {
        failedOnce = true;
        throw error;
      });
    });
    const details = await fc.check(slowToShrink, { seed: 42, numRuns: 100, interruptAfterTimeLimit: 5_000, markInterruptAsFailure: true });
    over = true;
    expect(details.failed).toBe(true);
    expect(details.interrupted).toBe(true);
    expect(details.numShrinks).toBe(0);
    const [unshrunk] = details.counterexample as [SimulationCase];
    const quick = ownDirectory();
    const error = await reportFailure(details, family, property, quick).then(
      () => undefined,
      (thrown: unknown) => thrown as Error,
    );
    const file = join(quick, `${counterexampleId({ suite: 'machinery', ...unshrunk })}.json`);
    expect(error?.message).toContain('stopped the shrinking after 0 step(s)');
    expect(error?.message.split('\n').at(-1)).toBe(`Replay: leasehold replay ${file}`);
    const written = JSON.parse(readFileSync(file, 'utf8')) as PropertyCounterexample;
    expect(written.fastCheck).toMatchObject({ numShrinks: 0, shrinkInterrupted: true });
    // Unshrunk, so it may hold more than the one kill the full search shrinks down to.
    expect(written.violations.length).toBeGreaterThan(0);
    expect(new Set(written.violations.map((violation) => violation.invariant))).toEqual(new Set(['WRONG']));
  });

  it('passes when the checker has nothing to say, and writes nothing', async () => {
    const cases = simulationCaseArbitrary({ name: 'machinery', scenario: { topicsMax: 2 }, faults: { kills: 1 } });
    const details = await fc.check(simulationProperty(cases, { suite: 'machinery-quiet', checkers: [] }), { seed: 1, numRuns: 5 });
    expect(details.failed).toBe(false);
    const directory = ownDirectory();
    await expect(reportFailure(details, family, property, directory)).resolves.toBeUndefined();
    expect(readdirSync(directory)).toEqual([]);
  });

  it('turns a checker that throws into a harness failure of the run, not a crash of the property', async () => {
    const throwing: Checker = { invariant: 'BROKEN', kind: 'safety', description: 'throws', check: () => { throw new Error('checker bug'); } };
    const [simulation] = fc.sample(simulationCaseArbitrary({ name: 'machinery', scenario: { topicsMax: 1 }, faults: {} }), { seed: 5, numRuns: 1 }) as [SimulationCase];
    const outcome = await runCase(simulation, { suite: 'machinery', checkers: [throwing] });
    expect(outcome.verdict).toBe('nondeterminism');
    expect(outcome.violations[0]?.message).toMatch(/^checker BROKEN \(safety\) threw: Error: checker bug/);
  });

  it('collects a promise rejection that escapes a run, and hands the runner its listeners back', async () => {
    const before = process.listeners('unhandledRejection');
    const { escaped } = await collectingEscapes(async () => {
      void Promise.reject(new Error('escaped'));
      const handledLater = Promise.reject(new Error('handled later'));
      await new Promise((resolve) => setImmediate(resolve));
      handledLater.catch(() => {});
    });
    expect(escaped.map((reason) => (reason as Error).message)).toEqual(['escaped']);
    expect(process.listeners('unhandledRejection')).toEqual(before);
  });
});
