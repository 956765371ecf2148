import type { z } from 'zod';
import { nonNegative, part } from '../schema-kit.ts';
import type { FaultPlan } from './plan.ts';
import type { FaultRun, SchedulerHandle, TimedInjector } from './injector.ts';

/**
 * S4 scheduler restart: the queue and its database are closed and, downMs later, reopened from the file
 * with only what was committed. While it is down every call meets SQLITE_BUSY and clients retry; the
 * liveness phase reopens a scheduler that is still down (S5).
 */
export const restartFault = part(
  'restart',
  {
    atMs: nonNegative().meta({ description: 'When, in ms from the start of the run (within the safety phase).' }),
    downMs: nonNegative().default(3_000).meta({ description: 'How long the scheduler stays down; default 3000.' }),
  },
  'Close the queue and reopen it downMs later from the file, with only committed state.',
);
export type RestartFault = z.output<typeof restartFault>;

export const restart: TimedInjector<RestartFault> = {
  kind: 'restart',
  swarm: ({ random, at }, plan) => {
    for (let n = random.int(1, 2); n > 0; n--) plan.timed.push({ kind: 'restart', atMs: at(), downMs: random.int(100, 3_000) });
  },
  fire: (fault, run) => restartScheduler(run, fault.downMs),
};

/** A restart (or a power loss) must find state on disk: a plan with one runs on a database file, others in memory (much faster). */
export function needsDisk(plan: FaultPlan): boolean {
  return plan.timed.some((fault) => fault.kind === 'restart' || fault.kind === 'power-loss');
}

async function restartScheduler({ world }: FaultRun, downMs: number): Promise<void> {
  const scheduler: SchedulerHandle = world.scheduler;
  if (scheduler.down || !scheduler.onDisk) return;
  world.history.note('restart', 'scheduler', { downMs });
  await scheduler.shutDown();
  world.loop.after(downMs, () => scheduler.reopen());
}

/** The liveness phase: a scheduler that is down comes back at once. */
export function recoverScheduler({ world }: FaultRun): void {
  if (world.scheduler.down) world.scheduler.reopen();
}
