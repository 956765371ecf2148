import type { Waiter } from '../ports.ts';

/** Production waiting: real timers. */
export class TimerWaiter implements Waiter {
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted === true) return resolve();
      const onAbort = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        // allow-ambient: production adapter
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, Math.max(0, ms));
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  timer(ms: number, fire: () => void): () => void {
    // allow-ambient: production adapter
    const timer = setTimeout(fire, Math.max(0, ms));
    return () => clearTimeout(timer);
  }
}
