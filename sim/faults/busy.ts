import Database from 'better-sqlite3';
import type { z } from 'zod';
import type { EventLoop } from '../event-loop.ts';
import type { History } from '../history.ts';
import type { SeededRandom } from '../random.ts';
import { nonNegative, part, probability } from '../schema-kit.ts';
import type { TimedInjector } from './injector.ts';

/**
 * S4 transient SQLITE_BUSY, beneath the core: for durationMs from atMs, a second connection on the
 * world's database file (a competing writer) takes the write lock (BEGIN IMMEDIATE) in short bursts and
 * holds it across virtual time, so every transaction the queue tries meanwhile meets a real SQLITE_BUSY
 * and src/store/sqlite-store.ts's own busy handling runs: its bounded retries, then a BusyError to the
 * caller, which the worker runtime, the supervisor and the clients handle. `probability` is the share
 * of the window the lock is held, so about that share of the writes sent in it meet SQLITE_BUSY.
 *
 * Deterministic: every burst and gap is drawn from the faults stream at a loop event, and the lock is
 * taken and released only at loop events. The simulated store's busy timeout is 0 (world.ts): SQLite's
 * busy handler sleeps in real time inside a synchronous call, and the holder, on the same thread, could
 * not release meanwhile; so each attempt meets SQLITE_BUSY at once, and the store's retries, made one
 * after the other with no wait, all meet it while a burst lasts. Waiting is done above, in virtual time
 * (the worker's busyWaitMs, the clients' and the supervisor's next try).
 */
export const busyFault = part(
  'busy',
  {
    atMs: nonNegative().meta({ description: 'When the window opens, in ms from the start of the run (within the safety phase).' }),
    durationMs: nonNegative().default(20_000).meta({ description: 'How long the window stays open; default 20000.' }),
    probability: probability().default(0.3).meta({ description: 'The share of the window a competing writer holds the write lock, so the chance a write in it meets SQLITE_BUSY; default 0.3.' }),
  },
  'A window in which a competing connection holds the write lock for this share of the time, so writes meet SQLITE_BUSY.',
);
export type BusyFault = z.output<typeof busyFault>;

export const busy: TimedInjector<BusyFault> = {
  kind: 'busy',
  // The competing writer is a second connection on the database file.
  needs: ['file'],
  swarm: ({ random, at }, plan) => void plan.timed.push({ kind: 'busy', atMs: at(), durationMs: random.int(1_000, 30_000), probability: random.float(0.05, 0.5) }),
  fire: (fault, run) => run.busy.open(fault),
};

/** How long one burst holds the lock, in virtual ms: longer than a worker's busyWaitMs sometimes, so its retries can run out too. */
const BURST_MS = { min: 20, max: 400 } as const;

/**
 * The competing writer of one run: a connection of its own on the world's database file, which holds
 * the write lock in bursts while a window is open. It is opened for each burst and closed when the
 * burst ends, so between bursts the queue's connection is the file's only one (a restart, or a model of
 * the file beneath the store, sees the database as it would with no competing process).
 */
export class BusyWindows {
  private holder: Database.Database | undefined;
  /** When the current burst ends (virtual ms); the lock is held while this is in the future. */
  private holdUntil = -1;
  private closed = false;

  constructor(
    private readonly loop: EventLoop,
    private readonly history: History,
    /** The faults stream: every burst and gap is drawn from it. */
    private readonly random: SeededRandom,
    /** The database file a second connection can open; undefined for a database in memory. */
    private readonly file: string | undefined,
  ) {}

  open(fault: BusyFault): void {
    this.history.note('sqlite-busy', 'faults', { durationMs: fault.durationMs, probability: fault.probability });
    if (this.file === undefined) throw new Error('a busy fault needs the database on a file (its kind declares that it needs a file)');
    if (fault.probability <= 0 || fault.durationMs <= 0) return;
    this.cycle(this.loop.now() + fault.durationMs, fault.probability);
  }

  /** Whether the competing writer holds the write lock now. */
  get holding(): boolean {
    return this.holder !== undefined;
  }

  /**
   * One step of a window: a burst holding the lock, then a gap, then the next burst, nothing past the
   * window's end. A gap is share : (1 - share) of a burst's length on average, so the lock is held about
   * `share` of the window; whether it begins with a burst is drawn too.
   */
  private cycle(untilMs: number, share: number, burst = this.random.chance(share)): void {
    const now = this.loop.now();
    if (this.closed || now >= untilMs) return;
    // A share of 1 has no gaps: burst follows burst.
    if (share >= 1) burst = true;
    const lengthMs = this.random.int(BURST_MS.min, BURST_MS.max);
    const endMs = Math.min(untilMs, now + (burst ? lengthMs : Math.max(1, Math.round((lengthMs * (1 - share)) / share))));
    if (burst) this.hold(endMs);
    this.loop.schedule(endMs, () => this.cycle(untilMs, share, !burst));
  }

  private hold(endMs: number): void {
    if (endMs > this.holdUntil) this.holdUntil = endMs;
    if (this.holder === undefined) {
      const holder = new Database(this.file!, { timeout: 0 });
      // The queue's transactions are synchronous and done by the end of each loop event, so the lock is free here.
      holder.exec('BEGIN IMMEDIATE');
      this.holder = holder;
    }
    this.loop.schedule(endMs, () => {
      if (this.loop.now() >= this.holdUntil) this.release();
    });
  }

  /**
   * Lets the lock go now (no-op when it is not held). The scheduler reopening after a restart calls it
   * first: a reopen waits out the busy timeout for the lock, longer than any burst, and the virtual wait
   * is cut to nothing.
   */
  release(): void {
    const holder = this.holder;
    this.holder = undefined;
    this.holdUntil = -1;
    if (holder === undefined) return;
    holder.exec('ROLLBACK');
    holder.close();
  }

  /** The liveness phase or the end of the run: the competing writer lets go, and takes the lock no more. */
  close(): void {
    this.release();
    this.closed = true;
  }
}
