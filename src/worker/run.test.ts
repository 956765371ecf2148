import { describe, expect, it } from 'vitest';
import type { ClaimedTask, WorkQueue } from '../queue/types.ts';
import { runClaimedTask, type RunDependencies } from './run.ts';
import { ToolFailure, type Tool } from './types.ts';

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
 * A run frozen inside a read-only tool call, as a paused worker is. When it wakes, its held results
 * arrive in order: first the heartbeat's timer (refused: the lease moved on), then the tool's error.
 */
function zombieInsideTool(errorAfterWake: 'tool_error' | 'none') {
  const writes: string[] = [];
  const heartbeatTimer = deferred<void>();
  const toolAnswer = deferred<unknown>();
  let sleeps = 0;
  const queue = {
    heartbeat: () => {
      writes.push('heartbeat');
      return STALE;
    },
    checkpoint: () => {
      writes.push('checkpoint');
      return { ok: true, seq: writes.length, eventSeq: writes.length };
    },
    appendEvent: () => {
      writes.push('appendEvent');
      return STALE;
    },
    fail: () => {
      writes.push('fail');
      return STALE;
    },
    complete: () => {
      writes.push('complete');
      return STALE;
    },
  } as unknown as WorkQueue;
  const lookup: Tool = { name: 'lookup_order', readOnly: true, call: () => toolAnswer.promise };
  const deps: RunDependencies = {
    queue,
    // The first sleep is the heartbeat's; the others (the tool timeout) never fire here.
    waiter: { sleep: () => (sleeps++ === 0 ? heartbeatTimer.promise : new Promise(() => {})) },
    clock: { now: () => 1_000 },
    workerId: 'w0#1',
    model: { decide: async () => ({ toolCalls: [{ id: 'c1', tool: 'lookup_order', args: {} }], usage: { inputTokens: 10, outputTokens: 5 } }) },
    tools: new Map([['lookup_order', lookup]]),
    heartbeatMs: 10_000,
    maxSteps: 4,
    toolTimeoutMs: 20_000,
    busyRetries: 0,
    busyWaitMs: 100,
    log: () => {},
  };
  const task: ClaimedTask = { id: 7, tenant: 'acme', topic: 't', version: 1, priority: 10, input: {}, generation: 1, attempt: 1, leaseUntil: 31_000, tier: 'standard', cancelRequested: false };
  const outcome = runClaimedTask(deps, task);
  return {
    writes,
    outcome,
    async wake() {
      await flush();
      heartbeatTimer.resolve();
      await flush();
      if (errorAfterWake === 'tool_error') toolAnswer.reject(new ToolFailure('rate_limited', 'lookup_order: 429'));
      else toolAnswer.resolve({ ok: true });
    },
  };
}

/** A run whose final answer is refused stale_lease, while its heartbeat timer fires in that same tick. */
function refusedCompletion() {
  const writes: string[] = [];
  const heartbeatTimer = deferred<void>();
  let sleeps = 0;
  const queue = {
    heartbeat: () => {
      writes.push('heartbeat');
      return STALE;
    },
    checkpoint: () => {
      writes.push('checkpoint');
      return { ok: true, seq: 1, eventSeq: 1 };
    },
    complete: () => {
      writes.push('complete');
      heartbeatTimer.resolve();
      return STALE;
    },
  } as unknown as WorkQueue;
  const deps: RunDependencies = {
    queue,
    waiter: { sleep: () => (sleeps++ === 0 ? heartbeatTimer.promise : new Promise(() => {})) },
    clock: { now: () => 1_000 },
    workerId: 'w0#1',
    model: { decide: async () => ({ toolCalls: [], final: { status: 'resolved' }, usage: { inputTokens: 10, outputTokens: 5 } }) },
    tools: new Map(),
    heartbeatMs: 10_000,
    maxSteps: 4,
    toolTimeoutMs: 20_000,
    busyRetries: 0,
    busyWaitMs: 100,
    log: () => {},
  };
  const task: ClaimedTask = { id: 7, tenant: 'acme', topic: 't', version: 1, priority: 10, input: {}, generation: 1, attempt: 1, leaseUntil: 31_000, tier: 'standard', cancelRequested: false };
  return { writes, outcome: runClaimedTask(deps, task) };
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
