import type { Waiter } from '../src/ports.ts';

/** What a virtual wait needs from the event loop: a callback after a whole number of timeline ms. */
export interface DelayScheduler {
  after(delayMs: number, callback: () => unknown): { cancel(): boolean };
}

/**
 * The simulator's twin of `TimerWaiter` (S1): `sleep` resolves when the event loop's timeline reaches
 * now + ms, never through a real timer. The loop owns one (`EventLoop.waiter`), so every actor's wait
 * is an event in the one queue that orders the run.
 *
 * Like the production adapter, a negative wait is a zero wait, and `sleep(0)` still lets every actor
 * already due at this instant go first (it is scheduled behind them). Fractions round up so that a
 * wait never ends early; NaN is refused rather than silently read as zero.
 */
export class VirtualWaiter implements Waiter {
  constructor(private readonly scheduler: DelayScheduler) {}

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (Number.isNaN(ms)) throw new RangeError('sleep(NaN)');
    const delayMs = Math.max(0, Math.ceil(ms));
    return new Promise((resolve) => {
      if (signal?.aborted === true) return resolve();
      if (signal === undefined) {
        this.scheduler.after(delayMs, resolve);
        return;
      }
      const wait = new AbortableWait(resolve, signal);
      wait.event = this.scheduler.after(delayMs, () => wait.fire());
      signal.addEventListener('abort', wait, { once: true });
    });
  }
}

/**
 * One sleep with a signal: the loop's event resolves it, or the signal's abort does and takes the event
 * out of the loop's queue. A listener object (the DOM's handleEvent), so a sleep makes no named closure:
 * under tsx every named function expression is also given its name at run time, once per sleep.
 */
class AbortableWait {
  event: { cancel(): boolean } | undefined;

  constructor(
    private readonly resolve: () => void,
    private readonly signal: AbortSignal,
  ) {}

  /** The wait's instant came. */
  fire(): void {
    this.signal.removeEventListener('abort', this);
    this.resolve();
  }

  /** The signal aborted: the event leaves the loop's queue, so an aborted wait fires nothing later (as clearTimeout). */
  handleEvent(): void {
    this.event?.cancel();
    this.resolve();
  }
}
