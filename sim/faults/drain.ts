import type { z } from 'zod';
import { nonNegative, part } from '../schema-kit.ts';
import type { TimedInjector } from './injector.ts';
import { workerProblems } from './kill.ts';

/**
 * R8 graceful shutdown (SIGTERM): at a moment the worker's incarnation is told to drain. The production
 * `Worker.drain(drainMs)` runs on the incarnation's own gated waiter and queue (so it is deterministic
 * and a kill or a pause during it lands as on any other await): it stops claiming, lets its runs finish
 * for up to drainMs, and hands each unfinished run back `interrupted`, which the next claim resumes
 * from its last checkpoint. Then the incarnation exits (an `exit` note: it is gone, as a process that
 * returned from its drain and closed its queue), and a new incarnation starts reviveAfterMs later.
 *
 * What a SIGTERM meets (sim/world.ts drain): a live incarnation drains at once; a paused (SIGSTOPped)
 * one has the signal pending and drains when it resumes, as a stopped process handles SIGTERM on
 * SIGCONT; a dead one is already gone and its pid names nothing, so the drain does nothing (noted
 * `drain-missed`); one already draining ignores the second signal, as the production handler does
 * (src/worker/worker-process-run.ts keeps one drain).
 *
 * Not a swarm kind (no `swarm` draw): adding a draw would change what every swarm seed draws, and with
 * it the config swarm's plans and the trace hashes pinned in sim/scenarios/registry.test.ts.
 */
export const drainFault = part(
  'drain',
  {
    atMs: nonNegative().meta({ description: 'When the worker is told to shut down gracefully (SIGTERM), in ms from the start of the run (within the safety phase).' }),
    worker: nonNegative().default(0).meta({ description: 'The worker index (0 to workers.count - 1); default 0.' }),
    drainMs: nonNegative().default(2_000).meta({ description: 'How long its runs may go on finishing before the rest are handed back interrupted (Worker.drain, R8); default 2000.' }),
    reviveAfterMs: nonNegative().default(5_000).meta({ description: 'A new incarnation starts this long after the drained one exited; default 5000.' }),
  },
  'Shut the worker down gracefully (R8): stop claiming, let runs finish for drainMs, hand the rest back interrupted, exit; a new incarnation starts reviveAfterMs later.',
);
export type DrainFault = z.output<typeof drainFault>;

export const drain: TimedInjector<DrainFault> = {
  kind: 'drain',
  problems: (fault, workerCount) => workerProblems(fault.worker, workerCount),
  fire: (fault, { world }) => world.drain(fault.worker, fault.drainMs, fault.reviveAfterMs, 'timed'),
};
