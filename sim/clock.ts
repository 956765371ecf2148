import type { Clock } from '../src/ports.ts';

/** Where virtual time starts unless a scenario says otherwise: 2023-11-14, a plausible wall time. */
export const epochMsDefault = 1_700_000_000_000;

/**
 * The simulator's twin of `SystemClock` (S1), and the one virtual clock of the project: the event loop
 * moves it in a simulation, and tests, the demo and the bench move it by hand (`advanceBy`). It keeps
 * two readings apart, as a real machine does:
 *
 * - the monotonic timeline, which only the event loop moves forward (`advanceTo`), and on which every
 *   timer and `sleep` is scheduled, so a wall-clock jump never makes a timer fire early or late;
 * - the wall reading `now()`, which is the timeline plus a skew that the clock-jump fault (S4) changes
 *   with `jump`, backwards as well as forwards. The core only ever sees the wall reading.
 *
 * All values are integer milliseconds; fractions are refused so that no rounding can differ between runs.
 */
export class VirtualClock implements Clock {
  private timelineMs: number;
  private skewMsCurrent = 0;

  constructor(readonly epochMs: number = epochMsDefault) {
    assertInteger(epochMs, 'epochMs');
    this.timelineMs = epochMs;
  }

  /** The wall reading the core sees: the timeline plus any jumps. */
  now(): number {
    return this.timelineMs + this.skewMsCurrent;
  }

  /** The monotonic timeline the event loop schedules on. Never affected by `jump`. */
  monotonicNow(): number {
    return this.timelineMs;
  }

  /** The total of all jumps so far (negative after a net backwards jump). */
  get skewMs(): number {
    return this.skewMsCurrent;
  }

  /** Timeline milliseconds since the epoch: how long the run (or the hand-driven script) has gone on. */
  get elapsedMs(): number {
    return this.timelineMs - this.epochMs;
  }

  /**
   * Moves the timeline to `timelineMs`. In a simulation only the event loop calls this, when it takes the
   * next event: anything else moving time would let two runs of one seed disagree about when things
   * happened. Code with no event loop (unit tests, the demo, the bench) drives it by hand instead.
   */
  advanceTo(timelineMs: number): void {
    assertInteger(timelineMs, 'timelineMs');
    if (timelineMs < this.timelineMs) {
      throw new RangeError(`the timeline only moves forward: ${timelineMs} < ${this.timelineMs}`);
    }
    this.timelineMs = timelineMs;
  }

  /** The hand-driven form of `advanceTo`: the timeline (and so the wall reading) moves on by `deltaMs`. */
  advanceBy(deltaMs: number): void {
    assertInteger(deltaMs, 'deltaMs');
    if (deltaMs < 0) throw new RangeError(`the timeline only moves forward: advanceBy(${deltaMs}); a wall clock going back is a jump`);
    this.timelineMs += deltaMs;
  }

  /** The clock-jump fault: the wall reading moves by `deltaMs` (may be negative), timers do not. */
  jump(deltaMs: number): void {
    assertInteger(deltaMs, 'deltaMs');
    this.skewMsCurrent += deltaMs;
  }
}

function assertInteger(value: number, name: string): void {
  if (!Number.isSafeInteger(value)) throw new RangeError(`${name} must be a safe integer, got ${value}`);
}
