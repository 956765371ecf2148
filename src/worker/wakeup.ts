import type { Waiter } from '../ports.ts';

/** Why a wait's sleep is aborted: the wait is over (woken, or its own timer came due). */
const WAIT_OVER = 'the wait is over';

/**
 * W1: how a worker's claim loop waits. It sleeps through the injected Waiter (real timers in production,
 * the virtual loop in the simulator) and is woken early by `wake()`: when one of its runs ends (a free
 * slot claims at once), when the queue says new work is claimable (WorkQueue.watch), and on stop().
 *
 * A wake that comes while nobody waits is kept, once: the next wait returns at once. So a notice that
 * lands during a claim that found nothing is not lost between that claim and the wait after it.
 */
export class Wakeup {
  private woken = false;
  private resolve: (() => void) | undefined;

  wake(): void {
    this.woken = true;
    const resolve = this.resolve;
    this.resolve = undefined;
    resolve?.();
  }

  /** Waits up to `ms` (no bound when undefined) or until woken; true when it was woken. */
  async wait(waiter: Waiter, ms?: number): Promise<boolean> {
    if (!this.woken) {
      const woken = new Promise<void>((resolve) => (this.resolve = resolve));
      if (ms === undefined) await woken;
      else if (waiter.timer !== undefined) {
        // The timer ends the wait without counting as a wake; either way it is let go of after.
        const cancel = waiter.timer(ms, () => {
          const resolve = this.resolve;
          this.resolve = undefined;
          resolve?.();
        });
        await woken;
        cancel();
      } else {
        // The sleep that lost the race is aborted, so no timer outlives the wait. With a reason of its
        // own: abort() without one makes a DOMException, stack trace and all, on every wake and every
        // poll of an idle worker.
        const sleeping = new AbortController();
        await Promise.race([woken, waiter.sleep(ms, sleeping.signal)]);
        sleeping.abort(WAIT_OVER);
      }
      this.resolve = undefined;
    }
    // Read after the wait, not from the race: a wake that came as the sleep ended still counts.
    const wasWoken = this.woken;
    this.woken = false;
    return wasWoken;
  }
}
