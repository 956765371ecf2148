import { describe, expect, it } from 'vitest';
import { coveredScore, score, scoreTable, tally } from './score.ts';

const mutants = (statuses: Record<string, number>) => Object.entries(statuses).flatMap(([status, n]) => Array.from({ length: n }, () => ({ status })));

describe("Stryker's score, as recorded in reports/stryker/score.md", () => {
  it('counts killed and timed-out mutants as detected, over everything but errors and ignored ones', () => {
    const t = tally(mutants({ Killed: 6, Timeout: 2, Survived: 1, NoCoverage: 1, CompileError: 3, RuntimeError: 1, Ignored: 4 }));
    expect(t).toEqual({ killed: 6, timeout: 2, survived: 1, noCoverage: 1, errors: 4, ignored: 4 });
    expect(score(t)).toBe(80);
    expect(coveredScore(t)).toBeCloseTo(88.89, 2);
    expect(score(tally([]))).toBeUndefined();
  });

  it('writes a total row and one row per file', () => {
    const table = scoreTable({ files: { 'src/b.ts': { mutants: mutants({ Killed: 1, Survived: 1 }) }, 'src/a.ts': { mutants: mutants({ Killed: 2 }) } } }, '# t');
    expect(table).toContain('| **total** | 75.0% | 75.0% | 3 | 0 | 1 | 0 | 0 |');
    expect(table.indexOf('src/a.ts')).toBeLessThan(table.indexOf('src/b.ts'));
    expect(table).toContain('| src/b.ts | 50.0% | 50.0% | 1 | 0 | 1 | 0 | 0 |');
  });
});
