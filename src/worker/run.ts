import type { Clock, Random, Waiter } from '../ports.ts';
import { RetryableStoreError } from '../queue/errors.ts';
import type { ClaimedTask, WorkQueue } from '../queue/types.ts';
import { requestKey } from './fingerprint.ts';
import { LeaseKeeper } from './lease-keeper.ts';
import { resumeState } from './resume.ts';
import { cancellableSleep } from './sleep.ts';
import { StopRun } from './stop-run.ts';
import { CallPool, isGraph, laneOf, planProblem, runGraph } from './tool-graph.ts';
import {
  ToolFailure,
  type Model,
  type RunOutcome,
  type RunState,
  type Tool,
  type ToolCall,
  type ToolContext,
  type ToolResult,
  type WorkerLogLine,
} from './types.ts';

export interface RunDependencies {
  queue: WorkQueue;
  waiter: Waiter;
  clock: Clock;
  workerId: string;
  model: Model;
  tools: ReadonlyMap<string, Tool>;
  heartbeatMs: number;
  maxSteps: number;
  toolTimeoutMs: number;
  /**
   * W2: a call the store refused is retried for as long as the trouble lasts, busyWaitMs after the first
   * refusal, doubling up to busyWaitMaxMs, each wait jittered by `random`.
   */
  busyWaitMs: number;
  busyWaitMaxMs?: number;
  random?: Random;
  /** True once the worker gave up on its runs (a drain past its time): a run retrying store trouble then stops, `abandoned`. */
  abandoning?: () => boolean;
  /**
   * A7: the bound on graph calls in flight, shared by the runs of one worker (Worker makes one). Absent:
   * each run gets its own, of toolConcurrency places (default 4).
   */
  toolPool?: CallPool;
  toolConcurrency?: number;
  log(line: WorkerLogLine): void;
}

/**
 * Runs one claimed task to its end: steps of one model call then its tool calls, a checkpoint after
 * each (R1), a heartbeat alongside (Q9). It stops at once, with no terminal write, when any fenced
 * write says the lease is gone (R9); it honours cancel at step boundaries (Q13) and the deadline
 * before each tool call (Q14). It never holds a transaction across an await: every queue call is a
 * short transaction of its own, and the run awaits its answer before it acts on it.
 */
export async function runClaimedTask(deps: RunDependencies, task: ClaimedTask): Promise<RunOutcome> {
  const say = (message: string) => deps.log({ workerId: deps.workerId, taskId: task.id, generation: task.generation, message });
  const lease = new LeaseKeeper(
    deps.queue,
    deps.waiter,
    deps.workerId,
    task,
    deps.heartbeatMs,
    (during) => say(`lease lost during ${during}: stopping the run with no further writes`),
    (error) => say(`heartbeat failed: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}; this run sends no more heartbeats`),
  );
  lease.start();
  const run = new Run(deps, task, lease);
  try {
    return await run.drive();
  } catch (error) {
    if (error instanceof StopRun && error.reason === 'lost_lease') return { kind: 'lost_lease', taskId: task.id, generation: task.generation, during: error.during };
    if (error instanceof BudgetExhausted) return { kind: 'budget_exhausted', taskId: task.id, budget: error.budget };
    if (error instanceof StopRun) return await run.commitAfterDeadline();
    if (error instanceof ToolFailure) return await run.failWith(error);
    // Store trouble that outlasted the run's retries (busy, a full disk, an I/O error; nothing of the write
    // was committed) is reported as db_busy, the one retryable error class for the database (Q16).
    if (error instanceof RetryableStoreError) return await run.failWith(new ToolFailure('db_busy', error.message));
    throw error;
  } finally {
    lease.stop();
  }
}

/** A1, A4: the queue ended the run because a total budget could not grant its next model call. */
class BudgetExhausted extends Error {
  constructor(readonly budget: string) {
    super(`budget ${budget} exhausted`);
  }
}

class Run {
  private state!: RunState;
  /** Model calls made in this attempt: the claim's reservation covers the first, reserve() each further one (A1). */
  private modelCalls = 0;
  /** A7: this run's own bound on graph calls, when the worker shares none. */
  private ownPool: CallPool | undefined;

  constructor(
    private readonly deps: RunDependencies,
    private readonly task: ClaimedTask,
    private readonly lease: LeaseKeeper,
  ) {}

