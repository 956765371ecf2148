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
      const onAbort = () => {
        // The event leaves the loop's queue: an aborted wait fires nothing later (as clearTimeout).
        event.cancel();
        resolve();
      };
      const event = this.scheduler.after(delayMs, () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
