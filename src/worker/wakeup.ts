import type { Waiter } from '../ports.ts';
import { cancellableSleep } from './sleep.ts';

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
      else {
        // The sleep that lost the race is let go of, so no timer outlives the wait.
        const sleep = cancellableSleep(waiter, ms);
        await Promise.race([woken, sleep.slept]);
        sleep.cancel();
      }
      this.resolve = undefined;
    }
    // Read after the wait, not from the race: a wake that came as the sleep ended still counts.
    const wasWoken = this.woken;
    this.woken = false;
    return wasWoken;
  }
}
