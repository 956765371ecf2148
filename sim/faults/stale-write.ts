import { RetryableStoreError } from '../../src/queue/errors.ts';
import type { ClaimedTask } from '../../src/queue/types.ts';
import { gatedQueue, recordedCall, type ActorQueue } from '../actors/gated-queue.ts';
import { Incarnation } from '../actors/incarnation.ts';
import type { EventLoop } from '../event-loop.ts';
import type { History } from '../history.ts';
import type { SeededRandom } from '../random.ts';
import { ratePart, type FaultRun, type RateInjector } from './injector.ts';
import type { FaultRates } from './plan.ts';

/** A holder's writes, and the supervisor's confirmations, delivered late: the StaleWriter below. */
export const staleWriteFault = ratePart('stale-write', "Per claim: the holder's writes are sent again once its lease has moved on; per confirmation: it is delivered again late.");
export interface StaleWriteRate {
  /** Per claim: the holder's writes are sent again once its lease has moved on (StaleWriter). */
  staleWriteProbability: number;
}

export const staleWrite: RateInjector<'staleWriteProbability'> = {
  kind: 'stale-write',
  field: 'staleWriteProbability',
  swarm: (random) => random.float(0.05, 0.5),
};

/** Where the run's events reach the stale writer, each with the plan's rate right now. */
export const staleWriteHooks = {
  claimed: ({ staleWrites }: FaultRun, rates: FaultRates, task: ClaimedTask, workerId: string) => staleWrites.noteClaim(task.id, workerId, task.generation, rates.staleWriteProbability ?? 0),
  uncertain: ({ staleWrites }: FaultRun, rates: FaultRates, taskId: number, generation: number) => staleWrites.noteUncertain(taskId, generation, rates.staleWriteProbability ?? 0),
  confirmed: ({ staleWrites }: FaultRun, rates: FaultRates, taskId: number, generation: number) => staleWrites.noteConfirm(taskId, generation, rates.staleWriteProbability ?? 0),
};

/** How many times a replay waits for its credentials to go stale before it gives up. */
const WAITS_MAX = 20;

/**
 * Stale writes (S4's lost and duplicated messages, aimed at the fence): a holder's writes that arrive
 * after the lease moved on, as a worker talking to the scheduler over a network sees them when a
 * request it gave up on is delivered late, or a replaced process flushes a buffer. For a sampled claim
 * the writer waits until its (worker, generation) is no longer the live holder (the lease ran out, the
 * task was taken over, or the run ended), then sends every holder write under those credentials:
 * heartbeat, checkpoint, appendEvent, recordEffect, complete and fail. Each must be refused and leave
 * no trace (Q8, I2); the history records them under the old worker id, as the queue sees them.
 *
 * The same fault replays some of the supervisor's confirmations late (noteConfirm).
 *
 * This is the fault that reaches the code paths a zombie never does: a runtime that checks its lease
 * before each write stops at its first refusal, so without it a completion keyed by task id alone, or
 * a heartbeat that renews whoever holds the lease, would never be exercised by a stale caller.
 */
export class StaleWriter {
  /** The newest confirmed generation per task whose late duplicate has not been delivered yet. */
  private readonly confirmations = new Map<number, number>();

  constructor(
    private readonly loop: EventLoop,
    private readonly history: History,
    /** Its own queue on its own connection (sim/store/fleet.ts). */
    private readonly own: ActorQueue,
    /** False while the scheduler is down: the replay waits and tries again. */
    private readonly up: () => boolean,
    private readonly random: SeededRandom,
    private readonly leaseMs: number,
  ) {}

  /** Called on every successful claim; `probability` is the plan's staleWriteProbability right now. */
  noteClaim(taskId: number, workerId: string, generation: number, probability: number): void {
    if (probability <= 0 || !this.random.chance(probability)) return;
    this.loop.after(this.leaseMs + this.random.int(0, this.leaseMs), () => this.attempt(taskId, workerId, generation, 1));
  }

  /**
   * Called on every confirmation the supervisor made: with `probability` the same confirmStopped is
   * delivered again later (the execution layer retried a call whose answer it lost). By then the task
   * may be running, or uncertain, under a newer generation: the late confirmation must be refused
   * (Q11), or it would free a slot whose worker may be alive or paused (I12).
   */
  noteConfirm(taskId: number, generation: number, probability: number): void {
    this.confirmations.set(taskId, generation);
    if (probability <= 0 || !this.random.chance(probability)) return;
    this.loop.after(this.leaseMs + this.random.int(0, 2 * this.leaseMs), () => this.replayConfirm(taskId, generation, 1));
  }

