import type { z } from 'zod';
import { nonNegative, part } from '../schema-kit.ts';
import type { TimedInjector } from './injector.ts';
import { workerProblems } from './kill.ts';

/**
 * S4 pause and resume: the worker freezes at a moment (every await held), misses its heartbeats, and
 * wakes durationMs later as a zombie that tries to write under a lease that may have moved on (Q8).
 */
export const pauseFault = part(
  'pause',
  {
    atMs: nonNegative().meta({ description: 'When, in ms from the start of the run (within the safety phase).' }),
    worker: nonNegative().default(0).meta({ description: 'The worker index (0 to workers.count - 1); default 0.' }),
    durationMs: nonNegative().default(60_000).meta({ description: 'How long it stays frozen; default 60000.' }),
  },
  'Freeze the worker: it misses heartbeats and wakes durationMs later as a zombie.',
);
export type PauseFault = z.output<typeof pauseFault>;

export const pause: TimedInjector<PauseFault> = {
  kind: 'pause',
  swarm: ({ random, at, worker }, plan) => {
    for (let n = random.int(1, 3); n > 0; n--) plan.timed.push({ kind: 'pause', atMs: at(), worker: worker(), durationMs: random.int(2_000, 60_000) });
  },
  problems: (fault, workerCount) => workerProblems(fault.worker, workerCount),
  fire: (fault, { world }) => world.pause(fault.worker, fault.durationMs),
};