  async drive(): Promise<RunOutcome> {
    const { ok: _resumed, ...state } = await this.fenced('resume', () => resumeState(this.deps.queue, this.deps.workerId, this.task));
    this.state = state;
    // R2: a run resumed from checkpoint A re-runs that step's calls; its recorded writes settle first.
    let resumedStep = state.pending !== undefined;
    for (;;) {
      this.assertLease('step boundary');
      if (this.state.pending === undefined) {
        if (this.lease.cancelRequested) {
          await this.fenced('cancel', () => this.deps.queue.acknowledgeCancel(this.task.id, this.deps.workerId, this.task.generation));
          return { kind: 'cancelled', taskId: this.task.id };
        }
        await this.decide();
      }
      const decision = this.state.messages[this.state.messages.length - 1];
      if (decision?.role === 'model' && decision.final !== undefined) return this.complete(decision.final);
      await this.runTools(this.state.pending?.toolCalls ?? [], resumedStep);
      resumedStep = false;
    }
  }

  /** One model call, then checkpoint A with its decision and usage. */
  private async decide(): Promise<void> {
    const { deps, task, state } = this;
    if (state.step >= deps.maxSteps) throw new ToolFailure('business_error', `no final answer within ${deps.maxSteps} steps`);
    if (this.modelCalls > 0 && task.needs !== undefined) await this.reserveForModelCall();
    this.modelCalls += 1;
    const decision = await deps.model.decide({ taskId: task.id, tenant: task.tenant, input: task.input, step: state.step, messages: state.messages });
    this.assertLease('model call');
    state.usage = {
      inputTokens: state.usage.inputTokens + decision.usage.inputTokens,
      outputTokens: state.usage.outputTokens + decision.usage.outputTokens,
      modelCalls: state.usage.modelCalls + 1,
    };
    const message = { role: 'model' as const, step: state.step, toolCalls: decision.toolCalls, ...(decision.final !== undefined ? { final: decision.final } : {}) };
    state.messages.push(message);
    state.pending = { toolCalls: decision.toolCalls };
    await this.checkpoint('A');
  }

  /**
   * A1: a further model call reserves its metered budgets again (the task's needs are the estimate of
   * one call), fenced. A rate bucket that cannot grant yet fails the attempt rate_limited, so it backs
   * off and retries, spending the same budgets (A4); a total that cannot grant has ended the run.
   */
  private async reserveForModelCall(): Promise<void> {
    const { deps, task } = this;
    const reserved = await this.retryBusy('reserve', () => this.lease.write('reserve', () => deps.queue.reserve(task.id, deps.workerId, task.generation)));
    if (reserved.ok) return;
    if (reserved.error === 'stale_lease') throw new StopRun('lost_lease', 'reserve');
    if (reserved.error === 'budget' && deps.queue.config.budgets[reserved.budget]?.kind === 'total') throw new BudgetExhausted(reserved.budget);
    throw new ToolFailure('rate_limited', reserved.message);
  }

  /**
   * R2: read-only calls run concurrently and may run again; write calls run in order, keyed (R3). A7: a
   * decision whose calls name dependencies or resources runs as a graph (tool-graph.ts), validated first.
   */
  private async runTools(calls: readonly ToolCall[], resumed: boolean): Promise<void> {
    const { state } = this;
    const tools = calls.map((call) => this.toolFor(call));
    const results = new Map<string, ToolResult>();
    if (isGraph(calls)) {
      const problem = planProblem(calls);
      if (problem !== undefined) throw new ToolFailure('invalid_plan', problem);
      const graph = await runGraph(calls, {
        pool: this.deps.toolPool ?? (this.ownPool ??= new CallPool(this.deps.toolConcurrency ?? 4)),
        readOnly: (call) => this.toolFor(call).readOnly,
        run: (call) => this.callTool(call, true),
        stopping: () => (this.lease.cancelRequested ? 'cancel_requested' : undefined),
        recorded: resumed ? await this.recordedWrites(calls) : new Set(),
      });
      for (const result of graph) results.set(result.toolCallId, result);
    } else {
      const readOnly = calls.filter((_, index) => tools[index]!.readOnly);
      const writes = calls.filter((_, index) => !tools[index]!.readOnly);
      for (const result of await Promise.all(readOnly.map((call) => this.callTool(call)))) results.set(result.toolCallId, result);
      for (const call of writes) results.set(call.id, await this.callTool(call));
    }
    state.messages.push({ role: 'tool', step: state.step, results: calls.map((call) => results.get(call.id)!) });
    state.pending = undefined;
    state.step += 1;
    await this.checkpoint('B');
  }

  /** R2, R3: the writes of a resumed graph step whose results the effect ledger already holds. */
  private async recordedWrites(calls: readonly ToolCall[]): Promise<Set<string>> {
    const recorded = new Set<string>();
    for (const call of calls) {
      if (this.toolFor(call).readOnly) continue;
      const key = requestKey(this.task.id, call.tool, call.args);
      if ((await this.retryBusy('effect lookup', () => this.deps.queue.effectResult(key))) !== undefined) recorded.add(call.id);
    }
    return recorded;
  }

