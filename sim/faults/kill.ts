import type { z } from 'zod';
import { nonNegative, part } from '../schema-kit.ts';
import type { FaultProblem, TimedInjector } from './injector.ts';

/**
 * S4 kill: at a moment, the worker vanishes whatever it is awaiting (SIGKILL); a new incarnation starts
 * reviveAfterMs later. Its lease runs out, the supervisor confirms the stop, and another worker takes
 * the task over from its last checkpoint.
 */
export const killFault = part(
  'kill',
  {
    atMs: nonNegative().meta({ description: 'When, in ms from the start of the run (within the safety phase).' }),
    worker: nonNegative().default(0).meta({ description: 'The worker index (0 to workers.count - 1); default 0.' }),
    reviveAfterMs: nonNegative().default(5_000).meta({ description: 'A new incarnation starts this long after; default 5000.' }),
  },
  'Kill the worker at a moment, whatever it is awaiting; a new incarnation starts reviveAfterMs later.',
);
export type KillFault = z.output<typeof killFault>;

export const kill: TimedInjector<KillFault> = {
  kind: 'kill',
  swarm: ({ random, at, worker }, plan) => {
    for (let n = random.int(1, 4); n > 0; n--) plan.timed.push({ kind: 'kill', atMs: at(), worker: worker(), reviveAfterMs: random.int(500, 20_000) });
  },
  problems: (fault, workerCount) => workerProblems(fault.worker, workerCount),
  fire: (fault, { world }) => world.kill(fault.worker, 'timed', fault.reviveAfterMs, false),
};

/** A timed fault must name a worker of the pool. */
export function workerProblems(worker: number, workerCount: number): FaultProblem[] {
  return worker < workerCount ? [] : [{ path: ['worker'], message: `must name one of the ${workerCount} workers (0..${workerCount - 1}), got ${worker}` }];
}
