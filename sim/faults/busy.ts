import type { z } from 'zod';
import type { EventLoop } from '../event-loop.ts';
import type { History } from '../history.ts';
import type { SeededRandom } from '../random.ts';
import { nonNegative, part, probability } from '../schema-kit.ts';
import type { TimedInjector } from './injector.ts';

/**
 * S4 transient SQLITE_BUSY: for durationMs from atMs, each write a worker sends meets SQLITE_BUSY with
 * `probability`, thrown before the transaction starts (actors/gated-queue.ts), as SQLite does when
 * another connection holds the write lock. Self-contained on purpose: a later step moves it beneath
 * the store (a real second connection holding the lock), and only this file should change for that.
 */
export const busyFault = part(
  'busy',
  {
    atMs: nonNegative().meta({ description: 'When the window opens, in ms from the start of the run (within the safety phase).' }),
    durationMs: nonNegative().default(20_000).meta({ description: 'How long the window stays open; default 20000.' }),
    probability: probability().default(0.3).meta({ description: 'The chance each write in the window meets SQLITE_BUSY; default 0.3.' }),
  },
  'A window in which writes meet SQLITE_BUSY with this probability.',
);
export type BusyFault = z.output<typeof busyFault>;

export const busy: TimedInjector<BusyFault> = {
  kind: 'busy',
  swarm: ({ random, at }, plan) => void plan.timed.push({ kind: 'busy', atMs: at(), durationMs: random.int(1_000, 30_000), probability: random.float(0.05, 0.5) }),
  fire: (fault, run) => run.busy.open(fault),
};

/** The busy windows of one run, opened as their faults fire. */
export class BusyWindows {
  private readonly windows: { fromMs: number; toMs: number; probability: number }[] = [];

  constructor(
    private readonly loop: EventLoop,
    private readonly history: History,
    /** The faults stream: each write in a window draws from it. */
    private readonly random: SeededRandom,
  ) {}

  open(fault: BusyFault): void {
    this.history.note('sqlite-busy', 'faults', { durationMs: fault.durationMs, probability: fault.probability });
    this.windows.push({ fromMs: this.loop.now(), toMs: this.loop.now() + fault.durationMs, probability: fault.probability });
  }

  /** A write now meets SQLITE_BUSY: it falls in an open window and draws that window's probability. */
  meets(): boolean {
    const now = this.loop.now();
    const window = this.windows.find((w) => w.fromMs <= now && now < w.toMs);
    return window !== undefined && this.random.chance(window.probability);
  }
}
