import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { catalogueSources } from './scenario-source.ts';
import { expectedFeatures, featuresOf, FLOOR_SHARE, MAX_EXTRAPOLATION, readYieldCalibration, scenarioYield, specHash, splitByYield, type ScenarioYield, type YieldCalibration } from './budget.ts';
import { planJobs } from './seeds.ts';
import type { JobResult } from './types.ts';
import type { ScenarioSpec } from '../scenario.ts';

const spec = (name: string) => ({ name }) as unknown as ScenarioSpec;
const entry = (name: string, msPerSeed: number, incidence: Record<string, number>, seeds = 10): ScenarioYield => ({
  specHash: specHash(spec(name)),
  seeds,
  msPerSeed,
  features: Object.values(incidence).reduce((sum, q) => sum + q, 0),
  incidence,
});
const calibration = (entries: Record<string, ScenarioYield>): YieldCalibration => ({ format: 'leasehold-yield/1', rootSeed: 'test', commit: null, seedsPerScenario: 10, scenarios: entries });
const specs = (names: string[]) => Object.fromEntries(names.map((name) => [name, spec(name)]));
const run = (index: number, marks: Record<string, number>, windows: Record<string, number> = {}): JobResult =>
  ({ job: { id: index, scenario: 's', index, seed: String(index), repeat: false }, verdict: 'pass', traceHash: '', violations: [], marks, metrics: {}, elapsedMs: 10, windows: { windows, pairs: {} } }) as JobResult;

describe('the expected features of t seeds (incidence interpolation and extrapolation)', () => {
  const yieldOf = entry('a', 1, { 1: 4, 2: 2, 10: 3 });

  it('interpolates exactly: one seed reaches sum(y Q_y) / T features on average, T seeds reach every feature seen', () => {
    expect(expectedFeatures(yieldOf, 1)).toBeCloseTo((1 * 4 + 2 * 2 + 10 * 3) / 10, 10);
    expect(expectedFeatures(yieldOf, 10)).toBeCloseTo(9, 10);
    expect(expectedFeatures(yieldOf, 0)).toBe(0);
  });

  it('grows past T while features are still found by one seed only, with diminishing steps, and not without them', () => {
    const steps = [10, 11, 20, 30].map((t) => expectedFeatures(yieldOf, t));
    expect(steps[1]!).toBeGreaterThan(steps[0]!);
    expect(steps[2]! - steps[1]!).toBeGreaterThan(steps[3]! - steps[2]!);
    // Chao2: Q0 = (T-1)/T x Q1^2 / (2 Q2) = 0.9 x 16 / 4 = 3.6 features unseen, the asymptote.
    expect(expectedFeatures(yieldOf, 10_000)).toBeCloseTo(9 + 3.6, 6);
    const saturated = entry('b', 1, { 10: 5, 7: 1 });
    expect(expectedFeatures(saturated, 25)).toBe(6);
  });
});

describe('the split of a budget by yield', () => {
  it('keeps every scenario at its floor, gives the rest to what finds most per millisecond, and stays within the budget', () => {
    const names = ['rich', 'flat', 'costly'];
    const split = splitByYield(names, specs(names), 20, calibration({ rich: entry('rich', 10, { 1: 8, 2: 2, 10: 5 }), flat: entry('flat', 10, { 10: 5 }), costly: entry('costly', 40, { 1: 8, 2: 2, 10: 5 }) }));
    const floor = 20 * FLOOR_SHARE;
    for (const name of names) expect(split.seeds[name]).toBeGreaterThanOrEqual(floor);
    expect(split.seeds.rich).toBeGreaterThan(split.seeds.flat!);
    expect(split.seeds.rich).toBeGreaterThan(split.seeds.costly!);
    expect(split.budgetMs).toBe(20 * (10 + 10 + 40));
    expect(split.spentMs).toBeLessThanOrEqual(split.budgetMs);
    expect(split.spentMs).toBe(names.reduce((sum, name) => sum + split.seeds[name]! * ({ rich: 10, flat: 10, costly: 40 } as Record<string, number>)[name]!, 0));
    // What is left over is less than one more seed of anything that still finds something.
    expect(split.budgetMs - split.spentMs).toBeLessThan(40);
    expect(split.uncalibrated).toEqual([]);
  });

  it('caps a scenario at MAX_EXTRAPOLATION times the calibration\'s seeds', () => {
    const names = ['rich', 'flat'];
    // Floors 20 each; rich finds the most per ms but stops at 30; the time left goes to flat, which
    // finds nothing more but is not capped until 30 either; the rest of the budget is not spent.
    const split = splitByYield(names, specs(names), 40, calibration({ rich: entry('rich', 1, { 1: 50, 2: 1 }), flat: entry('flat', 100, { 10: 5 }) }));
    expect(split.seeds.rich).toBe(10 * MAX_EXTRAPOLATION);
    expect(split.seeds.flat).toBe(10 * MAX_EXTRAPOLATION);
    expect(split.spentMs).toBe(30 * 1 + 30 * 100);
    expect(split.budgetMs).toBe(40 * 101);
  });

  it('gives an unknown scenario, or one whose spec changed since it was calibrated, its even share', () => {
    const names = ['known', 'changed', 'unknown'];
    const stale = { ...entry('changed', 10, { 1: 9 }), specHash: 'not-this-one' };
    const split = splitByYield(names, specs(names), 30, calibration({ known: entry('known', 10, { 10: 1 }), changed: stale }));
    expect(split.seeds).toEqual({ known: 30, changed: 30, unknown: 30 });
    expect(split.uncalibrated).toEqual(['changed', 'unknown']);
    expect(splitByYield(names, specs(names), 30, undefined).uncalibrated).toEqual(names);
  });

  it('is the same split every time (equal gains go to the first scenario listed)', () => {
    const names = ['a', 'b'];
    const twins = calibration({ a: entry('a', 5, { 1: 3, 2: 1 }), b: entry('b', 5, { 1: 3, 2: 1 }) });
    const split = splitByYield(names, specs(names), 9, twins);
    expect(split).toEqual(splitByYield(names, specs(names), 9, twins));
    expect(split.seeds.a! - split.seeds.b!).toBeGreaterThanOrEqual(0);
    expect(split.seeds.a! - split.seeds.b!).toBeLessThanOrEqual(1);
  });
});

