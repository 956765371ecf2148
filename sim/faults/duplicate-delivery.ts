import type { ClaimedTask } from '../../src/queue/types.ts';
import { ratePart, type FaultRun, type RateInjector } from './injector.ts';
import type { FaultRates } from './plan.ts';

/**
 * S4 duplicate delivery: a claim the queue handed out is delivered again, 0 to 5 s later, to a worker
 * drawn from the pool (maybe the same one), with this probability per claim. The worker must not run
 * the task twice under one lease (I1).
 */
export const duplicateDeliveryFault = ratePart('duplicate-delivery', 'Each claim is delivered again to a drawn worker, with this probability.');
export interface DuplicateDeliveryRate {
  duplicateDeliveryProbability: number;
}

export const duplicateDelivery: RateInjector<'duplicateDeliveryProbability'> = {
  kind: 'duplicate-delivery',
  field: 'duplicateDeliveryProbability',
  swarm: (random) => random.float(0.01, 0.2),
};

/** After a claim: decided from the faults stream, the target and the delay from the delivery stream. */
export function deliverAgain({ world, random, deliveryRandom }: FaultRun, rates: FaultRates, task: ClaimedTask): void {
  const probability = rates.duplicateDeliveryProbability;
  if (!(probability > 0 && random.chance(probability))) return;
  const target = deliveryRandom.int(0, world.workerCount - 1);
  world.loop.after(deliveryRandom.int(0, 5_000), () => world.deliver(target, structuredClone(task)));
}
