import { describe, expect, it } from 'vitest';
import { SABOTAGES } from './catalogue.ts';
import { checkArguments, judge, lowestFailure, table, type MutantOutcome, type StageResult } from './run.ts';

const entry = SABOTAGES[0]!;
const fresh = (): MutantOutcome => ({ id: entry.id, expected: entry.expectedInvariant, status: 'missed', caughtBy: [], expectedSeen: false, exitCode: null, seedsRun: 10, wallMs: 0 });
const stage = (over: Partial<StageResult>): StageResult => ({ seeds: 10, exitCode: 0, timedOut: false, wallMs: 1, log: '/tmp/check.log', counterexamples: [], ...over });

describe('the sabotage runner judges a stage (tools/mutants/run.ts)', () => {
  it('counts a check that timed out as inconclusive, never caught, and says so in the table', () => {
    const outcome = fresh();
    judge(entry, stage({ timedOut: true, exitCode: null }), outcome);
    expect(outcome.status).toBe('inconclusive');
    expect(outcome.caughtBy).toEqual([]);
    expect(outcome.note).toMatch(/did not finish within the timeout after 10 seeds: inconclusive/);
    const row = table([outcome])[2]!;
    expect(row).toContain('INCONCLUSIVE');
    expect(row).not.toMatch(/\byes\b/);
  });

  it('still counts a red check as caught and a green one as missed', () => {
    const red = fresh();
    judge(entry, stage({ exitCode: 1 }), red);
    expect(red.status).toBe('caught');
    expect(red.caughtBy).toEqual(['exit 1']);
    const green = fresh();
    judge(entry, stage({ exitCode: 0 }), green);
    expect(green.status).toBe('missed');
    expect(table([green])[2]).toContain('MISSED');
  });

  it('runs a sabotage\'s checks with --bail and the control without, and reports the first failing seed in the check\'s plan order', () => {
    const options = { seeds: 100, even: false, root: 'r', jobs: 1 };
    expect(checkArguments('/copy', '/out', 10, options, true)).toEqual(['/copy/tools/leasehold.js', 'check', '--seeds', '10', '--seed', 'r', '--out', '/out', '--jobs', '1', '--bail']);
    expect(checkArguments('/copy', '/out', 100, options, true)).toContain('--budget');
    expect(checkArguments('/copy', '/out', 10, options, false)).not.toContain('--bail');
    const file = (scenario: string, seed: string, seedIndex: number) => ({ path: `/out/${scenario}-${seed}.json`, scenario, seed, verdict: 'safety', violations: [], check: { seedIndex } });
    // Seed #2 of two scenarios failed: the first of them in the check's plan (catalogue order at one index) is reported, not the first by name.
    const counterexamples = [file('zombie-pause', '7', 2), file('mixed', '9', 3), file('kill-takeover', '5', 2)];
    const runs = [{ scenario: 'mixed', index: 2, seed: '1' }, { scenario: 'kill-takeover', index: 2, seed: '5' }, { scenario: 'zombie-pause', index: 2, seed: '7' }];
    const summary = { exitCode: 1, coverage: { enforced: false }, unseed: { mismatches: [] }, failures: [], harnessCrash: null, runs };
    expect(lowestFailure({ counterexamples, summary })?.scenario).toBe('kill-takeover');
    expect(lowestFailure({ counterexamples: [file('zombie-pause', '7', 2), file('kill-takeover', '5', 2)], summary: { ...summary, runs: [...runs].reverse() } })?.scenario).toBe('zombie-pause');
  });
});
