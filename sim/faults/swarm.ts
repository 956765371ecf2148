import type { SeededRandom } from '../random.ts';
import type { SwarmSpec } from '../scenario.ts';
import { KILL_POINTS, emptyPlan, type FaultPlan } from './plan.ts';

/**
 * Swarm testing (TigerBeetle's VOPR): each seed switches each fault kind on or off and draws its rate,
 * so some seeds hammer one weakness and some run clean. The result is an explicit plan.
 */
export function drawSwarmPlan(random: SeededRandom, swarm: SwarmSpec, workers: number, safetyMs: number): FaultPlan {
  const plan = emptyPlan();
  if (random.chance(swarm.quietProbability)) return plan;
  const on = (kind: SwarmSpec['kinds'][number]) => swarm.kinds.includes(kind) && random.chance(0.5);
  const at = () => random.int(0, safetyMs - 1);
  const worker = () => random.int(0, workers - 1);
  if (on('kill')) {
    for (let n = random.int(1, 4); n > 0; n--) plan.timed.push({ kind: 'kill', atMs: at(), worker: worker(), reviveAfterMs: random.int(500, 20_000) });
  }
  if (on('pause')) {
    for (let n = random.int(1, 3); n > 0; n--) plan.timed.push({ kind: 'pause', atMs: at(), worker: worker(), durationMs: random.int(2_000, 60_000) });
  }
  if (on('restart')) {
    for (let n = random.int(1, 2); n > 0; n--) plan.timed.push({ kind: 'restart', atMs: at(), downMs: random.int(100, 3_000) });
  }
  if (on('clock-jump')) plan.timed.push({ kind: 'clock-jump', atMs: at(), deltaMs: random.int(-5_000, 45_000) });
  if (on('busy')) plan.timed.push({ kind: 'busy', atMs: at(), durationMs: random.int(1_000, 30_000), probability: random.float(0.05, 0.5) });
  if (on('kill-at')) {
    for (let n = random.int(1, 3); n > 0; n--) {
      plan.points.push({ kind: 'kill-at', point: random.pick(KILL_POINTS), occurrence: random.int(1, 12), reviveAfterMs: random.int(500, 20_000) });
    }
  }
  if (on('slow-tool')) plan.rates.slowToolProbability = random.float(0.01, 0.2);
  if (on('hung-tool')) plan.rates.hungToolProbability = random.float(0.005, 0.05);
  if (on('lost-response')) plan.rates.lostResponseProbability = random.float(0.005, 0.05);
  if (on('duplicate-delivery')) plan.rates.duplicateDeliveryProbability = random.float(0.01, 0.2);
  if (on('tool-error')) plan.rates.toolErrorProbability = random.float(0.01, 0.1);
  if (on('stale-write')) plan.rates.staleWriteProbability = random.float(0.05, 0.5);
  plan.timed.sort((a, b) => a.atMs - b.atMs);
  return plan;
}
