import { afterEach, describe, expect, it } from 'vitest';
import { BusyError } from '../queue/errors.ts';
import { ManualClock } from '../queue/__test-helpers__/test-kit.ts';
import type { ClaimedTask, WorkQueue } from '../queue/types.ts';
import { openWorkQueue } from '../work-queue.ts';
import { runOneTask } from './__test-helpers__/one-run.ts';
import { runClaimedTask, type RunDependencies } from './run.ts';
import { ToolFailure, type Model, type Tool, type ToolCall, type WorkerLogLine } from './types.ts';

const opened: WorkQueue[] = [];
afterEach(async () => {
  for (const queue of opened.splice(0)) await queue.close();
});

const STALE = { ok: false, error: 'stale_lease', message: 'the lease is not held' } as const;

/** A promise and the functions that settle it, so the test decides what happens when. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return { promise, resolve, reject };
}

const flush = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

/**
 * One run of task 7 (generation 1) against a scripted queue that records every write it is asked for.
 * Checkpoints succeed; every other write is refused stale_lease, as for a worker whose lease moved on.
 * The first sleep is the heartbeat's and ends when the test releases `heartbeatTimer`; the others (tool
 * timeouts) never end. `onComplete` runs inside the completion's write, in its tick, and may release the timer.
 */
function scriptedRun(options: { model: RunDependencies['model']; tools?: Tool[]; onComplete?: (heartbeatTimer: { resolve: () => void }) => void }) {
  const writes: string[] = [];
  const heartbeatTimer = deferred<void>();
  let sleeps = 0;
  // Every method answers through a promise, as the work queue's do (SPEC P2).
  const refused = (name: string, then?: () => void) => async () => {
    writes.push(name);
    then?.();
    return STALE;
  };
  const onComplete = options.onComplete;
  const queue = {
    heartbeat: refused('heartbeat'),
    appendEvent: refused('appendEvent'),
    fail: refused('fail'),
    complete: refused('complete', onComplete === undefined ? undefined : () => onComplete(heartbeatTimer)),
    checkpoint: async () => {
      writes.push('checkpoint');
      return { ok: true, seq: writes.length, eventSeq: writes.length };
    },
  } as unknown as WorkQueue;
  const deps: RunDependencies = {
    queue,
    waiter: { sleep: () => (sleeps++ === 0 ? heartbeatTimer.promise : new Promise(() => {})) },
    clock: { now: () => 1_000 },
    workerId: 'w0#1',
    model: options.model,
    tools: new Map((options.tools ?? []).map((tool) => [tool.name, tool])),
    heartbeatMs: 10_000,
    maxSteps: 4,
    toolTimeoutMs: 20_000,
    busyWaitMs: 100,
    log: () => {},
  };
  const task: ClaimedTask = { id: 7, tenant: 'acme', topic: 't', version: 1, priority: 10, input: {}, generation: 1, attempt: 1, leaseUntil: 31_000, tier: 'standard', cancelRequested: false };
  return { writes, heartbeatTimer, outcome: runClaimedTask(deps, task) };
}

/**
 * A run frozen inside a read-only tool call, as a paused worker is. When it wakes, its held results
 * arrive in order: first the heartbeat's timer (refused: the lease moved on), then the tool's answer.
 */
function zombieInsideTool(errorAfterWake: 'tool_error' | 'none') {
  const toolAnswer = deferred<unknown>();
  const lookup: Tool = { name: 'lookup_order', readOnly: true, call: () => toolAnswer.promise };
  const run = scriptedRun({
    model: { decide: async () => ({ toolCalls: [{ id: 'c1', tool: 'lookup_order', args: {} }], usage: { inputTokens: 10, outputTokens: 5 } }) },
    tools: [lookup],
  });
  return {
    writes: run.writes,
    outcome: run.outcome,
    async wake() {
      await flush();
      run.heartbeatTimer.resolve();
      await flush();
      if (errorAfterWake === 'tool_error') toolAnswer.reject(new ToolFailure('rate_limited', 'lookup_order: 429'));
      else toolAnswer.resolve({ ok: true });
    },
  };
}

