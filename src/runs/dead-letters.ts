import type { QueueContext } from '../queue/context.ts';

/** How many dead letters are kept for people to inspect (R6); the oldest go first. */
export const DEAD_LETTERS_KEPT = 1_000;

/** Reasons that mean the task ran out of deliveries, attempts or retry age, rather than failing on purpose. */
export const EXHAUSTION_REASONS = new Set(['attempts_exhausted', 'deliveries_exhausted', 'retry_age_exceeded']);

/**
 * R6: a task that was delivered and never finished ends failed and goes to the dead-letter table with
 * the history of why each delivery ended. Dead letters are never replayed automatically.
 */
export function deadLetter(context: QueueContext, taskId: number, reason: string, at: number): void {
  const { statements } = context;
  const reasons = (statements.failureReasons.all(taskId) as { type: string; data: string }[]).map(({ type, data }) => {
    const parsed = JSON.parse(data) as { reason?: string; errorClass?: string };
    return parsed.errorClass ?? parsed.reason ?? type;
  });
  statements.insertDeadLetter.run({ id: taskId, reason, reasons: JSON.stringify(reasons), now: at });
  statements.trimDeadLetters.run({ keep: DEAD_LETTERS_KEPT });
}
