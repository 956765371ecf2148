import type { Waiter } from '../ports.ts';

/** Production waiting: real timers. */
export class TimerWaiter implements Waiter {
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms))); // allow-ambient: production adapter
  }
}
