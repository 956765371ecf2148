import { describe, expect, it } from 'vitest';
import { judge, raised } from './floor.ts';

const floors = { unit: { lines: 96.5, branches: 91.5 }, gate: { lines: 86, branches: 73.5 } };

describe('coverage floor', () => {
  it('passes figures at or above their floors', () => {
    const { below, verdicts } = judge(floors, { unit: { lines: 96.5, branches: 92 }, gate: { lines: 90, branches: 73.5 } });
    expect(verdicts).toHaveLength(4);
    expect(below).toEqual([]);
  });

  it('fails a figure under its floor, naming the suite and metric', () => {
    const { below } = judge(floors, { unit: { lines: 97, branches: 91.49 } });
    expect(below).toEqual([{ suite: 'unit', metric: 'branches', measured: 91.49, floor: 91.5 }]);
  });

  it('only judges what was measured', () => {
    expect(judge(floors, { gate: { lines: 10, branches: 10 } }).below.map((verdict) => verdict.suite)).toEqual(['gate', 'gate']);
  });

  it('raises a floor to the measured figure less its margin, rounded down, and never lowers one', () => {
    const { verdicts } = judge(floors, { unit: { lines: 97.38, branches: 90 }, gate: { lines: 86, branches: 80.05 } });
    expect(raised(floors, verdicts)).toEqual({ unit: { lines: 96.8, branches: 91.5 }, gate: { lines: 86, branches: 77 } });
    expect(floors.unit.lines).toBe(96.5);
  });
});
