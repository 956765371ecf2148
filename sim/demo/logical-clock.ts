import { VirtualClock } from '../clock.ts';

/**
 * The demo's clock is the one virtual clock, moved by hand (`advanceBy`) as seed 000's logical-clock
 * replay does. Nothing else moves it, so every wait and score the demo prints follows from the script
 * alone and is the same on every machine. Only the name of its start is the demo's own.
 */
export class LogicalClock extends VirtualClock {
  /** When the demo started: the clock's epoch. */
  get startMs(): number {
    return this.epochMs;
  }
}

/** `+5 s`, `+0.5 s`: a time since the start, as the demo prints it, padded so lines align. */
export function since(ms: number): string {
  return `+${ms / 1000} s`.padEnd(6);
}
