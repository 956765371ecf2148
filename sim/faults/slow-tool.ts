import type { SeededRandom } from '../random.ts';
import { ratePart, type RateInjector } from './injector.ts';
import type { FaultRates } from './plan.ts';

/** S4 slow tools: a tool call takes ten times its drawn latency, with this probability per call. */
export const slowToolFault = ratePart('slow-tool', 'Each tool call takes ten times its drawn latency, with this probability.');
export interface SlowToolRate {
  slowToolProbability: number;
}

export const slowTool: RateInjector<'slowToolProbability'> = { kind: 'slow-tool', field: 'slowToolProbability', swarm: (random) => random.float(0.01, 0.2) };

/** In a tool call (actors/tools.ts), from the tool's stream: its latency, ten times longer when slow. */
export function slowToolLatency(random: SeededRandom, rates: FaultRates, latencyMs: number): number {
  return random.chance(rates.slowToolProbability) ? latencyMs * 10 : latencyMs;
}
