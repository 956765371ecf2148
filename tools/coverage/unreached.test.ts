import { describe, expect, it } from 'vitest';
import type { FileCoverageData, Location } from './istanbul.ts';
import { judgeUnreached, ranges, REACHABLE_PREFIX, unreachedOf } from './unreached.ts';

const at = (from: number, to = from): Location => ({ start: { line: from, column: 0 }, end: { line: to, column: 0 } });

const SOURCE = ['export function pick(x: number) {', '  if (x < 0) throw new Error("negative");', '  return x;', '}', 'export function unused() {', '  return 1;', '}'].join('\n');

function data(shift = 0): FileCoverageData {
  return {
    path: 'src/x.ts',
    fnMap: { 0: { name: 'pick', loc: at(1 + shift, 4 + shift) }, 1: { name: 'unused', loc: at(5 + shift, 7 + shift) } },
    f: { 0: 3, 1: 0 },
    branchMap: { 0: { type: 'if', loc: at(2 + shift), locations: [at(2 + shift), at(2 + shift)] } },
    b: { 0: [0, 3] },
    statementMap: { 0: at(2 + shift), 1: at(3 + shift), 2: at(6 + shift) },
    s: { 0: 0, 1: 3, 2: 0 },
  };
}

describe('unreached pieces of src/', () => {
  it('names each unreached branch path and function by file, function and source line, not by line number', () => {
    const found = unreachedOf(data(), SOURCE);
    expect(found.map((entry) => entry.key)).toEqual([
      'src/x.ts › pick › branch: if (x < 0) throw new Error("negative"); [if path 0/2]',
      'src/x.ts › unused › function: export function unused() {',
    ]);
    expect(found.map((entry) => entry.lines)).toEqual([[[2, 2]], [[6, 6]]]);
    // Three lines added above: same keys, new line numbers.
    const moved = unreachedOf(data(3), `\n\n\n${SOURCE}`);
    expect(moved.map((entry) => entry.key)).toEqual(found.map((entry) => entry.key));
    expect(moved.map((entry) => entry.line)).toEqual([5, 8]);
  });

  it('judges each against the reasons: explained, reachable with no seed yet, or unexplained; unused reasons are stale', () => {
    const [branch, fn] = unreachedOf(data(), SOURCE).map((entry) => entry.key) as [string, string];
    const { judged, stale } = judgeUnreached(unreachedOf(data(), SOURCE), { [branch]: 'argument validation', 'src/x.ts › gone › function: x': 'old' });
    expect(judged.map((entry) => entry.status)).toEqual(['explained', 'unexplained']);
    expect(stale).toEqual(['src/x.ts › gone › function: x']);
    expect(judgeUnreached(unreachedOf(data(), SOURCE), { [fn]: `${REACHABLE_PREFIX}: no scenario calls it`, [branch]: ' ' }).judged.map((entry) => entry.status)).toEqual(['unexplained', 'reachable']);
  });

  it('merges lines into ranges', () => {
    expect(ranges([5, 3, 4, 9, 9, 10])).toEqual([
      [3, 5],
      [9, 10],
    ]);
  });
});

describe('the committed reasons file', () => {
  it('parses, and every reason says something and is keyed file › function › kind: snippet', async () => {
    const { readReasons } = await import('./unreached.ts');
    const { REASONS_FILE } = await import('./gate.ts');
    const { reasons } = readReasons(REASONS_FILE);
    expect(Object.keys(reasons).length).toBeGreaterThan(0);
    for (const [key, reason] of Object.entries(reasons)) {
      expect(key).toMatch(/^src\/\S+\.ts › .+ › (branch|function|lines): /);
      expect(reason.trim().length, key).toBeGreaterThan(20);
    }
  });
});