/** A run whose final answer is refused stale_lease, while its heartbeat timer fires in that same tick. */
function refusedCompletion() {
  return scriptedRun({
    model: { decide: async () => ({ toolCalls: [], final: { status: 'resolved' }, usage: { inputTokens: 10, outputTokens: 5 } }) },
    onComplete: (heartbeatTimer) => heartbeatTimer.resolve(),
  });
}

describe('R9: a run that lost its lease stops at once', () => {
  it('marks the lease lost in the tick its completion is refused: the heartbeat due then is not sent', async () => {
    const run = refusedCompletion();
    expect(await run.outcome).toMatchObject({ kind: 'lost_lease', taskId: 7, generation: 1 });
    await flush();
    expect(run.writes).toEqual(['checkpoint', 'complete']);
  });

  it('does not report a tool error that arrives after a refused heartbeat: no terminal write', async () => {
    const run = zombieInsideTool('tool_error');
    await run.wake();
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ kind: 'lost_lease', taskId: 7, generation: 1 });
    // Checkpoint A before the tool call, then the refused heartbeat; no `fail` after it.
    expect(run.writes).toEqual(['checkpoint', 'heartbeat']);
  });

  it('does not record a tool result that arrives after a refused heartbeat', async () => {
    const run = zombieInsideTool('none');
    await run.wake();
    expect(await run.outcome).toMatchObject({ kind: 'lost_lease', taskId: 7, generation: 1 });
    expect(run.writes).toEqual(['checkpoint', 'heartbeat']);
  });
});

/** The queue as the run sees it, with the methods named in `overrides` replaced (each given the real one). */
function withOverrides(queue: WorkQueue, overrides: Partial<Record<keyof WorkQueue, (real: (...args: never[]) => Promise<unknown>, ...args: never[]) => unknown>>): WorkQueue {
  return new Proxy(queue, {
    get(target, property, receiver) {
      const override = overrides[property as keyof WorkQueue];
      if (override === undefined) return Reflect.get(target, property, receiver);
      const real = (Reflect.get(target, property, receiver) as (...args: never[]) => Promise<unknown>).bind(target);
      return (...args: never[]) => override(real, ...args);
    },
  }) as WorkQueue;
}

/**
 * One task on a fresh in-memory queue claimed by w1 and run with `deps` as given: no random and no
 * busyWaitMaxMs unless the test names them. Sleeps of a heartbeat's length never end; shorter ones
 * (store-trouble waits) are recorded and end at once.
 */
async function realRun(options: { model: Model; tools?: Tool[]; queue?: (queue: WorkQueue) => WorkQueue; deps?: Partial<RunDependencies> }) {
  const clock = new ManualClock();
  const queue = openWorkQueue({ db: ':memory:', clock });
  opened.push(queue);
  const enqueued = await queue.enqueue({ tenant: 'acme', topic: 't', version: 1, priority: 5, input: {} });
  if (!enqueued.ok) throw new Error(enqueued.message);
  const claimed = await queue.claim('w1');
  if (!claimed.ok) throw new Error('nothing to claim');
  const sleeps: number[] = [];
  const logs: WorkerLogLine[] = [];
  const deps: RunDependencies = {
    queue: options.queue?.(queue) ?? queue,
    waiter: { sleep: (ms) => (ms >= 10_000 ? new Promise(() => {}) : (sleeps.push(ms), Promise.resolve())) },
    clock,
    workerId: 'w1',
    model: options.model,
    tools: new Map((options.tools ?? []).map((tool) => [tool.name, tool])),
    heartbeatMs: 10_000,
    maxSteps: 4,
    toolTimeoutMs: 20_000,
    busyWaitMs: 100,
    log: (line) => logs.push(line),
    ...options.deps,
  };
  return { queue, taskId: enqueued.taskId, sleeps, logs, outcome: runClaimedTask(deps, claimed.task) };
}

const finalAnswer: Model = { decide: async () => ({ toolCalls: [], final: 'ok', usage: { inputTokens: 1, outputTokens: 1 } }) };

