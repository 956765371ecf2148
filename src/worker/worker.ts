import { CryptoRandom } from '../adapters/random.ts';
import type { Clock, Random, Waiter } from '../ports.ts';
import { RetryableStoreError } from '../queue/errors.ts';
import type { ClaimedTask, WorkQueue } from '../queue/types.ts';
import { runClaimedTask, type RunDependencies } from './run.ts';
import { CallPool } from './tool-graph.ts';
import type { Model, RunOutcome, Tool, WorkerLogLine } from './types.ts';
import { Wakeup } from './wakeup.ts';

export interface WorkerOptions {
  queue: WorkQueue;
  workerId: string;
  model: Model;
  tools: readonly Tool[];
  waiter: Waiter;
  clock: Clock;
  /** W2: the jitter of retries after store trouble. Defaults to the OS CSPRNG; the simulator passes a seeded stream. */
  random?: Random;
  /** Runs held at once by this worker. */
  slots?: number;
  /** Defaults to the queue's heartbeatMs (Q9). */
  heartbeatMs?: number;
  maxSteps?: number;
  toolTimeoutMs?: number;
  /**
   * W1: the fallback poll. An idle worker is woken by the queue (WorkQueue.watch) when work becomes
   * claimable and claims at once when one of its runs ends; it also claims after idleWaitMs (default
   * 1000) without news, doubling while idle up to maxIdleWaitMs (default 8 x idleWaitMs), so a lost
   * notice strands a task for at most maxIdleWaitMs.
   */
  idleWaitMs?: number;
  maxIdleWaitMs?: number;
  /**
   * W1 on SQLite: how often an idle worker reads the store's change counter (`PRAGMA data_version`,
   * which another process's commit moves) and claims when it moved; default 25 ms. Unused where the
   * store has no counter (PostgreSQL hears NOTIFY instead).
   */
  changeCheckMs?: number;
  /** @deprecated W2: ignored. A run retries store trouble for as long as it lasts (busyWaitMs, busyWaitMaxMs). */
  busyRetries?: number;
  /**
   * W2: a call the store refused (busy, unreachable, restarting, full) is retried after busyWaitMs
   * (default 50), doubling each time up to busyWaitMaxMs (default 5000), each wait jittered down by up
   * to half, for as long as the trouble lasts: a run ends by its own outcome or by losing its lease.
   */
  busyWaitMs?: number;
  busyWaitMaxMs?: number;
  /** A7: graph tool calls in flight at once across this worker's runs, at most; default 4. */
  toolConcurrency?: number;
  log?: (line: WorkerLogLine) => void;
  onOutcome?: (outcome: RunOutcome) => void;
}

/**
 * A worker: claims tasks while it has free slots and runs each with the agent loop. `stop()` stops
 * claiming; `drain(drainMs)` then waits for the runs in flight (R8). It waits only through the
 * injected Waiter, so production uses real timers and the simulator virtual ones.
 */
export class Worker {
  private readonly deps: RunDependencies;
  private readonly active = new Map<string, { task: ClaimedTask; run: Promise<RunOutcome> }>();
  private readonly slots: number;
  private readonly idleWaitMs: number;
  private readonly maxIdleWaitMs: number;
  private readonly changeCheckMs: number;
  private readonly wakeup = new Wakeup();
  /** W1: the store's change counter as read just before the last claim; undefined when it has none. */
  private counter: number | undefined;
  private stopping = false;
  /** R8: the claim in flight, if any. A drain waits for it, so a task it claims joins the runs the drain lets finish or hands back. */
  private claiming: Promise<unknown> | undefined;
  /** W2: set once a drain has given up on the runs still in flight: a run still retrying store trouble then stops. */
  private abandoning = false;

