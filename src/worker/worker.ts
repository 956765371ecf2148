import type { Clock, Waiter } from '../ports.ts';
import { RetryableStoreError } from '../queue/errors.ts';
import type { ClaimedTask, WorkQueue } from '../queue/types.ts';
import { runClaimedTask, type RunDependencies } from './run.ts';
import { CallPool } from './tool-graph.ts';
import type { Model, RunOutcome, Tool, WorkerLogLine } from './types.ts';

export interface WorkerOptions {
  queue: WorkQueue;
  workerId: string;
  model: Model;
  tools: readonly Tool[];
  waiter: Waiter;
  clock: Clock;
  /** Runs held at once by this worker. */
  slots?: number;
  /** Defaults to the queue's heartbeatMs (Q9). */
  heartbeatMs?: number;
  maxSteps?: number;
  toolTimeoutMs?: number;
  /** Wait between claims when the queue had nothing for us; doubles while idle, up to maxIdleWaitMs. */
  idleWaitMs?: number;
  maxIdleWaitMs?: number;
  busyRetries?: number;
  busyWaitMs?: number;
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
  private stopping = false;

  constructor(private readonly options: WorkerOptions) {
    const config = options.queue.config;
    this.slots = positive('slots', options.slots ?? 1);
    this.idleWaitMs = positive('idleWaitMs', options.idleWaitMs ?? 1_000);
    this.maxIdleWaitMs = Math.max(this.idleWaitMs, positive('maxIdleWaitMs', options.maxIdleWaitMs ?? 8 * this.idleWaitMs));
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
      busyRetries: options.busyRetries ?? 3,
      busyWaitMs: positive('busyWaitMs', options.busyWaitMs ?? 50),
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

  /** Claims and runs tasks until stop(). Resolves when claiming has stopped (runs may continue). */
  async runLoop(): Promise<void> {
    // An idle queue is polled less and less often, so a fleet of idle workers costs little.
    let idleWaitMs = this.idleWaitMs;
    while (!this.stopping) {
      if (this.active.size < this.slots && (await this.claimOne())) {
        idleWaitMs = this.idleWaitMs;
        continue;
      }
      await this.options.waiter.sleep(idleWaitMs);
      if (this.active.size === 0) idleWaitMs = Math.min(this.maxIdleWaitMs, idleWaitMs * 2);
    }
  }

  /** Claims one task and starts its run; false when the queue had nothing for us. */
  async claimOne(): Promise<boolean> {
    let claimed;
    try {
      claimed = await this.options.queue.claim(this.options.workerId);
    } catch (error) {
      if (error instanceof RetryableStoreError) return false;
      throw error;
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
      this.options.onOutcome?.(outcome);
      return outcome;
    });
    this.active.set(key, { task, run });
    return run;
  }

  stop(): void {
    this.stopping = true;
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
    while (this.active.size > 0 && this.options.clock.now() < deadline) {
      await this.options.waiter.sleep(Math.max(1, Math.min(this.idleWaitMs, deadline - this.options.clock.now())));
    }
    let interrupted = 0;
    for (const { task } of this.active.values()) {
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
