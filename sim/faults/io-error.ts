import type { z } from 'zod';
import { int, nonNegative, part } from '../schema-kit.ts';
import type { FaultRun, TimedInjector } from './injector.ts';

/**
 * S4 I/O error on a write, beneath the core: from atMs, the store's write statements are counted, and
 * the one after the first `skip` fails with SQLITE_IOERR_WRITE in place of running, in the middle of its
 * transaction (which one, and at which of its statements, the seeded `skip` decides). The error is
 * injected beneath the statements (sim/store/storage-faults.ts says why it cannot be real), so
 * src/store/sqlite-store.ts's own handling runs: better-sqlite3 rolls the transaction back, and the
 * caller gets a StorageError (io_error), which it retries as it retries a busy database.
 */
export const ioErrorFault = part(
  'io-error',
  {
    atMs: nonNegative().meta({ description: 'When the fault is armed, in ms from the start of the run (within the safety phase).' }),
    skip: int(0, 1_000).default(0).meta({ description: 'Write statements let through after atMs before the one that fails; default 0 (the next).' }),
  },
  'One write statement, the first after skip more from atMs, fails with SQLITE_IOERR_WRITE; its transaction is rolled back.',
);
export type IoErrorFault = z.output<typeof ioErrorFault>;

export const ioError: TimedInjector<IoErrorFault> = {
  kind: 'io-error',
  needs: ['storage-gate'],
  swarm: ({ random, at }, plan) => {
    // A few errors a seed, each at a seeded statement of a seeded transaction.
    for (let count = random.int(1, 4); count > 0; count--) plan.timed.push({ kind: 'io-error', atMs: at(), skip: random.int(0, 40) });
  },
  fire: (fault, run) => armIoError(run, fault),
};

function armIoError({ world }: FaultRun, fault: IoErrorFault): void {
  const storage = world.scheduler.storage;
  world.history.note('io-error', 'faults', { skip: fault.skip });
  if (storage === undefined) return;
  storage.watch(world.history);
  storage.armIoError(fault.skip, () => {});
}