  private async callTool(call: ToolCall, inGraph = false): Promise<ToolResult> {
    const { deps, task } = this;
    const tool = this.toolFor(call);
    this.assertLease(`before tool ${call.tool}`);
    this.assertBeforeDeadline(`before tool ${call.tool}`);
    const context = {
      taskId: task.id,
      runId: task.id,
      tenant: task.tenant,
      generation: task.generation,
      toolCallId: call.id,
      requestKey: requestKey(task.id, call.tool, call.args),
      ...(inGraph ? { graph: { dependsOn: call.dependsOn ?? [], ...(tool.readOnly ? {} : { lane: laneOf(call) }) } } : {}),
    };
    const result = tool.readOnly ? await this.withTimeout(tool.call(call.args, context), call.tool) : await this.callWriteTool(tool, call, context);
    this.assertLease(`after tool ${call.tool}`);
    await this.fenced('tool event', () =>
      deps.queue.appendEvent(task.id, deps.workerId, task.generation, 'tool_result', {
        toolCallId: call.id,
        tool: call.tool,
        step: this.state.step,
        readOnly: tool.readOnly,
      }),
    );
    return { toolCallId: call.id, tool: call.tool, result };
  }

  /**
   * R3: a write goes through the effect ledger. A recorded result is returned without acting again (a
   * takeover re-running checkpoint A's calls); otherwise the lease is checked right before the effect,
   * the tool acts with the run's request key, and the result is recorded, fenced. If the worker dies
   * between the effect and the record, the next holder calls again with the same key and the external
   * system, which honours the key, returns its first result.
   */
  private async callWriteTool(tool: Tool, call: ToolCall, context: ToolContext): Promise<unknown> {
    const { deps, task } = this;
    const recorded = await this.retryBusy(`effect lookup ${call.tool}`, () => deps.queue.effectResult(context.requestKey));
    if (recorded !== undefined) return recorded;
    await this.fenced(`before effect ${call.tool}`, () => deps.queue.heartbeat(task.id, deps.workerId, task.generation));
    // Q14 again, after the awaits above: the deadline may have passed while the ledger and the lease were asked.
    this.assertBeforeDeadline(`before effect ${call.tool}`);
    const result = await this.withTimeout(tool.call(call.args, context), call.tool);
    this.assertLease(`after effect ${call.tool}`);
    const first = await this.fenced(`record effect ${call.tool}`, () =>
      deps.queue.recordEffect(task.id, deps.workerId, task.generation, { requestKey: context.requestKey, action: call.tool, result }),
    );
    return first.result;
  }

  /** Q14: past the task's deadline no tool is called; the run stops and the queue ends the task expired. */
  private assertBeforeDeadline(where: string): void {
    const deadline = this.task.deadline;
    if (deadline !== undefined && this.deps.clock.now() >= deadline) throw new StopRun('deadline', where);
  }

  private async withTimeout<T>(work: Promise<T>, name: string): Promise<T> {
    let timedOut = false;
    // A call that answers in time lets go of its timeout's sleep: no timer of a finished call outlives it.
    const sleep = cancellableSleep(this.deps.waiter, this.deps.toolTimeoutMs);
    const timeout = sleep.slept.then(() => {
      timedOut = sleep.ranOut;
    });
    const winner = await Promise.race([work.then((value) => ({ value })), timeout.then(() => undefined)]).finally(() => sleep.cancel());
    if (winner === undefined || timedOut) throw new ToolFailure('tool_timeout', `${name} gave no answer within ${this.deps.toolTimeoutMs} ms`);
    return winner.value;
  }

  private async complete(answer: unknown): Promise<RunOutcome> {
    const { deps, task, state } = this;
    const result = { answer, steps: state.step + 1, usage: state.usage };
    const done = await this.fencedOrExpired('complete', () => deps.queue.complete(task.id, deps.workerId, task.generation, result));
    return done === 'expired' ? { kind: 'expired', taskId: task.id } : { kind: 'completed', taskId: task.id, outcome: done.outcome };
  }

  /** Q14: past the deadline nothing more is called; the commit lets the queue end the task expired. */
  async commitAfterDeadline(): Promise<RunOutcome> {
    try {
      // R9: a run told it lost the lease (say by a heartbeat while it waited) makes no terminal write.
      this.assertLease('commit after deadline');
      return await this.complete(null);
    } catch (error) {
      return this.stoppedBy(error);
    }
  }

