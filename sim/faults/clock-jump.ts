import type { z } from 'zod';
import { int, nonNegative, part } from '../schema-kit.ts';
import type { FaultRun, TimedInjector } from './injector.ts';

/**
 * S4 clock jump: the virtual clock the queue reads jumps by deltaMs (backwards when negative), as a
 * host's wall clock does under NTP; leases, deadlines and aging must survive it.
 */
export const clockJumpFault = part(
  'clock-jump',
  {
    atMs: nonNegative().meta({ description: 'When, in ms from the start of the run (within the safety phase).' }),
    deltaMs: int(Number.MIN_SAFE_INTEGER).meta({ description: 'How far the clock jumps, in ms; negative jumps back.' }),
  },
  'Jump the clock by deltaMs (negative: backwards).',
);
export type ClockJumpFault = z.output<typeof clockJumpFault>;

export const clockJump: TimedInjector<ClockJumpFault> = {
  kind: 'clock-jump',
  swarm: ({ random, at }, plan) => void plan.timed.push({ kind: 'clock-jump', atMs: at(), deltaMs: random.int(-5_000, 45_000) }),
  fire: (fault, run) => jumpClock(run, fault.deltaMs),
};

/** `at`: the await point a clock-jump-at jumped at (checkers/windows.ts), put in the note when given. */
export function jumpClock({ world }: FaultRun, deltaMs: number, at?: string): void {
  world.history.note('clock-jump', 'faults', at === undefined ? { deltaMs } : { deltaMs, at });
  world.loop.clock.jump(deltaMs);
}
