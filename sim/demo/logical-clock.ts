import type { Clock } from '../../src/ports.ts';

/**
 * A clock the demo moves by hand, as seed 000's logical-clock replay does. Nothing else moves it, so
 * every wait and score the demo prints follows from the script alone and is the same on every machine.
 */
export class LogicalClock implements Clock {
  private currentMs: number;

  constructor(readonly startMs: number) {
    if (!Number.isSafeInteger(startMs)) throw new RangeError(`startMs must be integer milliseconds, got ${startMs}`);
    this.currentMs = startMs;
  }

  now(): number {
    return this.currentMs;
  }

  /** Milliseconds since the demo started. */
  get elapsedMs(): number {
    return this.currentMs - this.startMs;
  }

  advanceBy(deltaMs: number): void {
    if (!Number.isSafeInteger(deltaMs) || deltaMs < 0) throw new RangeError(`time only moves forward by whole ms, got ${deltaMs}`);
    this.currentMs += deltaMs;
  }
}

/** `+5 s`, `+0.5 s`: a time since the start, as the demo prints it, padded so lines align. */
export function since(ms: number): string {
  return `+${ms / 1000} s`.padEnd(6);
}
