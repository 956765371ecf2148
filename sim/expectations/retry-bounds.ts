import { z } from 'zod';
import type { TaskState } from '../../src/queue/types.ts';
import { EXHAUSTION_REASONS } from '../checkers/i6-bounded-retries.ts';
import { SPEC_TERMINAL_STATES } from '../checkers/spec-rules.ts';
import { analyse } from '../checkers/timeline.ts';
import type { ExpectationKind } from './types.ts';
import { selectTasks, taskSelectorSchema, tooFew, type TaskSelector } from './task-selector.ts';
import { labelsById, nameOf } from './values.ts';

interface RetryBounds {
  kind: 'retry-bounds';
  /** Which tasks; default every accepted task. */
  tasks?: TaskSelector;
  /** No claim records an attempt above this; default the queue's maxAttempts. */
  maxAttempts?: number;
  /** No task is claimed (delivered) more often than this; default the queue's maxDeliveries. */
  maxDeliveries?: number;
  /** No claim comes later than this after the task's first claim; default the queue's maxRetryAgeMs. */
  maxRetryAgeMs?: number;
}

const TERMINAL = new Set<unknown>(SPEC_TERMINAL_STATES);

/**
 * Retries are bounded (Q16, R6, I6) by the numbers the scenario states: attempts, deliveries and the
 * age of the last claim since the first. A task that ran out of attempts, deliveries or retry age
 * ended failed with that reason, has a dead letter saying so, and was never claimed again.
 */
export const retryBounds: ExpectationKind<RetryBounds> = {
  kind: 'retry-bounds',
  class: 'safety',
  description: 'the selected tasks stay within maxAttempts, maxDeliveries and maxRetryAgeMs; an exhausted task ends failed, dead-lettered, never claimed again',
  schema: z.strictObject({
    kind: z.literal('retry-bounds'),
    tasks: taskSelectorSchema.optional(),
    maxAttempts: z.number().int().min(1).optional(),
    maxDeliveries: z.number().int().min(1).optional(),
    maxRetryAgeMs: z.number().int().min(0).optional(),
  }),
  check(spec, run) {
    const { config, eventsByTask } = analyse(run);
    const maxAttempts = spec.maxAttempts ?? config.maxAttempts;
    const maxDeliveries = spec.maxDeliveries ?? config.maxDeliveries;
    const maxRetryAgeMs = spec.maxRetryAgeMs ?? config.maxRetryAgeMs;
    const selected = selectTasks(run, spec.tasks);
    const few = tooFew(spec.tasks, selected);
    if (few !== undefined) return [few];
    const labels = labelsById(run);
    const letters = new Map((run.deadLetters ?? []).map((letter) => [letter.taskId, letter]));
    const problems: string[] = [];
    for (const { id, task } of selected) {
      const name = nameOf(labels, id);
      let claims = 0;
      let firstClaimAt: number | undefined;
      let ended: { type: string; reason: unknown } | undefined;
      for (const event of eventsByTask.get(id) ?? []) {
        if (event.type === 'claimed') {
          if (ended !== undefined) problems.push(`${name} was claimed at ${event.at} after it had ended (${ended.type})`);
          claims++;
          firstClaimAt ??= event.at;
          const attempt = event.data.attempt;
          if (typeof attempt === 'number' && attempt > maxAttempts) problems.push(`${name}: claim at ${event.at} is attempt ${attempt}, expected at most ${maxAttempts}`);
          if (claims === maxDeliveries + 1) problems.push(`${name} was delivered more than ${maxDeliveries} times`);
          if (event.at - firstClaimAt > maxRetryAgeMs) problems.push(`${name} was claimed ${event.at - firstClaimAt} ms after its first claim, expected at most ${maxRetryAgeMs}`);
        }
        if (TERMINAL.has(event.data.to) && ended === undefined) ended = { type: event.type, reason: event.data.reason };
      }
      const reason = typeof ended?.reason === 'string' && EXHAUSTION_REASONS.has(ended.reason) ? ended.reason : undefined;
      if (reason === undefined) continue;
      if ((task.state as TaskState) !== 'failed') problems.push(`${name} ran out (${reason}) but ended ${task.state}, not failed`);
      const letter = letters.get(id);
      if (letter === undefined) problems.push(`${name} ran out (${reason}) but has no dead letter`);
      else if (letter.reason !== reason) problems.push(`${name} ran out (${reason}) but its dead letter says ${letter.reason}`);
    }
    return problems;
  },
};
