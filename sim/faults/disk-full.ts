import type { z } from 'zod';
import { nonNegative, part } from '../schema-kit.ts';
import type { FaultRun, TimedInjector } from './injector.ts';

/**
 * S4 disk full, beneath the core: for durationMs from atMs the database cannot grow. The world's own
 * connection is given `PRAGMA max_page_count` equal to its page count (sim/store/storage-faults.ts), so
 * a write that needs one more page meets a real SQLITE_FULL inside its transaction, and
 * src/store/sqlite-store.ts's own handling runs: the transaction is rolled back and the caller gets a
 * StorageError (disk_full), which the worker runtime, the supervisor and the clients retry later as they
 * retry a busy database. Writes that fit in the pages already there go through, as on a real full disk.
 * A database in memory honours max_page_count too, so the fault needs no file. A scheduler reopening in
 * the window finds the disk still full; the liveness phase (S5) empties it.
 */
export const diskFullFault = part(
  'disk-full',
  {
    atMs: nonNegative().meta({ description: 'When the disk fills, in ms from the start of the run (within the safety phase).' }),
    durationMs: nonNegative().default(5_000).meta({ description: 'How long the database cannot grow, in ms; default 5000.' }),
  },
  'A window in which the database cannot grow: a write that needs a new page fails with SQLITE_FULL, and is rolled back.',
);
export type DiskFullFault = z.output<typeof diskFullFault>;

export const diskFull: TimedInjector<DiskFullFault> = {
  kind: 'disk-full',
  needs: ['storage-gate'],
  swarm: ({ random, at }, plan) => void plan.timed.push({ kind: 'disk-full', atMs: at(), durationMs: random.int(500, 15_000) }),
  fire: (fault, run) => fillDisk(run, fault),
};

function fillDisk({ world }: FaultRun, fault: DiskFullFault): void {
  const storage = world.scheduler.storage;
  const now = world.loop.now();
  world.history.note('disk-full', 'faults', { durationMs: fault.durationMs });
  if (storage === undefined) return;
  storage.watch(world.history);
  if (!storage.fillUntil(now, now + fault.durationMs)) return;
  world.loop.schedule(now + fault.durationMs, () => storage.windowEnded(world.loop.now()));
}
