/**
 * A model-based test of the core API (SPEC Q1-Q16): random sequences of enqueue (fresh, resent, newer
 * version), claim, heartbeat, complete, fail, acknowledgeCancel, appendEvent, checkpoint, expireLeases,
 * confirmStopped, cancel and clock steps run against a fresh ':memory:' queue and a small in-memory
 * reference model (properties/model/reference-queue.ts). Every answer must agree, and after every call
 * so must every task (get, events), the recorded rejections, and at the end the admin and tenant views.
 *
 * LEASEHOLD_RUNS scales the number of runs (default 200, and half that for the retry mix). A failure
 * prints fast-check's seed, path and shrunk commands, and one line that replays it through
 * LEASEHOLD_SEED, LEASEHOLD_PATH and LEASEHOLD_REPLAY_PATH.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { WorkQueue } from '../src/index.ts';
import { BROAD_MIX, RETRY_MIX, type CommandMix } from './model/mixes.ts';
import { queueModelProperty, replayHint, replaySettings } from './model/property.ts';

const TEST_FILE = 'properties/queue-model.test.ts';

describe('the core API against a reference model', () => {
  const { runs, seed, path, replayPath } = replaySettings();
  const cases: [name: string, mix: CommandMix, numRuns: number][] = [
    ['answers every call as the model does, and every task looks the same after each call', BROAD_MIX, runs],
    ['agrees with the model through retries, lapses and confirmations up to maxAttempts', RETRY_MIX, Math.ceil(runs / 2)],
  ];
  it.each(cases)('%s', (name, mix, numRuns) => {
    fc.assert(queueModelProperty({ mix, ...(replayPath === undefined ? {} : { replayPath }) }), {
      numRuns,
      ...(seed === undefined ? {} : { seed }),
      ...(path === undefined ? {} : { path }),
      plugins: [replayHint(TEST_FILE, name)],
    });
  });
});

/** Wraps a queue so that one method misbehaves; everything else goes to the real queue. */
function breakQueue(queue: WorkQueue, overrides: Partial<WorkQueue>): WorkQueue {
  return new Proxy(queue, {
    get(target, property, receiver) {
      if (property in overrides) return overrides[property as keyof WorkQueue];
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Q8 broken: a refused complete() is retried as whoever holds the task now. */
function completeIgnoringFence(queue: WorkQueue): WorkQueue {
  return breakQueue(queue, {
    async complete(taskId, workerId, generation, result) {
      const answer = await queue.complete(taskId, workerId, generation, result);
      const view = await queue.get(taskId);
      if (answer.ok || view?.state !== 'running' || view.workerId === undefined) return answer;
      return await queue.complete(taskId, view.workerId, view.generation, result);
    },
  });
}

/** Q13 broken: cancelling a running task ends it at once instead of recording the request. */
function cancelEndingRunningTasks(queue: WorkQueue): WorkQueue {
  return breakQueue(queue, {
    async cancel(taskId) {
      const answer = await queue.cancel(taskId);
      const view = await queue.get(taskId);
      if (answer.ok && view?.state === 'running' && view.workerId !== undefined) await queue.acknowledgeCancel(taskId, view.workerId, view.generation);
      return answer;
    },
  });
}

describe('the model-based test can fail', () => {
  it.each([
    ['complete() ignores the generation fence', completeIgnoringFence],
    ['cancel() ends a running task at once', cancelEndingRunningTasks],
  ])('catches a queue whose %s', async (_name, wrap) => {
    // No shrinking: that the property fails is the point here, not the smallest example.
    const details = await fc.check(queueModelProperty({ wrap }), { numRuns: 300, seed: 20240601, endOnFailure: true });
    expect(details.failed).toBe(true);
    expect(String(details.errorInstance)).toMatch(/the queue and the reference model disagree/);
  });
});
