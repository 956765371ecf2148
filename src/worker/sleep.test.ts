import { describe, expect, it } from 'vitest';
import { TimerWaiter } from '../adapters/waiter.ts';
import type { Waiter } from '../ports.ts';
import { cancellableSleep } from './sleep.ts';

const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;

/** A waiter with sleep() alone, as the simulator's are: its sleep ends when its signal aborts or `ms` of real time passed. */
const sleepOnly: Waiter = { sleep: (ms, signal) => new TimerWaiter().sleep(ms, signal) };

describe.each([
  ['a waiter with timer() (TimerWaiter)', new TimerWaiter()],
  ['a waiter with sleep() alone (the simulator’s kind)', sleepOnly],
])('cancellableSleep through %s', (_name, waiter) => {
  it('ends when its time runs out, and says so', async () => {
    const sleep = cancellableSleep(waiter, 5);
    await sleep.slept;
    expect(sleep.ranOut).toBe(true);
  });

  it('ends at once when let go of, says its time did not run out, and leaves no timer behind', async () => {
    const before = timers();
    const sleep = cancellableSleep(waiter, 60_000);
    expect(timers()).toBe(before + 1);
    sleep.cancel();
    await sleep.slept;
    expect(sleep.ranOut).toBe(false);
    expect(timers()).toBe(before);
  });
});
