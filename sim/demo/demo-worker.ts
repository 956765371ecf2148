import type { WorkQueue } from '../../src/index.ts';
import type { LogicalClock } from './logical-clock.ts';

/** One claim as the demo reports it: who was taken, in which order, with which score and wait. */
export interface DemoClaim {
  order: number;
  taskId: number;
  topic: string;
  version: number;
  priority: number;
  /** Q4: base priority plus aging, as the claim transaction computed it. */
  score: number;
  /** Q7: claim time minus enqueue time. */
  waitMs: number;
  /** When the claim happened, in ms since the demo started. */
  atMs: number;
  generation: number;
}

/**
 * Claims the next task for `workerId`, or returns undefined when the queue has nothing eligible. The
 * score and wait are read back from the `claimed` event, so the demo shows what the queue recorded
 * rather than what the demo expects.
 */
export async function claimNext(queue: WorkQueue, clock: LogicalClock, workerId: string, order: number): Promise<DemoClaim | undefined> {
  const claimed = await queue.claim(workerId);
  if (!claimed.ok) return undefined;
  const { task } = claimed;
  const event = (await queue.events(task.id)).findLast((candidate) => candidate.type === 'claimed');
  if (event === undefined) throw new Error(`task ${task.id} was claimed without a claimed event (Q15)`);
  return {
    order,
    taskId: task.id,
    topic: task.topic,
    version: task.version,
    priority: task.priority,
    score: event.data.score as number,
    waitMs: event.data.queueWaitMs as number,
    atMs: clock.elapsedMs,
    generation: task.generation,
  };
}

export function describeClaim(claim: DemoClaim): string {
  const aging = claim.score - claim.priority;
  return `claim #${claim.order}: task ${claim.taskId} ${claim.topic} v${claim.version}, score ${claim.score} (base ${claim.priority} + ${aging} aging), waited ${claim.waitMs / 1000} s`;
}
