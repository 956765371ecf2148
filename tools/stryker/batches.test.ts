import { describe, expect, it } from 'vitest';
import { groupStatus, incrementalSeed, planGroups } from './batches.ts';
import { BATCH_META_KEY, type BatchReport } from './score.ts';

describe('the groups of `npm run stryker:batches`', () => {
  const groups = [
    { name: 'one', files: ['src/a.ts', 'src/empty.ts', 'src/deleted.ts'] },
    { name: 'two', files: ['src/b.ts'] },
  ];
  const counts = new Map([
    ['src/a.ts', 10],
    ['src/empty.ts', 0],
    ['src/b.ts', 20],
    ['src/dir/new-file.ts', 5],
  ]);

  it('drops files without mutants or no longer mutated, and runs an unlisted file in a group of its own', () => {
    const plan = planGroups(['src/a.ts', 'src/b.ts', 'src/dir/new-file.ts', 'src/empty.ts'], counts, groups);
    expect(plan.groups).toEqual([
      { name: 'one', files: ['src/a.ts'], mutants: 10 },
      { name: 'two', files: ['src/b.ts'], mutants: 20 },
      { name: 'auto-dir-new-file', files: ['src/dir/new-file.ts'], mutants: 5 },
    ]);
    expect(plan.noMutants).toEqual(['src/empty.ts']);
    expect(plan.unknown).toEqual(['src/deleted.ts']);
  });

  it('skips a group only when its report recorded the current text of every file', () => {
    const group = { name: 'g', files: ['src/a.ts', 'src/b.ts'], mutants: 2 };
    const source = (file: string) => `text of ${file}`;
    const report = (b: string | undefined) => ({
      files: { 'src/a.ts': { source: 'text of src/a.ts', mutants: [] }, ...(b === undefined ? {} : { 'src/b.ts': { source: b, mutants: [] } }) },
    });
    expect(groupStatus(group, undefined, source)).toEqual({ kind: 'none' });
    expect(groupStatus(group, report('text of src/b.ts'), source).kind).toBe('current');
    expect(groupStatus(group, report('older text'), source)).toMatchObject({ kind: 'changed', files: ['src/b.ts'] });
    expect(groupStatus(group, report(undefined), source)).toMatchObject({ kind: 'changed', files: ['src/b.ts'] });
  });

  it('starts a changed group from its saved report, holding only its own files, unless a test file changed', () => {
    const group = { name: 'g', files: ['src/a.ts'], mutants: 1 };
    const source = (file: string) => (file === 'src/a.test.ts' ? 'test now' : undefined);
    const saved = (test: string): BatchReport => ({
      files: { 'src/a.ts': { source: 'old', mutants: [] }, 'src/other.ts': { source: 'x', mutants: [] } },
      testFiles: { 'src/a.test.ts': { source: test } },
      [BATCH_META_KEY]: { group: 'g', files: ['src/a.ts'], commit: null, dirty: false, startedAt: '', finishedAt: '', durationMs: 0, concurrency: null, seededFrom: null, forced: false },
    });
    const seed = incrementalSeed(group, saved('test now'), source);
    expect(Object.keys(seed.report!.files)).toEqual(['src/a.ts']);
    expect(seed.report).not.toHaveProperty(BATCH_META_KEY);
    expect(incrementalSeed(group, saved('test then'), source)).toEqual({ refused: 'test files changed or removed since it ran: src/a.test.ts' });
  });
});
