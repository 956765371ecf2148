import type { Waiter } from '../src/ports.ts';
import { VirtualClock } from './clock.ts';
import { VirtualWaiter } from './waiter.ts';

/**
 * The discrete-event loop (S1): the only thing that moves simulated time. Events run in order of
 * (time, scheduling sequence), so two events at one instant run in the order they were scheduled and a
 * run never depends on how a heap breaks ties. Idle time is skipped: the clock jumps to the next event.
 *
 * Simulated actors are plain async functions. They wait through `waiter` (the Waiter port's twin in
 * `sim/waiter.ts`; `sleep` here is the same wait); everything else they await must be promise-driven. After every event the loop drains all pending
 * promise continuations before it takes the next event, so an actor woken at time t runs to its next
 * wait while the clock still reads t. See `drainContinuations` for how and why that is deterministic.
 */

/** A scheduled event; `cancel()` returns true if it was still pending. */
export interface EventHandle {
  readonly atMs: number;
  cancel(): boolean;
}

export interface EventLoopConstraints {
  /** Where the timeline starts; ignored when `clock` is given. */
  epochMs?: number;
  clock?: VirtualClock;
  /** Per-run bound on events when `run` is given none: a livelock ends in an `EventLimitError`. */
  maxEvents?: number;
  /** Bound on events waiting at once: a runaway scheduler ends in an `EventLimitError`. */
  maxPending?: number;
}

export interface RunConstraints {
  /** Stop before any event later than this timeline instant, and leave the clock there. */
  untilMs?: number;
  maxEvents?: number;
}

export interface RunStats {
  events: number;
  startMs: number;
  endMs: number;
  /** `idle`: nothing left to do; `until`: reached `untilMs`; `stopped`: `stop()` was called. */
  reason: 'idle' | 'until' | 'stopped';
  pending: number;
}

/** A bound of the loop was hit. In a simulation this means livelock or runaway scheduling. */
export class EventLimitError extends Error {
  override readonly name = 'EventLimitError';
  constructor(
    readonly limit: 'maxEvents' | 'maxPending',
    readonly value: number,
    readonly atMs: number,
  ) {
    super(`event loop bound ${limit}=${value} hit at timeline ${atMs}: livelock or runaway scheduling?`);
  }
}

const maxEventsDefault = 10_000_000;
const maxPendingDefault = 1_000_000;

type Callback = () => unknown;

class ScheduledEvent implements EventHandle {
  constructor(
    readonly atMs: number,
    readonly sequence: number,
    public callback: Callback | null,
    private readonly loop: EventLoop,
  ) {}

  cancel(): boolean {
    if (this.callback === null) return false;
    this.callback = null;
    this.loop.noteCancelled();
    return true;
  }
}

/**
 * Waits until every promise continuation that is runnable now, and every one those enqueue in turn, has
 * run. Node drains the whole microtask queue (including what the jobs enqueue while it drains) before it
 * runs the process.nextTick queue, and a tick queued from inside a microtask job runs only after that
 * drain. So the wait queues a microtask that queues the tick: the microtask makes it independent of the
 * caller's context (called straight from a macrotask callback, before any microtask ran, a tick queued
 * at once would run first, ahead of the continuations it should wait for), and the tick fires only once
 * the simulated world is quiescent. The result does not depend on how deep an actor's await chain is,
 * unlike awaiting a resolved promise N times, which would let a deep chain resume after time had moved
 * on. Simulated code queues no ticks, timers or real I/O of its own (S1: no timers; better-sqlite3 is
 * synchronous), so nothing else can run in between that touches simulated state, and the order within
 * the world is fixed by the FIFO microtask queue alone (PGlite's queries, on the pglite store, resolve
 * through promises too). It used to wait for a setImmediate: the same quiescent point, but each wait was
 * a turn of the event loop, a poll of the OS (idle time fell from 8% to 3% of a kill-takeover seed's
 * profile). Cost: measured in event-loop.test.ts.
 */
function drainContinuations(): Promise<void> {
  return new Promise((resolve) => queueMicrotask(() => process.nextTick(resolve)));
}

function earlier(a: ScheduledEvent, b: ScheduledEvent): boolean {
  return a.atMs < b.atMs || (a.atMs === b.atMs && a.sequence < b.sequence);
}

export class EventLoop implements Waiter {
  readonly clock: VirtualClock;
  /** The Waiter port's twin on this loop's timeline: what simulated actors are given to wait with. */
  readonly waiter: VirtualWaiter = new VirtualWaiter(this);
  private readonly maxEventsDefault: number;
  private readonly maxPending: number;
  /** A binary min-heap by (atMs, sequence); cancelled events stay until popped or compacted. */
  private heap: ScheduledEvent[] = [];
  private sequenceNext = 0;
  private cancelledInHeap = 0;
  private running = false;
  private stopRequested = false;
  private failure: { error: unknown } | null = null;

  constructor(constraints: EventLoopConstraints = {}) {
    this.clock = constraints.clock ?? new VirtualClock(constraints.epochMs);
    this.maxEventsDefault = constraints.maxEvents ?? maxEventsDefault;
    this.maxPending = constraints.maxPending ?? maxPendingDefault;
  }

