import type { SeededRandom } from '../random.ts';
import { list, oneOf, part, probability, strict, withDefaults } from '../schema-kit.ts';
import { busy } from './busy.ts';
import { clockJump } from './clock-jump.ts';
import { diskFull } from './disk-full.ts';
import { duplicateDelivery } from './duplicate-delivery.ts';
import { hungTool } from './hung-tool.ts';
import type { RateInjector, SwarmDraw } from './injector.ts';
import { ioError } from './io-error.ts';
import { killAt } from './kill-at.ts';
import { kill } from './kill.ts';
import { lostResponse } from './lost-response.ts';
import { pauseAt } from './pause-at.ts';
import { cancelAt } from './cancel-at.ts';
import { clockJumpAt } from './clock-jump-at.ts';
import { pause } from './pause.ts';
import { powerLoss } from './power-loss.ts';
import { emptyPlan, type FaultPlan, type FaultRates } from './plan.ts';
import { restart } from './restart.ts';
import { slowTool } from './slow-tool.ts';
import { staleWrite } from './stale-write.ts';
import { toolError } from './tool-error.ts';

/**
 * Swarm testing (TigerBeetle's VOPR): each seed switches each fault kind on or off and draws its rate,
 * so some seeds hammer one weakness and some run clean. The result is an explicit plan. How a kind's
 * faults are drawn is its own file's (`swarm` of its injector); this file only says which kinds and in
 * what order.
 */
export const SWARM_KINDS = ['kill', 'kill-at', 'pause', 'restart', 'clock-jump', 'busy', 'slow-tool', 'hung-tool', 'lost-response', 'duplicate-delivery', 'tool-error', 'stale-write', 'power-loss', 'pause-at', 'disk-full', 'io-error', 'clock-jump-at', 'cancel-at'] as const;
export type SwarmKind = (typeof SWARM_KINDS)[number];

/** The storage faults beneath the store: a swarm draws them only when it lists them (scenarios/storage-faults.json). */
const LISTED_ONLY: ReadonlySet<SwarmKind> = new Set(['disk-full', 'io-error']);

/**
 * The kinds `{ "kind": "swarm" }` draws when it lists none: every kind but the storage faults, so a seed
 * of a scenario with the default swarm (mixed) draws exactly what it drew before they existed.
 */
export const DEFAULT_SWARM_KINDS: SwarmKind[] = SWARM_KINDS.filter((kind) => !LISTED_ONLY.has(kind));

export interface SwarmSpec {
  /** Fault kinds that may be drawn; each seed turns each on or off. */
  kinds: SwarmKind[];
  /** Probability that a seed has no faults at all. */
  quietProbability: number;
}

const swarmFields = {
  kinds: list(oneOf(SWARM_KINDS, 'a fault kind')).meta({ description: 'Fault kinds that may be drawn; each seed turns each on or off. Default: all of them but disk-full and io-error, which are drawn only when listed.' }),
  quietProbability: probability().meta({ description: 'Probability that a seed has no faults at all; default 0.1.' }),
};

/** The explicit form's `faults.swarm`. */
export const swarmSpecSchema = strict(swarmFields, 'Fault kinds drawn per seed: each seed turns each on or off.');

/** `{ "kind": "swarm" }`: every kind, quiet one seed in ten. */
export const swarmPart = part('swarm', withDefaults(swarmFields, { kinds: DEFAULT_SWARM_KINDS, quietProbability: 0.1 }), 'Faults drawn per seed, swarm-style: each seed turns each kind on or off and draws its faults. Stands alone among the fault parts.');

export function swarmSpecOf({ kinds, quietProbability }: { kinds: SwarmKind[]; quietProbability: number }): SwarmSpec {
  return { kinds, quietProbability };
}

const rate =
  (injector: RateInjector<keyof FaultRates>) =>
  ({ random }: SwarmDraw, plan: FaultPlan): void => {
    plan.rates[injector.field] = injector.swarm(random);
  };

/**
 * The order a seed considers the kinds in. Each one it may draw costs a draw of the faults stream
 * (on or off), so this order is part of what every swarm seed means: changing it changes every trace.
 */
const DRAW_ORDER: [SwarmKind, (draw: SwarmDraw, plan: FaultPlan) => void][] = [
  ['kill', kill.swarm!],
  ['pause', pause.swarm!],
  ['restart', restart.swarm!],
  ['clock-jump', clockJump.swarm!],
  ['busy', busy.swarm!],
  ['kill-at', killAt.swarm!],
  ['slow-tool', rate(slowTool)],
  ['hung-tool', rate(hungTool)],
  ['lost-response', rate(lostResponse)],
  ['duplicate-delivery', rate(duplicateDelivery)],
  ['tool-error', rate(toolError)],
  ['stale-write', rate(staleWrite)],
  // Appended last, in the order they came: a seed's draws for every kind above each stay what they were before it existed.
  ['power-loss', powerLoss.swarm!],
  ['pause-at', pauseAt.swarm!],
  // Appended after power-loss for the same reason; a scenario draws them only when its swarm lists them.
  ['disk-full', diskFull.swarm!],
  ['io-error', ioError.swarm!],
  // Timing faults drawn relative to a run's own milestones (issue 15 item 4), appended after the storage faults.
  ['clock-jump-at', clockJumpAt.swarm!],
  ['cancel-at', cancelAt.swarm!],
];

export function drawSwarmPlan(random: SeededRandom, swarm: SwarmSpec, workers: number, safetyMs: number): FaultPlan {
  const plan = emptyPlan();
  if (random.chance(swarm.quietProbability)) return plan;
  const draw: SwarmDraw = { random, at: () => random.int(0, safetyMs - 1), worker: () => random.int(0, workers - 1) };
  for (const [kind, drawInto] of DRAW_ORDER) {
    if (swarm.kinds.includes(kind) && random.chance(0.5)) drawInto(draw, plan);
  }
  plan.timed.sort((a, b) => a.atMs - b.atMs);
  return plan;
}
