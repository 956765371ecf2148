import type { z } from 'zod';
import { flag, nonNegative, part } from '../schema-kit.ts';
import type { FaultRun, SchedulerHandle, TimedInjector } from './injector.ts';

/**
 * S4 scheduler restart: the queue and its database are closed and, downMs later, reopened from the file
 * with only what was committed. While it is down every call meets SQLITE_BUSY and clients retry; the
 * liveness phase reopens a scheduler that is still down (S5). With `processes`, the worker processes
 * restart with it (issue 35, 5b): each dies as the scheduler goes down and starts again, a new
 * incarnation that opens its queue afresh, when it is back.
 */
export const restartFault = part(
  'restart',
  {
    atMs: nonNegative().meta({ description: 'When, in ms from the start of the run (within the safety phase).' }),
    downMs: nonNegative().default(3_000).meta({ description: 'How long the scheduler stays down; default 3000.' }),
    processes: flag().optional().meta({ description: 'The worker processes restart with the scheduler: each is killed as it goes down and starts again, opening its queue afresh, when it is back. Default false: they live through it.' }),
  },
  'Close the queue and reopen it downMs later from the file, with only committed state.',
);
export type RestartFault = z.output<typeof restartFault>;

export const restart: TimedInjector<RestartFault> = {
  kind: 'restart',
  // What was committed must outlive the restart: an image in memory, a file, or PGlite.
  needs: ['disk'],
  swarm: ({ random, at }, plan) => {
    for (let n = random.int(1, 2); n > 0; n--) {
      const restart: RestartFault = { kind: 'restart', atMs: at(), downMs: random.int(100, 3_000) };
      // Half the swarm's restarts take the worker processes with them, decided on a fork of its own so no other draw moves.
      if (random.fork(`restart-processes-${n}`).chance(0.5)) restart.processes = true;
      plan.timed.push(restart);
    }
  },
  fire: (fault, run) => restartScheduler(run, fault.downMs, fault.processes === true),
};

async function restartScheduler({ world }: FaultRun, downMs: number, processes: boolean): Promise<void> {
  const scheduler: SchedulerHandle = world.scheduler;
  if (scheduler.down || !scheduler.onDisk) return;
  // A1: with budgets, the note holds their levels as the scheduler goes down (and the core's clock then),
  // and a `budget-levels` note the levels once it is back, so expectations/budget-restart.ts can check
  // that the bucket state survived and the time it was down (or a clock jump) granted nothing beyond it.
  const levels = scheduler.budgetLevels === undefined ? undefined : await scheduler.budgetLevels();
  if (scheduler.down) return;
  const jsonLevels = levels?.map((level) => ({ ...level }));
  world.history.note('restart', 'scheduler', jsonLevels === undefined ? { downMs } : { downMs, clockMs: world.loop.clock.now(), levels: jsonLevels });
  await scheduler.shutDown(processes);
  const read = scheduler.budgetLevels;
  if (read === undefined) {
    world.loop.after(downMs, () => scheduler.reopen());
    return;
  }
  world.loop.after(downMs, async () => {
    if (!scheduler.down) return;
    scheduler.reopen();
    const clockMs = world.loop.clock.now();
    const after = await read();
    world.history.note('budget-levels', 'scheduler', { clockMs, levels: after.map((level) => ({ ...level })) });
  });
}

/** The liveness phase: a scheduler that is down comes back at once. */
export function recoverScheduler({ world }: FaultRun): void {
  if (world.scheduler.down) world.scheduler.reopen();
}