  /** The monotonic timeline instant; use `clock.now()` for the wall reading the core sees. */
  now(): number {
    return this.clock.monotonicNow();
  }

  /** Events still waiting (cancelled ones excluded). */
  get pending(): number {
    return this.heap.length - this.cancelledInHeap;
  }

  /** Runs `callback` at timeline instant `atMs`, after everything already scheduled for that instant. */
  schedule(atMs: number, callback: Callback): EventHandle {
    if (!Number.isSafeInteger(atMs)) throw new RangeError(`atMs must be a safe integer, got ${atMs}`);
    if (atMs < this.now()) throw new RangeError(`cannot schedule in the past: ${atMs} < ${this.now()}`);
    if (this.pending >= this.maxPending) throw new EventLimitError('maxPending', this.maxPending, this.now());
    const event = new ScheduledEvent(atMs, this.sequenceNext++, callback, this);
    this.push(event);
    return event;
  }

  after(delayMs: number, callback: Callback): EventHandle {
    if (!Number.isSafeInteger(delayMs) || delayMs < 0) {
      throw new RangeError(`delayMs must be a non-negative safe integer, got ${delayMs}`);
    }
    return this.schedule(this.now() + delayMs, callback);
  }

  /** Waiter: the same as `waiter.sleep` (see `sim/waiter.ts` for its rules). */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.waiter.sleep(ms, signal);
  }

  /** Asks the current `run` to return after the event in progress. */
  stop(): void {
    this.stopRequested = true;
  }

  /**
   * Takes events in order until none is left, `untilMs` is reached, `stop()` is called or a bound is hit.
   * An error thrown by a callback (or by the promise an async callback returns) ends the run with that
   * error once the continuations of that event have drained.
   */
  async run(constraints: RunConstraints = {}): Promise<RunStats> {
    if (this.running) throw new Error('EventLoop.run is not reentrant');
    const maxEvents = constraints.maxEvents ?? this.maxEventsDefault;
    const untilMs = constraints.untilMs ?? Number.POSITIVE_INFINITY;
    if (untilMs < this.now()) throw new RangeError(`untilMs ${untilMs} is before now ${this.now()}`);
    this.running = true;
    this.stopRequested = false;
    const startMs = this.now();
    let events = 0;
    let reason: RunStats['reason'];
    try {
      // Actors started before `run` have only reached their first await; let them get to their first wait.
      await drainContinuations();
      this.rethrowFailure();
      for (;;) {
        if (this.stopRequested) { reason = 'stopped'; break; }
        const next = this.peekLive();
        if (next === undefined) { reason = 'idle'; break; }
        if (next.atMs > untilMs) { reason = 'until'; break; }
        if (events >= maxEvents) throw new EventLimitError('maxEvents', maxEvents, this.now());
        this.popHead();
        this.clock.advanceTo(next.atMs);
        events++;
        this.fire(next);
        await drainContinuations();
        this.rethrowFailure();
      }
      if (reason !== 'stopped' && Number.isFinite(untilMs)) this.clock.advanceTo(untilMs);
    } finally {
      this.running = false;
    }
    return { events, startMs, endMs: this.now(), reason, pending: this.pending };
  }

  /** Called by a handle; keeps the live count right and the heap from filling with dead entries. */
  noteCancelled(): void {
    this.cancelledInHeap++;
    if (this.heap.length > 1024 && this.cancelledInHeap * 2 > this.heap.length) this.compact();
  }

  private fire(event: ScheduledEvent): void {
    const callback = event.callback;
    if (callback === null) throw new Error('assertion: fired a cancelled event');
    event.callback = null;
    try {
      const result = callback();
      if (isThenable(result)) result.then(undefined, (error: unknown) => this.recordFailure(error));
    } catch (error) {
      this.recordFailure(error);
    }
  }

  private recordFailure(error: unknown): void {
    // The first failure is the cause; later ones are usually its consequences.
    this.failure ??= { error };
  }

  private rethrowFailure(): void {
    if (this.failure === null) return;
    const { error } = this.failure;
    this.failure = null;
    throw error;
  }

  private peekLive(): ScheduledEvent | undefined {
    for (;;) {
      const head = this.heap[0];
      if (head === undefined || head.callback !== null) return head;
      this.popHead();
      this.cancelledInHeap--;
    }
  }

  private compact(): void {
    const live = this.heap.filter((event) => event.callback !== null);
    this.heap = [];
    this.cancelledInHeap = 0;
    for (const event of live) this.push(event);
  }

  private push(event: ScheduledEvent): void {
    const heap = this.heap;
    let index = heap.length;
    heap.push(event);
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = heap[parentIndex] as ScheduledEvent;
      if (!earlier(event, parent)) break;
      heap[index] = parent;
      index = parentIndex;
    }
    heap[index] = event;
  }

  private popHead(): void {
    const heap = this.heap;
    const last = heap.pop();
    if (last === undefined || heap.length === 0) return;
    let index = 0;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const leftEvent = heap[left] as ScheduledEvent;
      const rightEvent = heap[right];
      const child = rightEvent !== undefined && earlier(rightEvent, leftEvent) ? right : left;
      const childEvent = heap[child] as ScheduledEvent;
      if (!earlier(childEvent, last)) break;
      heap[index] = childEvent;
      index = child;
    }
    heap[index] = last;
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}
