import { describe, expect, it } from 'vitest';
import { REQUIRED_MARKS, SCENARIO_MARKS } from '../checkers/index.ts';
import { COVERAGE_SEEDS_MIN, judgeCoverage } from './coverage.ts';
import type { ScenarioTally } from './tally.ts';

function row(scenario: string, seeds: number, marks: Record<string, number> = {}): ScenarioTally {
  return { scenario, seeds, pass: seeds, safety: 0, liveness: 0, nondeterminism: 0, busyMs: 0, marks };
}

const everyMixedMark = Object.fromEntries(REQUIRED_MARKS.map((mark) => [mark, 1]));

describe('S8 coverage rule (judgeCoverage)', () => {
  it('retry_age_exceeded is anchored to retry-storm, not demanded of mixed', () => {
    expect(SCENARIO_MARKS['retry-storm']).toEqual(['retry_age_exceeded', 'deferred_budget', 'deferred_rate_limited']);
    expect(REQUIRED_MARKS).not.toContain('retry_age_exceeded');
  });

  it('demands the mixed marks from 50 mixed seeds, and not a scenario mark whose scenario did not run', () => {
    expect(judgeCoverage([row('mixed', COVERAGE_SEEDS_MIN)], everyMixedMark)).toEqual({ enforced: true, required: [...REQUIRED_MARKS], missing: [] });
  });

  it('demands retry_age_exceeded once retry-storm ran 50 seeds, alone or with mixed, summed over the run', () => {
    const storm = ['retry_age_exceeded', 'deferred_budget', 'deferred_rate_limited'];
    expect(judgeCoverage([row('retry-storm', COVERAGE_SEEDS_MIN)], {})).toEqual({ enforced: true, required: storm, missing: storm });
    expect(judgeCoverage([row('retry-storm', COVERAGE_SEEDS_MIN)], { retry_age_exceeded: 3, deferred_budget: 1 })).toMatchObject({ enforced: true, missing: ['deferred_rate_limited'] });
    expect(judgeCoverage([row('retry-storm', COVERAGE_SEEDS_MIN)], { retry_age_exceeded: 3, deferred_budget: 1, deferred_rate_limited: 2 })).toMatchObject({ enforced: true, missing: [] });
    const both = judgeCoverage([row('mixed', COVERAGE_SEEDS_MIN), row('retry-storm', COVERAGE_SEEDS_MIN)], everyMixedMark);
    expect(both).toMatchObject({ enforced: true, missing: storm });
    expect(both.required).toEqual([...REQUIRED_MARKS, ...storm]);
  });

  it('applies neither rule below 50 seeds, and says why', () => {
    expect(judgeCoverage([row('retry-storm', COVERAGE_SEEDS_MIN - 1)], {})).toMatchObject({ enforced: false, reason: expect.stringMatching(/include mixed/) });
    expect(judgeCoverage([row('mixed', 10), row('retry-storm', 10)], {})).toMatchObject({ enforced: false, reason: '10 mixed seeds ran here; required marks apply from 50' });
  });

  it('demands only the mixed marks when retry-storm ran too few seeds', () => {
    expect(judgeCoverage([row('mixed', COVERAGE_SEEDS_MIN), row('retry-storm', 5)], everyMixedMark)).toEqual({ enforced: true, required: [...REQUIRED_MARKS], missing: [] });
  });
});
