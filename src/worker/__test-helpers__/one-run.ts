import { openWorkQueue } from '../../work-queue.ts';
import { ManualClock } from '../../queue/__test-helpers__/test-kit.ts';
import type { EnqueueRequest, QueueConfig, WorkQueue } from '../../queue/types.ts';
import { runClaimedTask, type RunDependencies } from '../run.ts';
import type { Model, Tool } from '../types.ts';

/**
 * One task on a fresh in-memory queue, claimed by w1 and run to its end by the real worker runtime
 * (heartbeat timers never fire). `opened` collects the queue for the test's afterEach to close.
 */
export async function runOneTask(options: {
  opened: WorkQueue[];
  config?: Partial<QueueConfig>;
  request?: Partial<EnqueueRequest>;
  model: Model;
  tools: readonly Tool[];
  maxSteps?: number;
}) {
  const clock = new ManualClock();
  const queue = openWorkQueue({ db: ':memory:', clock, ...(options.config === undefined ? {} : { config: options.config }) });
  options.opened.push(queue);
  const enqueued = await queue.enqueue({ tenant: 'acme', topic: 't', version: 1, priority: 5, input: {}, ...options.request });
  if (!enqueued.ok) throw new Error(enqueued.message);
  const claimed = await queue.claim('w1');
  if (!claimed.ok) throw new Error('nothing to claim');
  const deps: RunDependencies = {
    queue,
    waiter: { sleep: () => new Promise(() => {}) },
    clock,
    workerId: 'w1',
    model: options.model,
    tools: new Map(options.tools.map((tool) => [tool.name, tool])),
    heartbeatMs: 10_000,
    maxSteps: options.maxSteps ?? 8,
    toolTimeoutMs: 20_000,
    busyWaitMs: 100,
    log: () => {},
  };
  return { queue, taskId: enqueued.taskId, outcome: await runClaimedTask(deps, claimed.task) };
}
