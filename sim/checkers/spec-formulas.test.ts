import { describe, expect, it } from 'vitest';
import { specOrder, specScore } from './spec-formulas.ts';

describe("the checkers' own copy of the SPEC formulas", () => {
  const config = { agingCap: 30, agingPeriodMs: 60_000 };

  it('ages one point per period, up to the cap, never below the base', () => {
    expect(specScore(0, 0, 59_999, config)).toBe(0);
    expect(specScore(0, 0, 60_000, config)).toBe(1);
    expect(specScore(0, 0, 31 * 60_000, config)).toBe(30);
    expect(specScore(30, 0, 0, config)).toBe(30);
    expect(specScore(5, 10_000, 0, config)).toBe(5);
  });

  it("is SPEC Q4's example: a base-0 task that waited 31 minutes outranks a base-30 task that just arrived", () => {
    const old = { score: specScore(0, 0, 31 * 60_000, config), enqueuedAt: 0, id: 1 };
    const fresh = { score: specScore(30, 31 * 60_000, 31 * 60_000, config), enqueuedAt: 31 * 60_000, id: 2 };
    expect(specOrder(old, fresh)).toBeLessThan(0);
  });

  it('breaks ties by enqueue time, then id', () => {
    expect(specOrder({ score: 3, enqueuedAt: 5, id: 9 }, { score: 3, enqueuedAt: 6, id: 1 })).toBeLessThan(0);
    expect(specOrder({ score: 3, enqueuedAt: 5, id: 9 }, { score: 3, enqueuedAt: 5, id: 1 })).toBeGreaterThan(0);
    expect(specOrder({ score: 4, enqueuedAt: 9, id: 9 }, { score: 3, enqueuedAt: 1, id: 1 })).toBeLessThan(0);
  });
});
