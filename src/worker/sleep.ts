import type { Waiter } from '../ports.ts';

/** Why a sleep is aborted when its waiter has no timer(): it was let go of. With a reason of its own: abort() without one makes a DOMException, stack trace and all, every time. */
const LET_GO = 'the sleep was let go of';

/** A sleep that can be ended early: `slept` resolves when its time ran out or once `cancel` was called, and `ranOut`, read once it has, says which. */
export interface CancellableSleep {
  readonly slept: Promise<void>;
  readonly ranOut: boolean;
  cancel(): void;
}

/**
 * A sleep of `ms` that its owner lets go of when what it raced finished first (a worker woken before its
 * poll, a tool that answered before its timeout, a run that ended before its next heartbeat), so no timer
 * of it outlives that. Through the waiter's timer() when it has one (TimerWaiter): clearing a timer costs
 * next to nothing, where an AbortSignal's abort dispatches an event (about 0.15 ms on a process that was
 * idle, on the path from a notice to the claim). Otherwise (the simulator's waiters) through sleep() and
 * an AbortSignal, as the Waiter port describes, with the waiter's own promise as `slept`.
 */
export function cancellableSleep(waiter: Waiter, ms: number): CancellableSleep {
  if (waiter.timer !== undefined) {
    let settle!: () => void;
    let ranOut = false;
    const slept = new Promise<void>((resolve) => (settle = resolve));
    const clear = waiter.timer(ms, () => {
      ranOut = true;
      settle();
    });
    return {
      slept,
      get ranOut() {
        return ranOut;
      },
      cancel() {
        clear();
        settle();
      },
    };
  }
  const sleeping = new AbortController();
  return {
    slept: waiter.sleep(ms, sleeping.signal),
    get ranOut() {
      return !sleeping.signal.aborted;
    },
    cancel: () => sleeping.abort(LET_GO),
  };
}
