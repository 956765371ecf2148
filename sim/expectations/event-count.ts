import { z } from 'zod';
import type { ExpectationKind } from './types.ts';
import { describeSelector, selectTasks, taskSelectorSchema, tooFew, type TaskSelector } from './task-selector.ts';

type Scalar = string | number | boolean;

interface EventCount {
  kind: 'event-count';
  /** An event type of the queue's log: retry_scheduled, failed, lease_expired, claimed, superseded, ... */
  type: string;
  /** Count only events whose data has these values, e.g. { "errorClass": "rate_limited" } or { "reason": "retry_age_exceeded" }. */
  data?: Record<string, Scalar>;
  /** Count only events of these tasks; default every task. */
  tasks?: TaskSelector;
  atLeast?: number;
  atMost?: number;
}

/**
 * How many events of a type (with given data) the queue's log holds, e.g. "at least 5 retries were
 * scheduled for rate_limited" (the storm really happened), "some task failed for retry_age_exceeded",
 * or "no task was superseded". Counted from the final database's event log (Q15).
 */
export const eventCount: ExpectationKind<EventCount> = {
  kind: 'event-count',
  class: 'liveness',
  description: 'events of a type (whose data has the given values, of the selected tasks) number at least / at most so many',
  schema: z
    .strictObject({
      kind: z.literal('event-count'),
      type: z.string().min(1),
      data: z.record(z.string().min(1), z.union([z.string(), z.number(), z.boolean()])).optional(),
      tasks: taskSelectorSchema.optional(),
      atLeast: z.number().int().min(0).optional(),
      atMost: z.number().int().min(0).optional(),
    })
    .refine((spec) => spec.atLeast !== undefined || spec.atMost !== undefined, { message: 'give atLeast, atMost or both' })
    .refine((spec) => spec.atMost === undefined || spec.atLeast === undefined || spec.atLeast <= spec.atMost, { message: 'atLeast is above atMost', path: ['atLeast'] }),
  check(spec, run) {
    let ids: Set<number> | undefined;
    if (spec.tasks !== undefined) {
      const selected = selectTasks(run, spec.tasks);
      const few = tooFew(spec.tasks, selected);
      if (few !== undefined) return [few];
      ids = new Set(selected.map((task) => task.id));
    }
    const wanted = Object.entries(spec.data ?? {});
    let count = 0;
    for (const event of run.events) {
      if (event.type !== spec.type || (ids !== undefined && !ids.has(event.taskId))) continue;
      if (wanted.every(([field, value]) => event.data[field] === value)) count++;
    }
    const what = `${spec.type} events${wanted.length === 0 ? '' : ` with ${wanted.map(([field, value]) => `${field}=${JSON.stringify(value)}`).join(', ')}`}${spec.tasks === undefined ? '' : ` of ${describeSelector(spec.tasks)}`}`;
    const problems: string[] = [];
    if (spec.atLeast !== undefined && count < spec.atLeast) problems.push(`${count} ${what}, expected at least ${spec.atLeast}`);
    if (spec.atMost !== undefined && count > spec.atMost) problems.push(`${count} ${what}, expected at most ${spec.atMost}`);
    return problems;
  },
};
