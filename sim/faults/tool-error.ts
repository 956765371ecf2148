import { RETRYABLE_ERROR_CLASSES, type ErrorClass } from '../../src/queue/types.ts';
import { ToolFailure } from '../../src/worker/types.ts';
import type { SeededRandom } from '../random.ts';
import { ratePart, type RateInjector } from './injector.ts';
import type { FaultRates } from './plan.ts';

/**
 * Tool errors: a tool call fails with an error class, with this probability per call, halfway through
 * its latency and before a write tool acts. The class is drawn from the scenario's `tools.errorClasses`
 * weights (a storm of 429s: only rate_limited); absent: 85% one of the retryable classes, uniformly,
 * and 15% permission_denied. Retryable classes are retried with backoff (Q16), others fail the task.
 */
export const toolErrorFault = ratePart('tool-error', 'Each tool call fails with an error class (tools.errorClasses), with this probability.');
export interface ToolErrorRate {
  toolErrorProbability: number;
}

export const toolError: RateInjector<'toolErrorProbability'> = { kind: 'tool-error', field: 'toolErrorProbability', swarm: (random) => random.float(0.01, 0.1) };

/** In a tool call (actors/tools.ts), from the tool's stream: the failure this call meets, if any. */
export function toolFailure(random: SeededRandom, rates: FaultRates, tool: string, weights: Partial<Record<ErrorClass, number>> | undefined): ToolFailure | undefined {
  if (!random.chance(rates.toolErrorProbability)) return undefined;
  const errorClass: ErrorClass = weights === undefined ? (random.chance(0.85) ? random.pick(RETRYABLE_ERROR_CLASSES) : 'permission_denied') : pickWeighted(random, weights);
  return new ToolFailure(errorClass, `${tool}: simulated ${errorClass}`);
}

function pickWeighted(random: SeededRandom, weights: Partial<Record<ErrorClass, number>>): ErrorClass {
  const entries = (Object.entries(weights) as [ErrorClass, number][]).filter(([, weight]) => weight > 0).sort(([a], [b]) => (a < b ? -1 : 1));
  const total = entries.reduce((sum, [, weight]) => sum + weight, 0);
  let draw = random.next() * total;
  for (const [errorClass, weight] of entries) {
    draw -= weight;
    if (draw < 0) return errorClass;
  }
  return entries[entries.length - 1]![0];
}
