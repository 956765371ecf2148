import { describe, expect, it } from 'vitest';
import { pickupStats, roundRatios, throughputOf } from './fleet-stats.ts';

describe('fleet-stats', () => {
  it('pickupStats: nearest-rank p50 and p99, the max, and the timeouts it is told of', () => {
    const samples = Array.from({ length: 100 }, (_, i) => 100 - i); // 100..1, unsorted
    expect(pickupStats(samples, 2)).toEqual({ n: 100, p50: 50, p99: 99, max: 100, timeouts: 2 });
    expect(pickupStats([7])).toMatchObject({ n: 1, p50: 7, p99: 7, max: 7 });
    const none = pickupStats([]);
    expect(none.n).toBe(0);
    expect(Number.isNaN(none.p50) && Number.isNaN(none.p99) && Number.isNaN(none.max)).toBe(true);
  });

  it('throughputOf: a whole backlog is timed from t0 to its last end; handlers that ended before t0 are not counted', () => {
    const t = throughputOf({ t0: 1000, ends: [990, 1100, 1500, 2000], backlog: 4 });
    expect(t).toEqual({ rate: 3, counted: 3, early: 1, complete: true, spanMs: 1000 });
  });

  it('throughputOf: a cut-off backlog is timed to the cut-off, not to its last end', () => {
    const t = throughputOf({ t0: 0, ends: [100, 200], backlog: 10, cutAt: 4000 });
    expect(t).toEqual({ rate: 0.5, counted: 2, early: 0, complete: false, spanMs: 4000 });
  });

  it('throughputOf: no handler after t0 gives no rate, not a division by zero', () => {
    expect(Number.isNaN(throughputOf({ t0: 5, ends: [], backlog: 1 }).rate)).toBe(true);
  });

  it('roundRatios: paired per round, the median of them, rounds with a missing or zero figure left out', () => {
    expect(roundRatios([2, 9, 4], [1, 3, 1])).toEqual({ ratios: [2, 3, 4], median: 3 });
    expect(roundRatios([2, Number.NaN, 6, 1], [1, 1, 2, 0])).toEqual({ ratios: [2, 3], median: 2.5 });
    expect(Number.isNaN(roundRatios([], []).median)).toBe(true);
  });
});
