import { z } from 'zod';
import { SPEC_RETRYABLE_ERROR_CLASSES } from '../checkers/spec-rules.ts';
import { analyse } from '../checkers/timeline.ts';
import type { ExpectationKind } from './types.ts';
import { selectTasks, taskSelectorSchema, tooFew, type TaskSelector } from './task-selector.ts';
import { labelsById, nameOf } from './values.ts';

interface RetryBackoff {
  kind: 'retry-backoff';
  /** Only the retries of these tasks; default every task. */
  tasks?: TaskSelector;
}

const RETRYABLE = new Set<unknown>(SPEC_RETRYABLE_ERROR_CLASSES);
/** Q16's jitter factor is drawn in [0.8, 1.2); the core rounds the product to whole ms. */
const JITTER_LOW = 0.8;
const JITTER_HIGH = 1.2;

/**
 * Retries back off (Q16): every `retry_scheduled` event records a retryable error class (its reason)
 * and a backoff within [0.8, 1.2] x min(baseDelayMs * 2^attempts, maxDelayMs) for the attempts made
 * so far, so consecutive retries of a task wait exponentially longer up to the cap; and the task's
 * next claim comes no earlier than the retry time plus that backoff. Read from the event log. That
 * retries happened at all is a count: state it with event-count (type retry_scheduled).
 */
export const retryBackoff: ExpectationKind<RetryBackoff> = {
  kind: 'retry-backoff',
  class: 'safety',
  description: 'every retry records a retryable reason and a jittered exponential backoff (Q16), and the task is not claimed again before it has passed',
  schema: z.strictObject({
    kind: z.literal('retry-backoff'),
    tasks: taskSelectorSchema.optional(),
  }),
  check(spec, run) {
    const { config, eventsByTask } = analyse(run);
    const selected = selectTasks(run, spec.tasks);
    const few = tooFew(spec.tasks, selected);
    if (few !== undefined) return [few];
    const labels = labelsById(run);
    const problems: string[] = [];
    for (const { id } of selected) {
      let notBefore: number | undefined;
      for (const event of eventsByTask.get(id) ?? []) {
        if (event.type === 'claimed' && notBefore !== undefined && event.at < notBefore) {
          problems.push(`${nameOf(labels, id)} was claimed at ${event.at}, ${notBefore - event.at} ms before its retry backoff ended at ${notBefore}`);
        }
        if (event.type === 'claimed') notBefore = undefined;
        if (event.type !== 'retry_scheduled') continue;
        const { backoffMs, attempt, errorClass } = event.data;
        if (!RETRYABLE.has(errorClass)) problems.push(`${nameOf(labels, id)}: retry at ${event.at} records error class ${String(errorClass)}, not a retryable one`);
        if (typeof backoffMs !== 'number' || typeof attempt !== 'number') {
          problems.push(`${nameOf(labels, id)}: retry at ${event.at} records no backoffMs and attempt`);
          continue;
        }
        const exponential = Math.min(config.baseDelayMs * 2 ** Math.min(attempt, 52), config.maxDelayMs);
        const low = Math.floor(exponential * JITTER_LOW);
        const high = Math.ceil(exponential * JITTER_HIGH);
        if (backoffMs < low || backoffMs > high) {
          problems.push(`${nameOf(labels, id)}: retry after attempt ${attempt} backs off ${backoffMs} ms, expected [${low}, ${high}] (min(${config.baseDelayMs} * 2^${attempt}, ${config.maxDelayMs}) with jitter)`);
        }
        notBefore = event.at + backoffMs;
      }
    }
    return problems;
  },
};
