import type { Waiter } from '../../src/ports.ts';

/**
 * One life of a simulated worker process. Everything the worker awaits passes through `gate`, so the
 * simulator controls when (and whether) the worker's code runs again:
 * - alive: results are delivered as they arrive;
 * - paused: results are held and delivered in arrival order on resume (a zombie wakes up);
 * - dead: results are dropped, so the code after the pending await never runs, just as after SIGKILL.
 * Between awaits code runs synchronously, so a kill always lands "at an await", as S4 asks.
 */
export class Incarnation {
  state: 'alive' | 'paused' | 'dead' = 'alive';
  diedAtMs: number | undefined;
  private held: (() => void)[] = [];

  constructor(
    /** The worker id the queue sees, e.g. `w2#1`: a revived worker is a new incarnation with a new id. */
    readonly id: string,
    readonly worker: number,
  ) {}

  get alive(): boolean {
    return this.state !== 'dead';
  }

  gate<T>(work: Promise<T>): Promise<T> {
    if (this.state === 'dead') return new Promise<T>(() => {});
    return new Promise<T>((resolve, reject) => {
      work.then(
        (value) => this.deliver(() => resolve(value)),
        (error: unknown) => this.deliver(() => reject(error)),
      );
    });
  }

  /** A Waiter whose sleeps obey the gate: a paused worker misses its heartbeats. */
  waiter(inner: Waiter): Waiter {
    return { sleep: (ms, signal) => this.gate(inner.sleep(ms, signal)) };
  }

  pause(): void {
    if (this.state === 'alive') this.state = 'paused';
  }

  resume(): void {
    if (this.state !== 'paused') return;
    this.state = 'alive';
    const held = this.held;
    this.held = [];
    for (const deliver of held) deliver();
  }

  /** Runs `call` only if this process is alive; a dead one makes no calls at all. */
  whileAlive<T>(call: () => Promise<T>): Promise<T> {
    return this.state === 'dead' ? new Promise<T>(() => {}) : this.gate(call());
  }

  kill(atMs: number): void {
    if (this.state === 'dead') return;
    this.state = 'dead';
    this.diedAtMs = atMs;
    this.held = [];
  }

  private deliver(continuation: () => void): void {
    if (this.state === 'alive') continuation();
    else if (this.state === 'paused') this.held.push(continuation);
  }
}

/** Thrown if a dead incarnation's code reaches the queue at all: a bug in the harness, never expected. */
export class DeadIncarnationError extends Error {
  constructor(id: string, op: string) {
    super(`harness bug: dead incarnation ${id} called ${op}`);
    this.name = 'DeadIncarnationError';
  }
}
