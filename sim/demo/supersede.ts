import type { TaskState, WorkQueue } from '../../src/queue/types.ts';
import { openWorkQueue } from '../../src/work-queue.ts';
import { epochMsDefault } from '../clock.ts';
import { SeededRandom } from '../random.ts';
import { claimNext, describeClaim, type DemoClaim } from './demo-worker.ts';
import type { DemoCheck } from './group-meal.ts';
import { LogicalClock, since } from './logical-clock.ts';
import { DEMO_TOPICS, enqueueRequest, investigationResult, type DemoTopic } from './topics.ts';

/**
 * Seed 000's corrections (Q2): a newer version of a topic replaces a version that is still waiting,
 * which then never runs; a version that is already running is left alone and, when it completes while
 * a newer one is queued, its result is kept with outcome stale_input.
 *
 * The group meal keeps the single worker busy so that store-12's report is still waiting when the
 * corrected payment serial arrives.
 */

export const SUPERSEDE_SEED = 'seed-000/supersede';
const WORKER_ID = 'worker-1';

export interface SupersedeDemoResult {
  claims: DemoClaim[];
  /** The waiting version that the correction replaced. */
  replaced: { taskId: number; version: number; state: TaskState; everClaimed: boolean; replacedBy: number; enqueueStatus: string };
  /** The running version that a later correction overtook. */
  overtaken: { taskId: number; version: number; state: TaskState; outcome?: string; overtakenBy: number };
  latest: { taskId: number; version: number; state: TaskState; outcome?: string };
  checks: DemoCheck[];
}

export async function runSupersedeDemo(log: (line: string) => void = () => {}): Promise<SupersedeDemoResult> {
  const clock = new LogicalClock(epochMsDefault);
  const queue = openWorkQueue({ db: ':memory:', clock, random: new SeededRandom(SUPERSEDE_SEED) });
  const store12 = DEMO_TOPICS.find((topic) => topic.store === 'store-12') as DemoTopic;
  const groupMeal = DEMO_TOPICS.find((topic) => topic.priority === 30) as DemoTopic;
  const claims: DemoClaim[] = [];
  const step = (line: string) => log(`${since(clock.elapsedMs)}  ${line}`);
  const claimAndLog = async () => {
    const claim = await claimNext(queue, clock, WORKER_ID, claims.length + 1);
    if (claim === undefined) throw new Error('expected a task to claim');
    claims.push(claim);
    step(describeClaim(claim));
    return claim;
  };
  try {
    log('Supersede (Q2): corrections to a topic that is waiting, and to one that is running.');
    const v1 = await enqueue(queue, store12, 1, { paymentSerial: 'P-1001' }, step, 'the payment serial as first reported');
    await enqueue(queue, groupMeal, 1, {}, step, 'keeps the one worker busy for a while');
    clock.advanceBy(5_000);
    const meal = await claimAndLog();
    clock.advanceBy(1_000);
    const v2 = await enqueue(queue, store12, 2, { paymentSerial: 'P-1007' }, step, 'the corrected payment serial, while v1 still waits');
    clock.advanceBy(2_000);
    await complete(queue, meal, groupMeal, step);
    const running = await claimAndLog();
    clock.advanceBy(1_000);
    const v3 = await enqueue(queue, store12, 3, { paymentSerial: 'P-1007', refundRequested: true }, step, 'the manager adds a refund request, while v2 runs');
    clock.advanceBy(2_000);
    await complete(queue, running, store12, step);
    const last = await claimAndLog();
    clock.advanceBy(3_000);
    await complete(queue, last, store12, step);

    const view = async (taskId: number) => (await queue.get(taskId)) ?? fail(`task ${taskId} vanished`);
    const everClaimed = (await queue.events(v1.taskId)).some((event) => event.type === 'claimed');
    const result: Omit<SupersedeDemoResult, 'checks'> = {
      claims,
      replaced: { taskId: v1.taskId, version: 1, state: (await view(v1.taskId)).state, everClaimed, replacedBy: v2.taskId, enqueueStatus: v2.status },
      overtaken: { taskId: v2.taskId, version: 2, state: (await view(v2.taskId)).state, outcome: (await view(v2.taskId)).outcome, overtakenBy: v3.taskId },
      latest: { taskId: v3.taskId, version: 3, state: (await view(v3.taskId)).state, outcome: (await view(v3.taskId)).outcome },
    };
    const checks = checkSupersede(result);
    log('Checks:');
    for (const check of checks) log(`  ${check.holds ? 'ok    ' : 'FAILED'} ${check.claim}`);
    return { ...result, checks };
  } finally {
    await queue.close();
  }
}

async function enqueue(queue: WorkQueue, topic: DemoTopic, version: number, extra: Record<string, unknown>, step: (line: string) => void, what: string) {
  const enqueued = await queue.enqueue(enqueueRequest(topic, version, extra));
  if (!enqueued.ok) throw new Error(`enqueue of ${topic.topic} v${version} failed: ${enqueued.message}`);
  step(`enqueue ${topic.topic} v${version} (${what}): task ${enqueued.taskId}, ${enqueued.status}`);
  return enqueued;
}

async function complete(queue: WorkQueue, claim: DemoClaim, topic: DemoTopic, step: (line: string) => void): Promise<void> {
  const completed = await queue.complete(claim.taskId, WORKER_ID, claim.generation, investigationResult(topic));
  if (!completed.ok) throw new Error(`complete of task ${claim.taskId} failed: ${completed.message}`);
  const why = completed.outcome === 'stale_input' ? ' (a newer version is queued, so this result is kept but marked stale)' : '';
  step(`task ${claim.taskId} ${claim.topic} v${claim.version} completed: outcome ${completed.outcome}${why}`);
}

function checkSupersede(result: Omit<SupersedeDemoResult, 'checks'>): DemoCheck[] {
  return [
    { claim: 'a correction to a waiting version is accepted as a replacement', holds: result.replaced.enqueueStatus === 'replaced' },
    { claim: 'the replaced version is superseded and never ran', holds: result.replaced.state === 'superseded' && !result.replaced.everClaimed },
    { claim: 'a running version is left alone and finishes stale_input', holds: result.overtaken.state === 'done' && result.overtaken.outcome === 'stale_input' },
    { claim: 'the latest version runs and finishes done', holds: result.latest.state === 'done' && result.latest.outcome === 'done' },
  ];
}

function fail(message: string): never {
  throw new Error(message);
}
