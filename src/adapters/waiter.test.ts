/** The production Waiter (S1): real timers, and a signal that ends a sleep and lets go of its timer. */
import { describe, expect, it } from 'vitest';
import { TimerWaiter } from './waiter.ts';

describe('TimerWaiter', () => {
  it('a sleep whose signal is already aborted ends at once, whatever its length', async () => {
    const aborted = new AbortController();
    aborted.abort();
    // An hour: only the aborted signal can end it within the test's timeout.
    await expect(new TimerWaiter().sleep(3_600_000, aborted.signal)).resolves.toBeUndefined();
  });

  it('a sleep ends when its signal aborts, and otherwise when its time is up', async () => {
    const controller = new AbortController();
    const sleeping = new TimerWaiter().sleep(3_600_000, controller.signal);
    controller.abort();
    await expect(sleeping).resolves.toBeUndefined();
    await expect(new TimerWaiter().sleep(1)).resolves.toBeUndefined();
  });
});