describe('a run meets a model, a store or a core that misbehaves', () => {
  it('fails the attempt, not retried, when the model calls a tool the agent does not have', async () => {
    const model: Model = { decide: async () => ({ toolCalls: [{ id: 'c1', tool: 'refund_everything', args: {} }], usage: { inputTokens: 1, outputTokens: 1 } }) };
    const { queue, taskId, outcome } = await runOneTask({ opened, model, tools: [{ name: 'lookup', readOnly: true, call: async () => 1 }] });
    expect(outcome).toEqual({ kind: 'failed', taskId, errorClass: 'invalid_tool_schema' });
    expect(await queue.get(taskId)).toMatchObject({ state: 'failed', errorMessage: 'the model called unknown tool refund_everything' });
  });

  it('W2 with no jitter source and no cap given: waits 3/4 of busyWaitMs each time, never growing past busyWaitMs', async () => {
    let refusals = 2;
    const run = await realRun({
      model: finalAnswer,
      queue: (queue) =>
        withOverrides(queue, {
          checkpoint: (real, ...args) => {
            if (refusals-- > 0) throw new BusyError('checkpoint', 3);
            return real(...args);
          },
        }),
    });
    expect(await run.outcome).toEqual({ kind: 'completed', taskId: run.taskId, outcome: 'done' });
    expect(run.sleeps).toEqual([75, 75]);
    expect(run.logs.map((line) => line.message)).toEqual([
      'checkpoint A: the database refused the call (db_busy), attempt 1; retrying in 75 ms',
      'checkpoint A: the database refused the call (db_busy), attempt 2; retrying in 75 ms',
    ]);
  });

  it('a fenced write refused for a reason other than the lease (a failure report the queue finds invalid) is not taken as done: the run rejects, saying what was refused', async () => {
    const model: Model = { decide: async () => ({ toolCalls: [{ id: 'c1', tool: 'lookup', args: {} }], usage: { inputTokens: 1, outputTokens: 1 } }) };
    const failing: Tool = {
      name: 'lookup',
      readOnly: true,
      call: async () => {
        throw new ToolFailure('business_error', 'no such order');
      },
    };
    const run = await realRun({
      model,
      tools: [failing],
      queue: (queue) => withOverrides(queue, { fail: async () => ({ ok: false, error: 'invalid_input', field: 'message', message: 'too long' }) }),
    });
    await expect(run.outcome).rejects.toThrow('fail refused: {"ok":false,"error":"invalid_input","field":"message","message":"too long"}');
    // No terminal write: the task still runs under its lease.
    expect(await run.queue.get(run.taskId)).toMatchObject({ state: 'running' });
  });

  it('a failure report that meets an error that is not store trouble is not swallowed: the run rejects with it', async () => {
    const failing: Tool = {
      name: 'lookup',
      readOnly: true,
      call: async () => {
        throw new ToolFailure('business_error', 'no such order');
      },
    };
    const model: Model = { decide: async () => ({ toolCalls: [{ id: 'c1', tool: 'lookup', args: {} }], usage: { inputTokens: 1, outputTokens: 1 } }) };
    const run = await realRun({
      model,
      tools: [failing],
      queue: (queue) =>
        withOverrides(queue, {
          fail: async () => {
            throw new TypeError('the core broke');
          },
        }),
    });
    await expect(run.outcome).rejects.toThrow(new TypeError('the core broke'));
    expect(await run.queue.get(run.taskId)).toMatchObject({ state: 'running' });
  });
});

