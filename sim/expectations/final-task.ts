import { z } from 'zod';
import type { ExpectationKind } from './types.ts';
import { oneTaskOf } from './tasks.ts';
import { describeRange, inRange, numberOrRange, type NumberOrRange } from './values.ts';

const OUTCOMES = ['done', 'stale_input', 'cancelled', 'interrupted'] as const;

interface FinalTask {
  kind: 'final-task';
  /** The task's label. */
  task: string;
  /** The run's outcome (Q2: stale_input when a newer version was queued; Q12: done is not resolved). */
  outcome?: (typeof OUTCOMES)[number];
  /** `status` of the result the worker stored (its business outcome, e.g. needs_human). */
  resultStatus?: string;
  /** Claims counted (Q7), exact or [min, max]. */
  attempts?: NumberOrRange;
  /** The last generation granted (fencing token), exact or [min, max]. */
  generation?: NumberOrRange;
  /** Deliveries (R6), exact or [min, max]. */
  deliveries?: NumberOrRange;
  /** The task is (true) or is not (false) in the dead-letter table (R6). */
  deadLetter?: boolean;
}

/**
 * What a named task's final row says beyond its state: the outcome of its result (stale_input for an
 * overtaken version), the business status inside the result (needs_human: done is not resolved), the
 * attempts, generation and deliveries it took, and whether it went to the dead-letter table.
 */
export const finalTask: ExpectationKind<FinalTask> = {
  kind: 'final-task',
  class: 'safety',
  description: "a named task's final row has this outcome, result status, attempts, generation, deliveries and dead-letter entry",
  schema: z
    .strictObject({
      kind: z.literal('final-task'),
      task: z.string().min(1),
      outcome: z.enum(OUTCOMES).optional(),
      resultStatus: z.string().min(1).optional(),
      attempts: numberOrRange.optional(),
      generation: numberOrRange.optional(),
      deliveries: numberOrRange.optional(),
      deadLetter: z.boolean().optional(),
    })
    .refine((spec) => Object.keys(spec).some((field) => field !== 'kind' && field !== 'task'), { message: 'say what the final row must hold' }),
  check(spec, run) {
    const id = oneTaskOf(run, spec.task);
    if (typeof id === 'string') return [id];
    const task = run.final.tasks.find((candidate) => candidate.id === id);
    const name = `task ${id} ('${spec.task}')`;
    if (task === undefined) return [`${name} is not in the final database`];
    const problems: string[] = [];
    if (spec.outcome !== undefined && task.outcome !== spec.outcome) problems.push(`${name} ended ${task.state} with outcome ${task.outcome ?? 'none'}, expected ${spec.outcome}`);
    if (spec.resultStatus !== undefined) {
      const status = statusOf(task.result);
      if (status !== spec.resultStatus) problems.push(`${name}'s result says ${status ?? 'nothing (no result)'}, expected status ${spec.resultStatus}`);
    }
    const counts: [string, unknown, NumberOrRange | undefined][] = [
      ['attempts', task.attempts, spec.attempts],
      ['generation', task.generation, spec.generation],
      ['deliveries', task.deliveries, spec.deliveries],
    ];
    for (const [field, value, wanted] of counts) {
      if (wanted !== undefined && !inRange(value, wanted)) problems.push(`${name} has ${field} ${String(value)}, expected ${describeRange(wanted)}`);
    }
    if (spec.deadLetter !== undefined) {
      const dead = run.deadLetters.some((letter) => letter.taskId === id);
      if (dead !== spec.deadLetter) problems.push(`${name} is ${dead ? '' : 'not '}in the dead-letter table, expected ${spec.deadLetter ? '' : 'not '}to be`);
    }
    return problems;
  },
};

/** The business status a result carries: `status`, or `answer.status` as the worker runtime stores it. */
function statusOf(result: unknown): string | undefined {
  if (typeof result !== 'object' || result === null) return undefined;
  const record = result as { status?: unknown; answer?: { status?: unknown } };
  if (typeof record.status === 'string') return record.status;
  return typeof record.answer?.status === 'string' ? record.answer.status : undefined;
}
