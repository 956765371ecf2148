import type { z } from 'zod';
import { nonNegative, oneOf, part } from '../schema-kit.ts';
import type { FaultRun, TimedInjector } from './injector.ts';

/**
 * S4 power loss: the host loses power. Like a restart the scheduler goes down, and with it every worker
 * process on the host (every live incarnation dies, paused ones too, and comes back downMs later); but
 * unlike a restart the database does not keep everything committed: it returns to its last synced state,
 * as the synchronous level of each commit decides (sim/store/power-loss.ts), plus, with `keep: "prefix"`,
 * a seeded prefix of the unsynced commits (what a disk that wrote some unsynced pages keeps; WAL
 * checksums make it a prefix). A seed with a power loss runs its database through the power-loss twin on
 * a real file with the queue's default durability ('acknowledged'), so the verdict is about the default.
 *
 * The history records the cut as a `power-loss` note naming the commits it rolled back (`lost`, each with
 * the history index of the call that made it, `invoke`) and the event cursor the database came back at
 * (`cursor`): the checkers treat it as the boundary where that unsynced history was undone
 * (sim/checkers/timeline.ts), and judge what was acknowledged before it against what is there after.
 */
export const powerLossFault = part(
  'power-loss',
  {
    atMs: nonNegative().meta({ description: 'When, in ms from the start of the run (within the safety phase).' }),
    downMs: nonNegative().default(3_000).meta({ description: 'How long the host stays down (scheduler and workers); default 3000.' }),
    keep: oneOf(['none', 'prefix'] as const, 'none or prefix')
      .default('none')
      .meta({ description: 'none (default): the database returns to its last synced state, the worst case; prefix: a seeded prefix of the unsynced commits survives too.' }),
  },
  'Cut the power: scheduler and workers die, the database returns to its last synced state; everything comes back downMs later.',
);
export type PowerLossFault = z.output<typeof powerLossFault>;

export const powerLoss: TimedInjector<PowerLossFault> = {
  kind: 'power-loss',
  // The twin's real WAL file, which keeps what the disk was told to keep.
  needs: ['file', 'disk', 'power-loss-twin'],
  swarm: ({ random, at }, plan) => {
    plan.timed.push({ kind: 'power-loss', atMs: at(), downMs: random.int(100, 3_000), keep: random.chance(0.5) ? 'prefix' : 'none' });
  },
  fire: (fault, run) => cutPower(run, fault),
};

function cutPower({ world }: FaultRun, fault: PowerLossFault): void {
  const { scheduler } = world;
  // A scheduler already down (a restart) has nothing in flight to lose; the twin is not there without a plan that asks.
  if (scheduler.down || scheduler.powerLoss === undefined) return;
  scheduler.powerLoss(fault.keep, fault.downMs);
}
