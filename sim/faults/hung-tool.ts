import type { SeededRandom } from '../random.ts';
import { ratePart, type RateInjector } from './injector.ts';
import type { FaultRates } from './plan.ts';

/** S4 hung tools: a tool call never returns, with this probability per call; the worker's tool timeout must end it. */
export const hungToolFault = ratePart('hung-tool', 'Each tool call hangs (never returns), with this probability.');
export interface HungToolRate {
  hungToolProbability: number;
}

export const hungTool: RateInjector<'hungToolProbability'> = { kind: 'hung-tool', field: 'hungToolProbability', swarm: (random) => random.float(0.005, 0.05) };

/** In a tool call (actors/tools.ts), from the tool's stream, before anything is sent: this call hangs. */
export function toolHangs(random: SeededRandom, rates: FaultRates): boolean {
  return random.chance(rates.hungToolProbability);
}
