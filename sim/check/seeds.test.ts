import { describe, expect, it } from 'vitest';
import { unseedRate } from '../cli/commands/check.ts';
import { UsageError } from '../cli/usage-error.ts';
import { execArgvWithoutTsx } from './pool.ts';
import { deriveSeed, planJobs, rootSeed, withRepeats } from './seeds.ts';

describe('check seeds', () => {
  it('derives seed i of a scenario from the root alone, as a typeable decimal number', () => {
    expect(deriveSeed('abc', 'mixed', 0)).toBe(deriveSeed('abc', 'mixed', 0));
    expect(deriveSeed('abc', 'mixed', 0)).toMatch(/^\d{1,15}$/);
    expect(new Set([deriveSeed('abc', 'mixed', 0), deriveSeed('abc', 'mixed', 1), deriveSeed('abc', 'other', 0), deriveSeed('abd', 'mixed', 0)]).size).toBe(4);
    // Pinned: changing the derivation silently would make every recorded CI seed point somewhere else.
    expect(deriveSeed('0123456789ab', 'mixed', 7)).toBe('91774571514790');
  });

  it('takes the root from --seed, else the commit, else no-git', () => {
    expect(rootSeed('42', { commit: 'f'.repeat(40), dirty: false })).toEqual({ seed: '42', source: 'flag' });
    expect(rootSeed(undefined, { commit: `0123456789ab${'c'.repeat(28)}`, dirty: true })).toEqual({ seed: '0123456789ab', source: 'git' });
    expect(rootSeed(undefined, { commit: undefined, dirty: false })).toEqual({ seed: 'no-git', source: 'no-git' });
  });

  it.each([1, 2, 3, 5, 7])('splits every scenario across %i shards with no seed twice and none left out', (count) => {
    const whole = planJobs('root', ['a', 'b', 'c'], 11).map((job) => `${job.scenario}/${job.seed}`);
    const parts = Array.from({ length: count }, (_, k) => planJobs('root', ['a', 'b', 'c'], 11, { index: k + 1, count }).map((job) => `${job.scenario}/${job.seed}`));
    expect(parts.flat().sort()).toEqual([...whole].sort());
    expect(new Set(parts.flat()).size).toBe(whole.length);
  });

  it('reruns a deterministic sample of about the rate, at least one, at the back of the queue', () => {
    const jobs = planJobs('root', ['a', 'b'], 200);
    const planned = withRepeats(jobs, 0.05);
    const repeats = planned.slice(jobs.length);
    expect(repeats.every((job) => job.repeat)).toBe(true);
    expect(repeats.length).toBeGreaterThan(5);
    expect(repeats.length).toBeLessThan(40);
    expect(withRepeats(jobs, 0.05)).toEqual(planned);
    expect(withRepeats(jobs.slice(0, 1), 0.0001)).toHaveLength(2);
    expect(withRepeats(jobs, 0)).toHaveLength(jobs.length);
    // Every scenario is repeated at least once, however small the rate.
    const few = planJobs('root', ['a', 'b', 'c', 'd'], 3);
    const fewRepeats = withRepeats(few, 0.0001).filter((job) => job.repeat);
    expect(fewRepeats.map((job) => job.scenario).sort()).toEqual(['a', 'b', 'c', 'd']);
    expect(planned.map((job) => job.id)).toEqual(planned.map((_, index) => index));
  });

  it('reads --unseed-rate as a percentage or a share, and refuses anything else with exit 64', () => {
    expect(unseedRate(undefined)).toBe(0.05);
    expect(unseedRate('10%')).toBeCloseTo(0.1);
    expect(unseedRate('0.2')).toBe(0.2);
    expect(unseedRate('0')).toBe(0);
    for (const bad of ['', 'lots', '-1', '101%', '2']) expect(() => unseedRate(bad), bad).toThrow(UsageError);
  });

  it("drops tsx's own loader flags from a thread's Node flags and keeps the rest", () => {
    const underTsxCli = ['--require', '/r/node_modules/tsx/dist/preflight.cjs', '--import', 'file:///r/node_modules/tsx/dist/loader.mjs', '--max-old-space-size=4096'];
    expect(execArgvWithoutTsx(underTsxCli)).toEqual(['--max-old-space-size=4096']);
    expect(execArgvWithoutTsx(['--import', 'tsx', '--import=tsx', '--import', './other.mjs'])).toEqual(['--import', './other.mjs']);
  });
});