describe('a heartbeat that meets a bug', () => {
  it.each([
    ['an Error', new TypeError('the core broke'), 'TypeError: the core broke'],
    ['something else', 'the core broke', 'the core broke'],
  ])('(%s) is logged with the run and ends its heartbeats, not the process: the run goes on and completes', async (_, thrown, described) => {
    let heartbeatFailed = false;
    let heartbeatSleeps = 0;
    const model: Model = {
      decide: async () => {
        for (let i = 0; i < 50 && !heartbeatFailed; i++) await new Promise((resolve) => setImmediate(resolve));
        await new Promise((resolve) => setImmediate(resolve));
        return { toolCalls: [], final: 'ok', usage: { inputTokens: 1, outputTokens: 1 } };
      },
    };
    const run = await realRun({
      model,
      queue: (queue) =>
        withOverrides(queue, {
          heartbeat: async () => {
            heartbeatFailed = true;
            throw thrown;
          },
        }),
      // The first heartbeat is due at once; any later one would never come due.
      deps: { waiter: { sleep: (ms) => (ms === 10_000 && heartbeatSleeps++ === 0 ? Promise.resolve() : new Promise(() => {})) } },
    });
    expect(await run.outcome).toEqual({ kind: 'completed', taskId: run.taskId, outcome: 'done' });
    expect(heartbeatSleeps).toBe(1);
    expect(run.logs).toEqual([{ workerId: 'w1', taskId: run.taskId, generation: 1, message: `heartbeat failed: ${described}; this run sends no more heartbeats` }]);
  });
});

describe('Q13 in a graph step', () => {
  it('a cancel heard by the heartbeat during a graph step starts none of its remaining calls, and the run ends cancelled at the step boundary', async () => {
    let releaseRead!: () => void;
    const readHeld = new Promise<void>((resolve) => (releaseRead = resolve));
    let beat!: () => void;
    const heartbeatDue = new Promise<void>((resolve) => (beat = resolve));
    const called: string[] = [];
    const tools: Tool[] = [
      { name: 'lookup_order', readOnly: true, call: async () => (called.push('lookup_order'), await readHeld, { order: 1 }) },
      { name: 'update_ticket', readOnly: false, call: async () => (called.push('update_ticket'), { updated: true }) },
    ];
    const calls: ToolCall[] = [
      { id: 'T1', tool: 'lookup_order', args: {} },
      { id: 'T2', tool: 'update_ticket', args: {}, dependsOn: ['T1'], resource: 'ticket:1' },
    ];
    let heartbeats = 0;
    let heartbeatAnswered = false;
    const run = await realRun({
      model: { decide: async ({ step }) => (step === 0 ? { toolCalls: calls, usage: { inputTokens: 1, outputTokens: 1 } } : { toolCalls: [], final: 'ok', usage: { inputTokens: 1, outputTokens: 1 } }) },
      tools,
      queue: (queue) =>
        withOverrides(queue, {
          heartbeat: async (real, ...args) => {
            heartbeats++;
            const answer = await real(...args);
            heartbeatAnswered = true;
            return answer;
          },
        }),
      // The first heartbeat's sleep (heartbeatMs) ends when the test says; the next never, nor the tool timeout's.
      deps: { waiter: { sleep: (ms) => (ms === 10_000 && heartbeats === 0 ? heartbeatDue : new Promise(() => {})) } },
    });
    for (let i = 0; i < 50 && called.length === 0; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(called).toEqual(['lookup_order']);
    expect(await run.queue.cancel(run.taskId)).toMatchObject({ ok: true, state: 'cancel_requested' });
    beat();
    // The heartbeat's answer carries the cancel; the lease keeper reads it in the same tick.
    for (let i = 0; i < 50 && !heartbeatAnswered; i++) await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    releaseRead();
    expect(await run.outcome).toEqual({ kind: 'cancelled', taskId: run.taskId });
    expect(called).toEqual(['lookup_order']);
    const checkpoint = await run.queue.lastCheckpoint(run.taskId);
    const state = checkpoint?.state as { messages: { role: string; results?: { toolCallId: string; status?: string; reason?: string }[] }[] };
    expect(state.messages.find((message) => message.role === 'tool')?.results?.map((result) => [result.toolCallId, result.status, result.reason])).toEqual([
      ['T1', 'ok', undefined],
      ['T2', 'skipped', 'cancel_requested'],
    ]);
    expect(await run.queue.get(run.taskId)).toMatchObject({ state: 'cancelled' });
  });
});