  constructor(private readonly options: WorkerOptions) {
    const config = options.queue.config;
    this.slots = positive('slots', options.slots ?? 1);
    this.idleWaitMs = positive('idleWaitMs', options.idleWaitMs ?? 1_000);
    this.maxIdleWaitMs = Math.max(this.idleWaitMs, positive('maxIdleWaitMs', options.maxIdleWaitMs ?? 8 * this.idleWaitMs));
    this.changeCheckMs = positive('changeCheckMs', options.changeCheckMs ?? 25);
    if (options.random !== undefined && typeof options.random?.next !== 'function') throw new TypeError('worker option random must be a Random with next()');
    const busyWaitMs = positive('busyWaitMs', options.busyWaitMs ?? 50);
    this.deps = {
      queue: options.queue,
      waiter: options.waiter,
      clock: options.clock,
      workerId: options.workerId,
      model: options.model,
      tools: new Map(options.tools.map((tool) => [tool.name, tool])),
      heartbeatMs: positive('heartbeatMs', options.heartbeatMs ?? config.heartbeatMs),
      maxSteps: positive('maxSteps', options.maxSteps ?? 16),
      toolTimeoutMs: positive('toolTimeoutMs', options.toolTimeoutMs ?? config.leaseMs),
      busyWaitMs,
      busyWaitMaxMs: Math.max(busyWaitMs, positive('busyWaitMaxMs', options.busyWaitMaxMs ?? 5_000)),
      random: options.random ?? new CryptoRandom(),
      abandoning: () => this.abandoning,
      toolPool: new CallPool(positive('toolConcurrency', options.toolConcurrency ?? 4)),
      log: options.log ?? (() => {}),
    };
  }

  get workerId(): string {
    return this.options.workerId;
  }

  get running(): number {
    return this.active.size;
  }

  /**
   * Claims and runs tasks until stop(). Resolves when claiming has stopped (runs may continue).
   *
   * W1: a free slot claims at once, and again while claims succeed. With every slot taken it waits for
   * a run to end. With nothing to claim it waits for news: the queue's notice (WorkQueue.watch), a move
   * of the store's change counter (SQLite, read every changeCheckMs), or its own poll, which backs off
   * from idleWaitMs to maxIdleWaitMs while nothing comes, so an idle fleet costs little.
   */
  async runLoop(): Promise<void> {
    const { queue } = this.options;
    const unwatch = typeof queue.watch === 'function' ? queue.watch(() => this.wakeup.wake()) : undefined;
    try {
      let pollMs = this.idleWaitMs;
      while (!this.stopping) {
        if (this.active.size >= this.slots) {
          await this.wakeup.wait(this.options.waiter);
          continue;
        }
        if (await this.claimOne()) {
          pollMs = this.idleWaitMs;
          continue;
        }
        if (this.stopping) break;
        if (await this.idle(pollMs)) pollMs = this.idleWaitMs;
        else pollMs = Math.min(this.maxIdleWaitMs, pollMs * 2);
      }
    } finally {
      if (typeof unwatch === 'function') unwatch();
    }
  }

  /**
   * Waits up to pollMs for news: true when something woke it (a notice, a run's end, stop, a move of the
   * change counter), false when the poll simply came due.
   */
  private async idle(pollMs: number): Promise<boolean> {
    const { waiter, clock } = this.options;
    if (this.counter === undefined) return this.wakeup.wait(waiter, pollMs);
    const until = clock.now() + pollMs;
    while (!this.stopping) {
      const leftMs = until - clock.now();
      if (leftMs <= 0) return false;
      if (await this.wakeup.wait(waiter, Math.min(this.changeCheckMs, leftMs))) return true;
      const counter = await this.readCounter();
      if (counter !== this.counter) return true;
    }
    return true;
  }

  /** The store's change counter, or undefined (none, or unreadable now: the poll covers it). */
  private async readCounter(): Promise<number | undefined> {
    const { queue } = this.options;
    if (typeof queue.changeCounter !== 'function') return undefined;
    try {
      return await queue.changeCounter();
    } catch (error) {
      if (error instanceof RetryableStoreError) return undefined;
      throw error;
    }
  }

  /** Claims one task and starts its run; false when the queue had nothing for us. */
  async claimOne(): Promise<boolean> {
    // W1: read before the claim, so a commit of another process made after the claim read the queue
    // moves the counter against this reading and is not missed.
    this.counter = await this.readCounter();
    // R8: a drain that began meanwhile has stopped claiming.
    if (this.stopping) return false;
    let claimed;
    try {
      const claim = this.options.queue.claim(this.options.workerId);
      this.claiming = claim;
      claimed = await claim;
    } catch (error) {
      if (!(error instanceof RetryableStoreError)) throw error;
      // W2: the idle poll's backoff is the retry's; the next claim tries again.
      this.deps.log({ workerId: this.options.workerId, message: `claim: the database refused it (${error.code}); trying again after the idle wait` });
      return false;
    } finally {
      this.claiming = undefined;
    }
    if (!claimed.ok) return false;
    this.start(claimed.task);
    return true;
  }

