import { describe, expect, it } from 'vitest';
import { EventLoop } from '../event-loop.ts';
import { History } from '../history.ts';
import { SeededRandom } from '../random.ts';
import { FaultController, type FaultTargets } from './controller.ts';
import { NO_RATES, type FaultPlan, type KillPoint, type PointFault } from './plan.ts';
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

/** A controller over a plan, with `running` standing in for the workers' running-task counts. */
function controllerFor(points: PointFault[], running: number[]) {
  const loop = new EventLoop();
  const plan: FaultPlan = { timed: [], points, rates: { ...NO_RATES } };
  const targets: FaultTargets = {
    kill: () => {},
    killIncarnation: () => {},
    pause: () => {},
    restart: () => {},
    jumpClock: () => {},
    runningTasks: () => running,
  };
  const controller = new FaultController(plan, loop, new History(loop), new SeededRandom('controller'), targets);
  const startMs = loop.now();
  controller.schedule(startMs);
  /** Arrivals (ms from the start, point, worker); returns the label of the fault each one fired, or '-'. */
  const arrive = async (arrivals: [number, KillPoint, number][]) => {
    const fired: string[] = [];
    for (const [atMs, point, worker] of arrivals) loop.schedule(startMs + atMs, () => fired.push(controller.pointFault(point, worker)?.label ?? '-'));
    await loop.run();
    return fired;
  };
  return { controller, arrive };
}

const kill = (fields: Partial<PointFault> & { label: string }): PointFault => ({
  kind: 'kill-at',
  point: 'before_model_call',
  occurrence: 1,
  reviveAfterMs: 1_000,
  ...fields,
} as PointFault);

describe('scoped point faults', () => {
  it('counts every arrival of every worker when unscoped, as the plain kill-at always has', async () => {
    const { arrive } = controllerFor([kill({ occurrence: 3, label: 'third' })], [0, 0]);
    const fired = await arrive([[0, 'before_model_call', 0], [1, 'before_tool_call', 1], [2, 'before_model_call', 1], [3, 'before_model_call', 0], [4, 'before_model_call', 0]]);
    expect(fired).toEqual(['-', '-', '-', 'third', '-']);
  });

  it('counts only the busiest worker, ties included, never an idle one', async () => {
    const busiest = controllerFor([kill({ occurrence: 2, target: 'busiest', label: 'busiest' })], [3, 1]);
    expect(await busiest.arrive([[0, 'before_model_call', 1], [1, 'before_model_call', 0], [2, 'before_model_call', 1], [3, 'before_model_call', 0]])).toEqual([
      '-',
      '-',
      '-',
      'busiest',
    ]);
    const idle = controllerFor([kill({ target: 'busiest', label: 'idle' })], [0, 0]);
    expect(await idle.arrive([[0, 'before_model_call', 0]])).toEqual(['-']);
    const tie = controllerFor([kill({ occurrence: 2, target: 'busiest', label: 'tie' })], [2, 2]);
    expect(await tie.arrive([[0, 'before_model_call', 0], [1, 'before_model_call', 1]])).toEqual(['-', 'tie']);
  });

  it('counts only inside its window, so each round has its own fault', async () => {
    const { arrive } = controllerFor(
      [kill({ fromMs: 1_000, toMs: 2_000, label: 'round 2' }), kill({ fromMs: 0, toMs: 1_000, occurrence: 2, label: 'round 1' })],
      [1, 0],
    );
    expect(await arrive([[0, 'before_model_call', 0], [999, 'before_model_call', 0], [1_000, 'before_model_call', 0], [2_000, 'before_model_call', 0]])).toEqual([
      '-',
      'round 1',
      'round 2',
      '-',
    ]);
  });

  it('fires nothing once the safety phase ended', async () => {
    const { controller, arrive } = controllerFor([kill({ label: 'never' })], [1]);
    controller.stop();
    expect(await arrive([[5, 'before_model_call', 0]])).toEqual(['-']);
  });
});