  /** The last write of a run could not be made: the run stops here and its lease decides what follows. */
  private stoppedBy(error: unknown): RunOutcome {
    const { task } = this;
    if (error instanceof StopRun) return { kind: 'lost_lease', taskId: task.id, generation: task.generation, during: error.during };
    if (error instanceof RetryableStoreError) {
      this.deps.log({ workerId: this.deps.workerId, taskId: task.id, generation: task.generation, message: `database refused the write (${error.code}): abandoning the run` });
      return { kind: 'abandoned', taskId: task.id, generation: task.generation, reason: error.message };
    }
    throw error;
  }

  async failWith(failure: ToolFailure): Promise<RunOutcome> {
    const { deps, task } = this;
    try {
      // R9: a tool error that arrives after the lease was lost (a zombie's held results are delivered
      // in order when it wakes, after the heartbeat that was refused) is not reported: no terminal write.
      this.assertLease('fail');
      const failed = await this.fenced('fail', () =>
        deps.queue.fail(task.id, deps.workerId, task.generation, { errorClass: failure.errorClass, message: failure.message }),
      );
      if (failed.next === 'cancelled') return { kind: 'cancelled', taskId: task.id };
      return { kind: failed.next === 'retry' ? 'retry' : 'failed', taskId: task.id, errorClass: failure.errorClass };
    } catch (error) {
      return this.stoppedBy(error);
    }
  }

  private async checkpoint(kind: 'A' | 'B'): Promise<void> {
    const { deps, task, state } = this;
    await this.fenced(`checkpoint ${kind}`, () =>
      deps.queue.checkpoint(task.id, deps.workerId, task.generation, {
        kind,
        step: state.step,
        state,
        usage: state.usage,
        // R5: every pending call is read-only or ledgered, so a resumed run repeats no effect.
        requeueSafe: (state.pending?.toolCalls ?? []).every((call) => deps.tools.has(call.tool)),
      }),
    );
  }

  private toolFor(call: ToolCall): Tool {
    const tool = this.deps.tools.get(call.tool);
    if (tool === undefined) throw new ToolFailure('invalid_tool_schema', `the model called unknown tool ${call.tool}`);
    return tool;
  }

  private assertLease(during: string): void {
    if (this.lease.lost) throw new StopRun('lost_lease', during);
  }

  /**
   * A fenced write: stale_lease stops the run (R9); a busy database, a full disk or an I/O error (a
   * RetryableStoreError: nothing was written) is retried a bounded number of times.
   * The write goes through the lease's one lane (LeaseKeeper.write), so a refusal is seen before the
   * run or its heartbeat can send another write.
   */
  private async fenced<T>(during: string, write: () => Promise<T>): Promise<Exclude<T, { ok: false }>> {
    const result = (await this.retryBusy(during, () => this.lease.write(during, write))) as T & { ok?: boolean; error?: string };
    if (result !== null && typeof result === 'object' && result.ok === false) {
      if (result.error === 'stale_lease') throw new StopRun('lost_lease', during);
      throw new Error(`${during} refused: ${JSON.stringify(result)}`);
    }
    return result as Exclude<T, { ok: false }>;
  }

  private async fencedOrExpired<T extends { ok: boolean; error?: string }>(during: string, write: () => Promise<T>) {
    const result = await this.retryBusy(during, () => this.lease.write(during, write));
    if (!result.ok && result.error === 'expired') return 'expired' as const;
    return this.fenced(during, async () => result);
  }

  /**
   * W2: a busy, unreachable, restarting or full database (a RetryableStoreError: nothing was written) is
   * retried for as long as it lasts, with capped exponential backoff and jitter. Waiting is safe: each
   * attempt is its own short transaction, and the fence decides whether the lease survived the wait
   * (R9), so the run ends only by its own outcome or by losing its lease, never by the outage itself.
   * The one exception is a worker that gave up on its runs (a drain past its time): then `abandoned`.
   */
  private async retryBusy<T>(during: string, call: () => Promise<T>): Promise<T> {
    const { deps } = this;
    let waitMs = deps.busyWaitMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (error) {
        if (!(error instanceof RetryableStoreError) || deps.abandoning?.() === true) throw error;
        // Jitter spreads the retries of a fleet that met the same outage; the random stream is injected (S1).
        const delayMs = Math.max(1, Math.ceil(waitMs * (0.5 + (deps.random?.next() ?? 0.5) / 2)));
        deps.log({ workerId: deps.workerId, taskId: this.task.id, generation: this.task.generation, message: `${during}: the database refused the call (${error.code}), attempt ${attempt}; retrying in ${delayMs} ms` });
        await deps.waiter.sleep(delayMs);
        waitMs = Math.min(deps.busyWaitMaxMs ?? deps.busyWaitMs, waitMs * 2);
        this.assertLease(during);
      }
    }
  }
}