  /**
   * Called for each uncertain task the supervisor looks at. When an older generation of the task was
   * confirmed stopped before, the late duplicate of that confirmation is delivered now, with
   * `probability` (once per older confirmation): the moment it can do the most harm.
   */
  async noteUncertain(taskId: number, generation: number, probability: number): Promise<void> {
    const older = this.confirmations.get(taskId);
    if (older === undefined || older >= generation || probability <= 0) return;
    this.confirmations.delete(taskId);
    if (this.random.chance(probability)) await this.replayConfirm(taskId, older, WAITS_MAX);
  }

  private async replayConfirm(taskId: number, generation: number, wait: number): Promise<void> {
    if (!this.up()) {
      if (wait < WAITS_MAX) this.loop.after(this.leaseMs, () => this.replayConfirm(taskId, generation, wait + 1));
      return;
    }
    const { queue, connection } = this.own;
    const invoke = this.history.invoke('supervisor', 'confirmStopped', { taskId, generation, data: { replayed: true } });
    let answer: Awaited<ReturnType<typeof recordedCall<Awaited<ReturnType<typeof queue.confirmStopped>>>>>;
    try {
      answer = await recordedCall(connection, invoke, () => queue.confirmStopped(taskId, generation, 'supervisor'));
    } catch (error) {
      // A competing writer kept the database busy past the store's retries (faults/busy.ts, Q18): the
      // late duplicate failed like any call would, and is delivered again later, as the supervisor's is.
      if (!(error instanceof RetryableStoreError)) throw error;
      this.history.fail(invoke, error.code);
      if (wait < WAITS_MAX) this.loop.after(this.leaseMs, () => this.replayConfirm(taskId, generation, wait + 1));
      return;
    }
    const { result, ev } = answer;
    if (result.ok) this.history.ok(invoke, { data: { outcome: result.next, ev } });
    else this.history.fail(invoke, result.error, { data: { ev } });
  }

  private async attempt(taskId: number, workerId: string, generation: number, wait: number): Promise<void> {
    if (!this.up() || (await this.stillHolds(taskId, workerId, generation))) {
      if (wait < WAITS_MAX) this.loop.after(this.leaseMs, () => this.attempt(taskId, workerId, generation, wait + 1));
      return;
    }
    await this.replay(taskId, workerId, generation);
  }

  /** The harness's own look at the database, outside the history: only to time the replay. */
  private async stillHolds(taskId: number, workerId: string, generation: number): Promise<boolean> {
    let task: Awaited<ReturnType<typeof this.own.queue.get>>;
    try {
      task = await this.own.queue.get(taskId);
    } catch (error) {
      // The look waited at its BEGIN (sim/store/fleet.ts) and met a scheduler that had gone down: look again later.
      if (error instanceof RetryableStoreError) return true;
      throw error;
    }
    return task !== undefined && task.state === 'running' && task.generation === generation && task.workerId === workerId && (task.leaseUntil ?? 0) > this.loop.clock.now();
  }

  private async replay(taskId: number, workerId: string, generation: number): Promise<void> {
    this.history.note('stale-write', 'faults', { taskId, workerId, generation });
    // Recorded like any worker's calls, under the worker id the queue knew: `ev` cursors and all.
    const sender = new Incarnation(workerId, -1);
    const queue = gatedQueue(this.own, sender, this.history, { after: () => {} });
    let last: Awaited<ReturnType<typeof this.own.queue.lastCheckpoint>>;
    try {
      last = await this.own.queue.lastCheckpoint(taskId);
    } catch (error) {
      // The read waited at its BEGIN (sim/store/fleet.ts) and met a scheduler gone down: no checkpoint to
      // resend; the writes below meet it too, and are recorded failed like any call to a closed database.
      if (!(error instanceof RetryableStoreError)) throw error;
      last = undefined;
    }
    const writes: (() => Promise<unknown>)[] = [
      () => queue.heartbeat(taskId, workerId, generation),
      () => queue.appendEvent(taskId, workerId, generation, 'tool_result', { toolCallId: 'stale-replay', ok: true }),
      () => queue.recordEffect(taskId, workerId, generation, { requestKey: `${taskId}:stale-replay`, action: 'stale-replay', result: { replayed: true } }),
      () => queue.complete(taskId, workerId, generation, { answer: { status: 'stale-replay' }, steps: 0, usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0 } }),
      () => queue.fail(taskId, workerId, generation, { errorClass: 'transient_network', message: 'stale replay' }),
    ];
    if (last !== undefined) {
      const { kind, step, state, usage, requeueSafe } = last;
      writes.unshift(() => queue.checkpoint(taskId, workerId, generation, requeueSafe === undefined ? { kind, step, state, usage } : { kind, step, state, usage, requeueSafe }));
    }
    for (const write of writes) {
      try {
        await write();
      } catch {
        // A refusal by exception (busy, a bad argument) is in the history already; the next write goes on.
      }
    }
  }
}
