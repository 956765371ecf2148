import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../random.ts';
import { ROUND_MOMENTS, drawRoundPlan, type RoundFaultSpec } from './rounds.ts';

const ROUNDS = { count: 30, everyMs: 90_000, tasksPerRound: 6 };
const LATENCIES = { modelMs: [2_000, 2_000], toolMs: [800, 1_200] } as const;
const KILL_EACH_ROUND: RoundFaultSpec = {
  action: { kind: 'kill', reviveAfterMs: [2_000, 8_000] },
  moments: ['model_call', { moment: 'tool_call', occurrence: [1, 24] }, 'between_checkpoints', { moment: 'after_terminal_write', occurrence: [1, 4] }],
  occurrence: [1, 20],
  target: 'busiest',
};

describe('per-round fault plans (seed 002: one kill a round, at a moment of each kind)', () => {
  it('puts one fault in each round window, every moment equally often, delays inside the call they hit', () => {
    const plan = drawRoundPlan(new SeededRandom('plan'), KILL_EACH_ROUND, ROUNDS, LATENCIES);
    expect(plan.timed).toEqual([]);
    expect(plan.points).toHaveLength(ROUNDS.count);
    plan.points.forEach((fault, round) => {
      expect(fault).toMatchObject({ kind: 'kill-at', target: 'busiest', fromMs: round * ROUNDS.everyMs, toMs: (round + 1) * ROUNDS.everyMs });
      expect(fault.label).toMatch(new RegExp(`^round ${round + 1}: `));
      if (fault.kind === 'kill-at') expect(fault.reviveAfterMs).toBeGreaterThanOrEqual(2_000);
      if (fault.kind === 'error-at') throw new Error('a round plan draws kills and pauses only');
      if (fault.point === 'before_model_call') expect(fault.delayMs).toBeLessThan(LATENCIES.modelMs[0]);
      if (fault.point === 'before_tool_call') expect(fault.delayMs).toBeLessThan(LATENCIES.toolMs[0]);
      if (fault.point === 'between_checkpoints' || fault.point === 'after_terminal_write') expect(fault.delayMs).toBeUndefined();
    });
    for (const fault of plan.points) {
      const limit = fault.label!.endsWith('after_terminal_write') ? 4 : fault.label!.endsWith('tool_call') ? 24 : 20;
      expect(fault.occurrence).toBeLessThanOrEqual(limit);
    }
    const perMoment = ROUND_MOMENTS.map((moment) => plan.points.filter((fault) => fault.label!.endsWith(moment)).length);
    expect(Math.max(...perMoment) - Math.min(...perMoment)).toBeLessThanOrEqual(1);
  });

  it('draws the same plan from the same seed, and pauses when asked to', () => {
    const pause: RoundFaultSpec = { action: { kind: 'pause', durationMs: 45_000 }, moments: ['model_call'], occurrence: [1, 10], target: 'busiest' };
    const first = drawRoundPlan(new SeededRandom('same'), pause, ROUNDS, LATENCIES);
    expect(drawRoundPlan(new SeededRandom('same'), pause, ROUNDS, LATENCIES)).toEqual(first);
    expect(first.points.every((fault) => fault.kind === 'pause-at' && fault.durationMs === 45_000 && fault.point === 'before_model_call')).toBe(true);
  });

  it('refuses a spec with no moment, or a call too short to fault inside', () => {
    expect(() => drawRoundPlan(new SeededRandom('x'), { ...KILL_EACH_ROUND, moments: [] }, ROUNDS, LATENCIES)).toThrow(RangeError);
    expect(() => drawRoundPlan(new SeededRandom('x'), KILL_EACH_ROUND, ROUNDS, { modelMs: [1, 5], toolMs: [800, 800] })).toThrow(RangeError);
  });
});
