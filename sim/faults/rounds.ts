import type { SeededRandom } from '../random.ts';
import type { RoundsSpec } from '../scenario.ts';
import { emptyPlan, type FaultPlan, type KillPoint, type PointFault } from './plan.ts';

/**
 * Seed 002's kill test: each round, the worker holding the most running tasks is hit at a moment
 * chosen among four kinds. A moment is a point fault scoped to its round's window:
 * - model_call: reaching the model call, then dying (or freezing) while the call is in flight;
 * - tool_call: reaching a tool call, then dying while it runs (for a write tool, before or after the
 *   provider acted, depending on the delay drawn);
 * - between_checkpoints: right after checkpoint A committed, before any tool ran;
 * - after_terminal_write: right after the run's complete committed.
 */
export const ROUND_MOMENTS = ['model_call', 'tool_call', 'between_checkpoints', 'after_terminal_write'] as const;
export type RoundMoment = (typeof ROUND_MOMENTS)[number];

export interface RoundFaultSpec {
  /** What each round's fault does: kill (revived a drawn delay later) or pause (a zombie wakes later). */
  action: { kind: 'kill'; reviveAfterMs: [number, number] } | { kind: 'pause'; durationMs: number };
  /**
   * The moments to use; over the rounds each appears equally often, in an order drawn per seed. A
   * moment may carry its own occurrence range instead of the default below.
   */
  moments: (RoundMoment | { moment: RoundMoment; occurrence: [number, number] })[];
  /**
   * Which arrival at the moment's point fires the fault, counted from the start of its round (with
   * target 'busiest', arrivals of the busiest worker only). A range spanning every step of a round's
   * runs spreads the faults over steps, as seed 002 does ("kill on seeing step N's tool call").
   */
  occurrence: [number, number];
  target: 'any' | 'busiest';
}

export interface RoundLatencies {
  modelMs: readonly [number, number];
  toolMs: readonly [number, number];
}

/** One point fault per round, drawn from the faults stream: the plan a seed of a rounds scenario runs. */
export function drawRoundPlan(random: SeededRandom, spec: RoundFaultSpec, rounds: RoundsSpec, latencies: RoundLatencies): FaultPlan {
  if (spec.moments.length === 0) throw new RangeError('a per-round fault needs at least one moment');
  const used = spec.moments.map((item) => (typeof item === 'string' ? { moment: item, occurrence: spec.occurrence } : item));
  const plan = emptyPlan();
  const order = random.shuffle(Array.from({ length: rounds.count }, (_, round) => used[round % used.length]!));
  order.forEach(({ moment, occurrence: [fewest, most] }, round) => {
    const { point, delayMs } = placeMoment(random, moment, latencies);
    const scope = {
      point,
      occurrence: random.int(fewest, most),
      fromMs: round * rounds.everyMs,
      toMs: (round + 1) * rounds.everyMs,
      target: spec.target,
      label: `round ${round + 1}: ${moment}`,
      ...(delayMs > 0 ? { delayMs } : {}),
    };
    const { action } = spec;
    const fault: PointFault =
      action.kind === 'kill'
        ? { kind: 'kill-at', ...scope, reviveAfterMs: random.int(action.reviveAfterMs[0], action.reviveAfterMs[1]) }
        : { kind: 'pause-at', ...scope, durationMs: action.durationMs };
    plan.points.push(fault);
  });
  return plan;
}

/** The point a moment fires at, and how long the process goes on after it: less than the call that follows. */
function placeMoment(random: SeededRandom, moment: RoundMoment, latencies: RoundLatencies): { point: KillPoint; delayMs: number } {
  switch (moment) {
    case 'model_call':
      return { point: 'before_model_call', delayMs: random.int(1, shortest(latencies.modelMs, 'model')) };
    case 'tool_call':
      return { point: 'before_tool_call', delayMs: random.int(1, shortest(latencies.toolMs, 'tool')) };
    case 'between_checkpoints':
      return { point: 'between_checkpoints', delayMs: 0 };
    case 'after_terminal_write':
      return { point: 'after_terminal_write', delayMs: 0 };
  }
}

/** The longest delay still inside every call of this kind: one less than its shortest latency. */
function shortest(latencyMs: readonly [number, number], what: string): number {
  if (latencyMs[0] < 2) throw new RangeError(`a fault during a ${what} call needs a ${what} latency of at least 2 ms`);
  return latencyMs[0] - 1;
}
