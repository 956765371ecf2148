import type { SeededRandom } from '../random.ts';
import { ratePart, type RateInjector } from './injector.ts';
import type { FaultRates } from './plan.ts';

/**
 * S4 lost responses: the tool acted (for a write tool, the provider recorded the effect) but its answer
 * never arrives, with this probability per call. The run must not do the effect twice (R3).
 */
export const lostResponseFault = ratePart('lost-response', "A tool call's answer is lost after the tool acted, with this probability.");
export interface LostResponseRate {
  lostResponseProbability: number;
}

export const lostResponse: RateInjector<'lostResponseProbability'> = {
  kind: 'lost-response',
  field: 'lostResponseProbability',
  swarm: (random) => random.float(0.005, 0.05),
};

/** In a tool call (actors/tools.ts), from the tool's stream, after the tool acted: its answer is lost. */
export function responseLost(random: SeededRandom, rates: FaultRates): boolean {
  return random.chance(rates.lostResponseProbability);
}
