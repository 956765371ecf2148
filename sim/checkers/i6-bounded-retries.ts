import type { TaskEvent } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';
import { SPEC_RETRYABLE_ERROR_CLASSES } from './spec-rules.ts';
import { analyse, ViolationList } from './timeline.ts';
import type { Checker } from './types.ts';

/** End reasons that mean the task ran out of attempts, deliveries or retry age (src/queue/run-end.ts). */
export const EXHAUSTION_REASONS = new Set(['attempts_exhausted', 'deliveries_exhausted', 'retry_age_exceeded']);
/** The dead-letter table keeps the newest 1000 (R6); beyond that a missing letter may have been trimmed. */
const DEAD_LETTERS_KEPT = 1_000;

/**
 * I6: bounded retries: attempts <= maxAttempts, deliveries <= maxDeliveries, retry age <=
 * maxRetryAgeMs; an exhausted task ends failed and is never claimable again; dead letters (R6).
 *
 * Rules:
 * - every claim records attempt <= maxAttempts; a task is claimed at most maxDeliveries times (each
 *   claim is a delivery) and at most maxAttempts times; the final attempts and deliveries are in bounds;
 * - a retry records a retryable error class: a non-retryable one fails at once (Q16);
 * - the counters count (Q7): the n-th claim of a task records attempt n, and a task's final attempts
 *   and deliveries both equal its number of claims;
 * - every claim after the first is within maxRetryAgeMs of the first claim (on the core's clock);
 * - once a task has used its last attempt or delivery, it never goes back to ready (no retry, no
 *   confirmation or reconciliation back to ready): it can only end;
 * - a task that ended failed for exhaustion (attempts_exhausted, deliveries_exhausted,
 *   retry_age_exceeded) has a dead letter with its reason and a non-empty reason history; every dead
 *   letter names a task that ended failed for exhaustion, with the same tenant, topic and version.
 */
export const i6BoundedRetries: Checker = {
  invariant: 'I6',
  kind: 'safety',
  description: 'bounded retries: attempts, deliveries and retry age within bounds; exhausted tasks end failed; dead letters',
  check(world: WorldResult) {
    const analysis = analyse(world);
    const { config } = analysis;
    const out = new ViolationList('I6', 'safety');
    const exhaustedTasks = new Map<number, string>();
    for (const [taskId, events] of analysis.eventsByTask) {
      let claims = 0;
      let firstClaimAt: number | undefined;
      let spent = false;
      for (const event of events) {
        if (event.type === 'claimed') {
          claims++;
          firstClaimAt ??= event.at;
          const attempt = event.data.attempt;
          // Q7: attempts are counted at claim, every claim: the n-th claim is attempt n.
          if (attempt !== claims) {
            out.add('attempt count', `task ${taskId}: claim ${event.id} is its claim number ${claims} but records attempt ${String(attempt)} (attempts are counted at every claim, Q7)`, { taskId });
          }
          if (typeof attempt === 'number' && attempt > config.maxAttempts) {
            out.add('attempts', `task ${taskId}: claim ${event.id} is attempt ${attempt}, maxAttempts ${config.maxAttempts}`, { taskId });
          }
          if (claims > config.maxDeliveries || claims > config.maxAttempts) {
            out.add('deliveries', `task ${taskId}: delivered ${claims} times, maxDeliveries ${config.maxDeliveries}, maxAttempts ${config.maxAttempts}`, { taskId });
          }
          if (event.at - firstClaimAt > config.maxRetryAgeMs) {
            out.add('retry age', `task ${taskId}: claimed ${event.at - firstClaimAt} ms after its first claim, maxRetryAgeMs ${config.maxRetryAgeMs}`, { taskId });
          }
          spent = claims >= config.maxDeliveries || (typeof attempt === 'number' ? attempt : claims) >= config.maxAttempts;
        } else if (spent && event.data.to === 'ready') {
          out.add('exhausted', `task ${taskId}: went back to ready by ${event.type} (event ${event.id}) after its last attempt or delivery`, { taskId });
        }
        // Q16: a non-retryable error class fails at once: its retry bound is zero.
        if (event.type === 'retry_scheduled' && !(SPEC_RETRYABLE_ERROR_CLASSES as readonly unknown[]).includes(event.data.errorClass)) {
          out.add('not retryable', `task ${taskId}: retry_scheduled event ${event.id} retries error class ${String(event.data.errorClass)}, which is not retryable (Q16)`, { taskId });
        }
        const reason = exhaustionOf(event);
        if (reason !== undefined) exhaustedTasks.set(taskId, reason);
      }
    }
    for (const task of analysis.tasks.values()) {
      if (task.attempts > config.maxAttempts || task.deliveries > config.maxDeliveries) {
        out.add('final', `task ${task.id} ended with ${task.attempts} attempts and ${task.deliveries} deliveries`, { taskId: task.id });
      }
      // The counters the bounds are checked against must count what happened: one attempt and one
      // delivery per claim, on every path (a counter bumped on one path only lets a task loop).
      const claims = (analysis.eventsByTask.get(task.id) ?? []).filter((event) => event.type === 'claimed').length;
      if (task.attempts !== claims || task.deliveries !== claims) {
        out.add('final count', `task ${task.id} was claimed ${claims} times but ended with ${task.attempts} attempts and ${task.deliveries} deliveries`, { taskId: task.id });
      }
    }
    checkDeadLetters(world, exhaustedTasks, analysis.tasks, out);
    return out.list;
  },
};

