import type { Clock } from '../ports.ts';

/** Production clock: wall time in integer milliseconds. The one place the core reads the system clock. */
export class SystemClock implements Clock {
  now(): number {
    return Date.now(); // allow-ambient: the production adapter of the Clock port
  }
}