describe('a scenario\'s calibration from its runs', () => {
  it('counts each feature once per seed and tallies how many seeds reached it', () => {
    const runs = [run(0, { a: 2, b: 0 }, { 'kill@after_effect': 1 }), run(1, { a: 1 }), run(2, { a: 1, c: 3 })];
    expect(featuresOf(runs[0]!)).toEqual(['mark a', 'window kill@after_effect']);
    const yieldOf = scenarioYield(spec('s'), [...runs, { ...run(2, { d: 1 }), job: { ...run(2, {}).job, repeat: true } }]);
    expect(yieldOf.seeds).toBe(3);
    expect(yieldOf.features).toBe(3);
    expect(yieldOf.incidence).toEqual({ 1: 2, 3: 1 });
    expect(yieldOf.msPerSeed).toBe(10);
  });
});

describe('the seeds a split runs', () => {
  it('runs indexes 0..n-1 of each scenario, and the shards of a split together run exactly it', () => {
    const seeds = { a: 5, b: 2, c: 0 };
    const whole = planJobs('root', ['a', 'b', 'c'], seeds);
    expect(whole.filter((job) => job.scenario === 'a').map((job) => job.index)).toEqual([0, 1, 2, 3, 4]);
    expect(whole.filter((job) => job.scenario === 'b').map((job) => job.index)).toEqual([0, 1]);
    expect(whole.some((job) => job.scenario === 'c')).toBe(false);
    const sharded = [1, 2, 3].flatMap((index) => planJobs('root', ['a', 'b', 'c'], seeds, { index, count: 3 }));
    const key = (job: { scenario: string; seed: string }) => `${job.scenario}/${job.seed}`;
    expect(sharded.map(key).sort()).toEqual(whole.map(key).sort());
  });
});

describe('reading a calibration', () => {
  it('is undefined when there is none, and names a file that is not one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-yield-'));
    try {
      expect(readYieldCalibration(join(dir, 'absent.json'))).toBeUndefined();
      writeFileSync(join(dir, 'broken.json'), '{"format":');
      expect(() => readYieldCalibration(join(dir, 'broken.json'))).toThrow(/broken\.json is not JSON .*rerun npm run calibrate/);
      writeFileSync(join(dir, 'other.json'), '{"format":"something-else/1"}');
      expect(() => readYieldCalibration(join(dir, 'other.json'))).toThrow(/other\.json is not a calibration of format leasehold-yield\/1/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the committed calibration (scenarios/calibration/yield.json)', () => {
  it('knows every catalogue scenario as it is now; after changing or adding one, run npm run calibrate', () => {
    const committed = readYieldCalibration();
    expect(committed).toBeDefined();
    const sources = catalogueSources();
    const stale = sources.filter((source) => committed!.scenarios[source.name]?.specHash !== specHash(source.spec)).map((source) => source.name);
    expect(stale).toEqual([]);
    for (const source of sources) expect(committed!.scenarios[source.name]!.seeds).toBe(committed!.seedsPerScenario);
  });
});
