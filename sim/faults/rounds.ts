import { z } from 'zod';
import type { SeededRandom } from '../random.ts';
import { list, oneOf, part, positive, range, strict, withDefaults } from '../schema-kit.ts';
import type { RoundsSpec } from '../workloads/rounds.ts';
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

const momentsField = list(z.union([oneOf(ROUND_MOMENTS, 'a moment'), strict({ moment: oneOf(ROUND_MOMENTS, 'a moment'), occurrence: range(1) })]), 1).meta({
  description: 'The moments to use, each as often over the rounds, in an order drawn per seed; a moment may carry its own occurrence range. Default: all four.',
});
const roundFields = {
  moments: momentsField,
  occurrence: range(1).meta({ description: "Which arrival at the moment's point fires the fault, counted from the start of its round; default [1, 1]." }),
  target: oneOf(['any', 'busiest']).meta({ description: "'busiest' (default): only the worker holding the most running tasks counts; 'any': every worker." }),
};
const ROUND_DEFAULTS = { moments: [...ROUND_MOMENTS] as RoundMoment[], occurrence: [1, 1] as [number, number], target: 'busiest' as const };

/** The explicit form's `faults.perRound`. */
export const perRoundSchema = strict(
  { action: z.discriminatedUnion('kind', [strict({ kind: z.literal('kill'), reviveAfterMs: range(0) }), strict({ kind: z.literal('pause'), durationMs: positive() })]), ...roundFields },
  'One fault per round of a rounds workload, at a moment drawn per seed (seed 002).',
);

/** `{ "kind": "kill-per-round" }`: each round, the busiest worker dies at a moment drawn per seed, and is revived 2 to 8 s later. */
export const killPerRoundPart = part(
  'kill-per-round',
  withDefaults({ reviveAfterMs: range(0).meta({ description: 'A new incarnation starts a drawn [min, max] ms later; default [2000, 8000].' }), ...roundFields }, { ...ROUND_DEFAULTS, reviveAfterMs: [2_000, 8_000] }),
  'One kill per round of a rounds workload, at a moment drawn per seed (seed 002). Stands alone among the fault parts.',
);

/** `{ "kind": "pause-per-round" }`: each round, the busiest worker freezes at a moment drawn per seed, for 45 s. */
export const pausePerRoundPart = part(
  'pause-per-round',
  withDefaults({ durationMs: positive().meta({ description: 'How long it stays frozen; default 45000.' }), ...roundFields }, { ...ROUND_DEFAULTS, durationMs: 45_000 }),
  'One pause per round of a rounds workload, at a moment drawn per seed (seed 002). Stands alone among the fault parts.',
);

type RoundPart = z.output<typeof killPerRoundPart> | z.output<typeof pausePerRoundPart>;

export function roundFaultSpecOf(value: RoundPart): RoundFaultSpec {
  const action: RoundFaultSpec['action'] = value.kind === 'kill-per-round' ? { kind: 'kill', reviveAfterMs: value.reviveAfterMs } : { kind: 'pause', durationMs: value.durationMs };
  return { action, moments: value.moments, occurrence: value.occurrence, target: value.target };
}

/** A fault during a call lands 1 ms to (shortest latency - 1) ms into it, so such moments need calls of 2 ms or more. */
export function perRoundProblems(spec: Pick<RoundFaultSpec, 'moments'>, latencies: RoundLatencies): { section: 'model' | 'tools'; message: string }[] {
  const moments = spec.moments.map((item) => (typeof item === 'string' ? item : item.moment));
  const during = [
    ['model_call', 'model', latencies.modelMs[0]],
    ['tool_call', 'tools', latencies.toolMs[0]],
  ] as const;
  return during
    .filter(([moment, , shortest]) => moments.includes(moment) && shortest < 2)
    .map(([moment, section, shortest]) => ({ section, message: `a per-round fault during a ${moment.replace('_', ' ')} needs calls of at least 2 ms, got a min of ${shortest}` }));
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
