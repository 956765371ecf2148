import { describe, expect, it } from 'vitest';
import { BATCH_META_KEY, coveredScore, mergeBatches, mergedScoreText, mergeWarnings, score, scoreTable, tally, type BatchMeta, type NamedReport } from './score.ts';

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

describe('merging the batch reports of `npm run stryker:batches`', () => {
  const sources: Record<string, string> = {
    'src/a.ts': 'export const a = 1;\n',
    'src/b.ts': 'export const b = 2;\n',
    'src/c.ts': 'export const c = 3;\n',
    'src/empty.ts': 'export type E = 1;\n',
    'src/a.test.ts': 'test a\n',
  };
  const source = (file: string) => sources[file];
  const files = ['src/a.ts', 'src/b.ts', 'src/c.ts', 'src/empty.ts'];
  const meta = (group: string, finishedAt: string): BatchMeta => ({
    group,
    files: [],
    commit: `${group}0000000000000000`,
    dirty: false,
    startedAt: finishedAt,
    finishedAt,
    durationMs: 60_000,
    concurrency: 1,
    seededFrom: null,
    forced: false,
  });
  const reportA: NamedReport = {
    name: 'group-a',
    report: {
      files: { 'src/a.ts': { source: sources['src/a.ts'], mutants: mutants({ Killed: 3, Survived: 1, CompileError: 1 }) } },
      testFiles: { 'src/a.test.ts': { source: sources['src/a.test.ts'] } },
      [BATCH_META_KEY]: meta('group-a', '2025-01-01T00:00:00.000Z'),
    },
  };
  // b.ts was measured when its text was different: stale. gone.ts is no longer mutated.
  const reportB: NamedReport = {
    name: 'group-b',
    report: {
      files: {
        'src/b.ts': { source: 'export const b = 1;\n', mutants: mutants({ Killed: 5 }) },
        'src/gone.ts': { source: 'x', mutants: mutants({ Survived: 1 }) },
      },
      testFiles: { 'src/b.test.ts': { source: 'old test' } },
      [BATCH_META_KEY]: meta('group-b', '2025-01-02T00:00:00.000Z'),
    },
  };
  const counts = new Map([
    ['src/a.ts', 5],
    ['src/b.ts', 6],
    ['src/c.ts', 7],
    ['src/empty.ts', 0],
  ]);

  it('counts only files whose report recorded their current text, and names the stale and the missing ones', () => {
    const merge = mergeBatches({ reports: [reportA, reportB], files, source, mutantCounts: counts });
    expect(merge.measured.map((file) => [file.file, file.report])).toEqual([['src/a.ts', 'group-a']]);
    expect(merge.stale).toEqual([{ file: 'src/b.ts', reports: ['group-b'], mutants: 6 }]);
    expect(merge.missing).toEqual([{ file: 'src/c.ts', mutants: 7 }]);
    expect(merge.noMutants).toEqual(['src/empty.ts']);
    expect(merge.outside).toEqual([{ file: 'src/gone.ts', report: 'group-b' }]);
    // The stale b.ts (5 killed) and the survivor in gone.ts are not in the total.
    expect(merge.total).toEqual({ killed: 3, timeout: 0, survived: 1, noCoverage: 0, errors: 1, ignored: 0 });
    // group-b's changed test file does not matter: none of its results is used.
    expect(merge.testsChanged).toEqual([]);
    // The hand-made reports carry no `coveredBy`, as Stryker 9.5.1 with vitest 4.1 writes them: said once.
    expect(merge.withoutCoverage).toEqual(['group-a']);

    const text = mergedScoreText(merge, { commit: 'f'.repeat(40), dirty: false, dir: 'reports/stryker/batches', reports: [reportA, reportB] });
    expect(text).toContain(`Merged at commit ${'f'.repeat(40)} from 2 batch reports`);
    expect(text).toMatch(/\*\*NOT MEASURED: 1 file of src \(7 mutants\) is in no batch report and left out of the total:\*\*\n\n- src\/c\.ts \(7 mutants\)/);
    expect(text).toMatch(/\*\*STALE: 1 file of src \(6 mutants\) changed since its batch report and is left out of the total:\*\*\n\n- src\/b\.ts \(6 mutants now; report group-b, measured at group-b000/);
    expect(text).toContain('Measured: 1 of 3 files of src with mutants; 5 mutants measured, 13 not');
    expect(text).toContain('| **total (measured files only)** | 75.0% | 75.0% | 3 | 0 | 1 | 0 | 1 |  |');
    expect(text).toContain('| src/a.ts | 75.0% | 75.0% | 3 | 0 | 1 | 0 | 1 | group-a |');
    expect(text).not.toContain('| src/b.ts |');
    expect(text).toContain('Files of src without mutants (nothing to measure): src/empty.ts.');
    expect(text).toContain('- src/gone.ts (group-b)');
    expect(mergeWarnings(merge)).toEqual(['NOT MEASURED: src/c.ts (7 mutants) is in no batch report', 'STALE: src/b.ts changed since its batch report (group-b)']);
  });

  it('adds up every file once all are current, taking the newer of two current reports', () => {
    const reportB2: NamedReport = {
      name: 'group-b2',
      report: {
        files: {
          'src/b.ts': { source: sources['src/b.ts'], mutants: mutants({ Killed: 4, Timeout: 1, NoCoverage: 1 }).map((mutant) => ({ ...mutant, coveredBy: [] })) },
          'src/c.ts': { source: sources['src/c.ts'], mutants: mutants({ Killed: 6, Survived: 1 }) },
        },
        testFiles: { 'src/a.test.ts': { source: 'an older test a' } },
        [BATCH_META_KEY]: meta('group-b2', '2025-01-03T00:00:00.000Z'),
      },
    };
    const olderC: NamedReport = {
      name: 'group-c-old',
      report: { files: { 'src/c.ts': { source: sources['src/c.ts'], mutants: mutants({ Survived: 7 }) } }, [BATCH_META_KEY]: meta('group-c-old', '2024-12-31T00:00:00.000Z') },
    };
    const merge = mergeBatches({ reports: [olderC, reportA, reportB, reportB2], files, source, mutantCounts: counts });
    expect(merge.measured.map((file) => [file.file, file.report])).toEqual([
      ['src/a.ts', 'group-a'],
      ['src/b.ts', 'group-b2'],
      ['src/c.ts', 'group-b2'],
    ]);
    expect(merge.stale).toEqual([]);
    expect(merge.missing).toEqual([]);
    expect(merge.duplicates).toEqual([{ file: 'src/c.ts', reports: ['group-b2', 'group-c-old'], used: 'group-b2' }]);
    expect(merge.testsChanged).toEqual([{ report: 'group-b2', files: ['src/a.test.ts'] }]);
    expect(merge.withoutCoverage).toEqual(['group-a']);
    // 3+4+6 killed, 1 timeout, 1+1 survived, 1 no coverage, 1 error: the sum of the three file rows.
    expect(merge.total).toEqual({ killed: 13, timeout: 1, survived: 2, noCoverage: 1, errors: 1, ignored: 0 });
    expect(score(merge.total)).toBeCloseTo((100 * 14) / 17, 10);
    const text = mergedScoreText(merge, { commit: undefined, dirty: true, dir: 'd', reports: [olderC, reportA, reportB, reportB2] });
    expect(text).toContain('All 3 files of src with mutants are measured against their current text (18 mutants).');
    expect(text).toContain('| **total** | 82.4% | 87.5% | 13 | 1 | 2 | 1 | 1 |  |');
    expect(text).not.toContain('NOT MEASURED');
    expect(text).not.toContain('STALE');
    expect(text).toContain('- group-b2: src/a.test.ts');
    expect(text).toContain('No per-test coverage was recorded in group-a (no mutant has `coveredBy`');
  });

  it('treats a file whose mutant count is unknown as one with mutants', () => {
    const merge = mergeBatches({ reports: [], files: ['src/c.ts'], source });
    expect(merge.missing).toEqual([{ file: 'src/c.ts', mutants: undefined }]);
    expect(mergedScoreText(merge, { commit: undefined, dirty: false, dir: 'd', reports: [] })).toContain('- src/c.ts (? mutants)');
  });
});
