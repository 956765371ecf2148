import type { QueueContext } from '../queue/context.ts';
import type { TaskState } from '../queue/types.ts';
import { EXHAUSTION_REASONS, deadLetter } from './dead-letters.ts';
import { closeHold } from './settlement.ts';

/**
 * Everything a run's end does besides the state change, in the same transaction (R4, R6): close the
 * hold, and dead-letter a task that ran out of deliveries. Returns what the end event should say.
 */
export function endRun(context: QueueContext, taskId: number, to: TaskState, at: number, reason: string): Record<string, unknown> {
  const settlement = closeHold(context, taskId, at, reason);
  return { settlement };
}

/** Called after the end event was written, so the dead letter's reason history includes it. */
export function afterEnd(context: QueueContext, taskId: number, to: TaskState, at: number, reason: string): void {
  if (to === 'failed' && EXHAUSTION_REASONS.has(reason)) deadLetter(context, taskId, reason, at);
}