/** The exhaustion reason of a transition to failed, if it was one. */
function exhaustionOf(event: TaskEvent): string | undefined {
  const reason = event.data.reason;
  return event.data.to === 'failed' && typeof reason === 'string' && EXHAUSTION_REASONS.has(reason) ? reason : undefined;
}

function checkDeadLetters(world: WorldResult, exhausted: Map<number, string>, tasks: ReturnType<typeof analyse>['tasks'], out: ViolationList): void {
  const letters = world.deadLetters ?? [];
  const byTask = new Map<number, (typeof letters)[number]>();
  for (const letter of letters) {
    if (byTask.has(letter.taskId)) out.add('dead letter twice', `task ${letter.taskId} has two dead letters`, { taskId: letter.taskId });
    byTask.set(letter.taskId, letter);
    const task = tasks.get(letter.taskId);
    if (task === undefined || task.state !== 'failed') {
      out.add('dead letter', `dead letter for task ${letter.taskId}, which ended ${task?.state ?? 'unknown'}, not failed`, { taskId: letter.taskId });
      continue;
    }
    if (task.tenant !== letter.tenant || task.topic !== letter.topic || task.version !== letter.version) {
      out.add('dead letter', `dead letter for task ${task.id} names ${letter.tenant}/${letter.topic}/v${letter.version}, the task is ${task.tenant}/${task.topic}/v${task.version}`, { taskId: task.id });
    }
    if (!exhausted.has(task.id)) out.add('dead letter', `dead letter for task ${task.id}, which did not run out of attempts, deliveries or retry age`, { taskId: task.id });
    if (!Array.isArray(letter.reasons) || letter.reasons.length === 0) {
      out.add('dead letter', `dead letter for task ${task.id} has no reason history`, { taskId: task.id });
    }
  }
  const trimmed = letters.length >= DEAD_LETTERS_KEPT;
  for (const [taskId, reason] of exhausted) {
    const letter = byTask.get(taskId);
    if (letter === undefined) {
      if (!trimmed) out.add('missing dead letter', `task ${taskId} ended failed (${reason}) but has no dead letter`, { taskId });
    } else if (letter.reason !== reason) {
      out.add('dead letter', `task ${taskId} ended failed (${reason}) but its dead letter says ${letter.reason}`, { taskId });
    }
  }
}
