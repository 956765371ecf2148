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
