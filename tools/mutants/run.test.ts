import { describe, expect, it } from 'vitest';
import { SABOTAGES } from './catalogue.ts';
import { judge, table, type MutantOutcome, type StageResult } from './run.ts';

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
});
