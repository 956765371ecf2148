/**
 * The ports through which the core meets the outside world. Nothing in `src/` reads ambient time,
 * randomness or timers directly (S1): production passes the adapters in `adapters/`, the simulator
 * passes its virtual twins from `sim/` (same file names).
 */

/** A source of the current time, in integer milliseconds. */
export interface Clock {
  now(): number;
}

/** A source of uniform random numbers in [0, 1). */
export interface Random {
  next(): number;
}

/**
 * How the worker runtime waits. Production uses real timers; the simulator resolves the promise when
 * its virtual clock reaches the deadline. `sleep(0)` still yields to other actors. A sleep whose
 * `signal` aborts resolves at once and lets go of its timer, so a wait that lost a race (a tool that
 * answered before its timeout, a worker woken before its poll) leaves nothing behind to keep a process
 * alive or to fire later.
 */
export interface Waiter {
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Optional: calls `fire` after `ms` unless the function it returns is called first, which lets go of
   * the timer. A worker's idle wait, its heartbeat wait and a tool call's timeout use it when present
   * (worker/sleep.ts), since most of them end early: an AbortSignal's abort dispatches an event, which on
   * an idle process cost about 0.15 ms of the path from a notice to the claim, where clearing a timer
   * costs next to nothing.
   */
  timer?(ms: number, fire: () => void): () => void;
}
