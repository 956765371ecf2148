import { afterEach, describe, expect, it } from 'vitest';
import { checkAndCloseQueues, enqueueOk, openTestQueue } from '../queue/__test-helpers__/test-kit.ts';
import type { WorkQueue } from '../queue/types.ts';
import type { RunOutcome, WorkerLogLine } from './types.ts';
import { Worker } from './worker.ts';

afterEach(checkAndCloseQueues);

describe('Worker', () => {
  it('survives a run that meets an unexpected error: the run ends crashed, logged, with no terminal write, and the worker claims on', async () => {
    const { queue, clock } = openTestQueue();
    const broken = await enqueueOk(queue, { tenant: 'a', priority: 30 });
    const healthy = await enqueueOk(queue, { tenant: 'b', priority: 0 });
    // The queue as the worker sees it: completing the first task throws, as a bug in the core would.
    const faulty = new Proxy(queue, {
      get(target, property, receiver) {
        if (property === 'complete') {
          return async (taskId: number, ...rest: unknown[]) => {
            if (taskId === broken) throw new TypeError('the core broke');
            return (target.complete as (...args: unknown[]) => unknown)(taskId, ...rest);
          };
        }
        return Reflect.get(target, property, receiver);
      },
    }) as WorkQueue;
    const outcomes: RunOutcome[] = [];
    const logs: WorkerLogLine[] = [];
    const worker = new Worker({
      queue: faulty,
      workerId: 'w1',
      model: { decide: async () => ({ toolCalls: [], final: 'ok', usage: { inputTokens: 1, outputTokens: 1 } }) },
      tools: [],
      // Timers never fire here: no heartbeat, no tool timeout; the runs finish on their own.
      waiter: { sleep: () => new Promise<void>(() => {}) },
      clock,
      slots: 1,
      log: (line) => logs.push(line),
      onOutcome: (outcome) => outcomes.push(outcome),
    });
    expect(await worker.claimOne()).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(outcomes).toEqual([{ kind: 'crashed', taskId: broken, generation: 1, error: 'TypeError: the core broke' }]);
    expect(logs.some((line) => line.taskId === broken && /run crashed: TypeError: the core broke/.test(line.message))).toBe(true);
    // No terminal write: the task still runs under its lease, which will lapse into uncertain (Q10).
    expect(await queue.get(broken)).toMatchObject({ state: 'running', generation: 1 });
    expect(await worker.claimOne()).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(outcomes.at(-1)).toEqual({ kind: 'completed', taskId: healthy, outcome: 'done' });
    worker.stop();
  });
});
