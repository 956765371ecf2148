/**
 * The lease keeper (Q9, R9): its heartbeat loop against a queue the test scripts. Each test ends on a
 * state the keeper reports, never on a duration.
 */
import { describe, expect, it } from 'vitest';
import { BusyError } from '../queue/errors.ts';
import type { ClaimedTask, WorkQueue } from '../queue/types.ts';
import { LeaseKeeper } from './lease-keeper.ts';

const TASK = { id: 7, generation: 1, cancelRequested: false } as ClaimedTask;

/** A waiter whose sleeps end when the test says, one at a time. */
function steppedWaiter() {
  const due: (() => void)[] = [];
  return {
    waiter: { sleep: () => new Promise<void>((resolve) => due.push(resolve)) },
    async beat() {
      for (let i = 0; i < 50 && due.length === 0; i++) await new Promise((resolve) => setImmediate(resolve));
      due.shift()?.();
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    },
    pending: () => due.length,
  };
}

describe('LeaseKeeper heartbeats', () => {
  it('skips a beat the store refused as busy, and beats on', async () => {
    const answers: unknown[] = [new BusyError('heartbeat', 3), { ok: true, leaseUntil: 1, cancelRequested: true }];
    let beats = 0;
    const queue = {
      heartbeat: async () => {
        beats++;
        const answer = answers.shift();
        if (answer instanceof Error) throw answer;
        return answer;
      },
    } as unknown as WorkQueue;
    const time = steppedWaiter();
    const keeper = new LeaseKeeper(queue, time.waiter, 'w1', TASK, 1_000, () => {}, () => {});
    keeper.start();
    await time.beat();
    expect(beats).toBe(1);
    await time.beat();
    expect(beats).toBe(2);
    expect(keeper.cancelRequested).toBe(true);
    expect(keeper.lost).toBe(false);
    keeper.stop();
  });

  it('a heartbeat that fails with an error that is not store trouble ends the heartbeats and is reported, not left as an unhandled rejection', async () => {
    let beats = 0;
    const queue = {
      heartbeat: async () => {
        beats++;
        throw new TypeError('the core broke');
      },
    } as unknown as WorkQueue;
    const time = steppedWaiter();
    const reported: unknown[] = [];
    const keeper = new LeaseKeeper(queue, time.waiter, 'w1', TASK, 1_000, () => {}, (error) => reported.push(error));
    keeper.start();
    await time.beat();
    expect(reported).toEqual([new TypeError('the core broke')]);
    // No further beat is scheduled; the lease is not taken for lost (the next fenced write decides, R9).
    expect(time.pending()).toBe(0);
    expect(beats).toBe(1);
    expect(keeper.lost).toBe(false);
    keeper.stop();
  });
});