  /**
   * Starts the run of a delivered task. A delivery of a run this worker already has in flight is
   * ignored, and R7: a redelivery of a run that already finished done or cancelled is skipped.
   */
  async deliver(task: ClaimedTask): Promise<RunOutcome> {
    const key = `${task.id}:${task.generation}`;
    const inFlight = this.active.get(key);
    if (inFlight !== undefined) return inFlight.run;
    let state: string | undefined;
    try {
      state = (await this.options.queue.get(task.id))?.state;
    } catch (error) {
      // Unknown is safe: the run's first fenced write decides whether this delivery is current.
      if (!(error instanceof RetryableStoreError)) throw error;
    }
    if (state === 'done' || state === 'cancelled') {
      const skipped: RunOutcome = { kind: 'skipped', taskId: task.id, state };
      this.options.onOutcome?.(skipped);
      return skipped;
    }
    return this.start(task);
  }

  /** Runs a task this worker just claimed itself (no redelivery check needed). */
  private start(task: ClaimedTask): Promise<RunOutcome> {
    const key = `${task.id}:${task.generation}`;
    const run = runClaimedTask(this.deps, task)
      .catch((error: unknown): RunOutcome => {
        // A run must never take the worker down with it: the error is logged, the run ends with no
        // terminal write, and its lease lapses as if the process had died.
        const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        this.deps.log({ workerId: this.options.workerId, taskId: task.id, generation: task.generation, message: `run crashed: ${message}` });
        return { kind: 'crashed', taskId: task.id, generation: task.generation, error: message };
      })
      .then((outcome) => {
        this.active.delete(key);
        // W1: the slot is free now; the claim loop claims again at once.
        this.wakeup.wake();
        this.options.onOutcome?.(outcome);
        return outcome;
      });
    this.active.set(key, { task, run });
    return run;
  }

  stop(): void {
    this.stopping = true;
    this.wakeup.wake();
  }

  /**
   * R8: graceful shutdown. Stop claiming, let runs finish for up to drainMs (set it longer than the
   * run timeout), then hand each unfinished run back as `interrupted`; the handed-back runs stop at
   * their next fenced write and resume elsewhere from their last checkpoint. Returns how many were
   * interrupted.
   */
  async drain(drainMs: number): Promise<number> {
    this.stop();
    const deadline = this.options.clock.now() + drainMs;
    // A claim already sent may still commit: its run is one of ours to finish or hand back, not one to
    // leave to a lapsing lease (without this wait an idle worker's drain returned at once, and the task
    // its claim then took went uncertain when the process exited). The claim's own continuation, which
    // starts the run, was registered first, so the run is in `active` once this wait is over. A failed
    // claim is the claim loop's to report.
    await this.claiming?.catch(() => undefined);
    while (this.active.size > 0 && this.options.clock.now() < deadline) {
      await this.options.waiter.sleep(Math.max(1, Math.min(this.idleWaitMs, deadline - this.options.clock.now())));
    }
    // W2: a run still retrying store trouble past the drain gives up now (outcome `abandoned`).
    this.abandoning = true;
    let interrupted = 0;
    // The runs it has now, not the live map: a run that gives up (abandoned) while an earlier hand-back
    // waits leaves `active`, and its lease would lapse un-handed-back.
    for (const { task } of [...this.active.values()]) {
      try {
        if ((await this.options.queue.interrupt(task.id, this.options.workerId, task.generation, 'shutdown')).ok) interrupted++;
      } catch (error) {
        // The lease will lapse and the task will be taken over; nothing is lost by skipping it.
        if (!(error instanceof RetryableStoreError)) throw error;
      }
    }
    return interrupted;
  }
}

function positive(field: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`worker option ${field} must be a positive integer, got ${value}`);
  return value;
}
