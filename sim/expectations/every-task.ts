import { z } from 'zod';
import type { TaskState } from '../../src/queue/types.ts';
import { SPEC_LIVE_STATES, SPEC_TERMINAL_STATES } from '../checkers/spec-rules.ts';
import type { ExpectationKind } from './types.ts';
import { labelsById, nameOf } from './values.ts';

const STATES = [...SPEC_LIVE_STATES, ...SPEC_TERMINAL_STATES] as [TaskState, ...TaskState[]];

interface EveryTask {
  kind: 'every-task';
  /** The state every task ends in; a list means any of them. */
  state: TaskState | TaskState[];
  /** Only this tenant's tasks; default: all. */
  tenant?: string;
  /** Each task ended with this outcome too (e.g. done, not stale_input). */
  outcome?: 'done' | 'stale_input' | 'cancelled' | 'interrupted';
  /** At least this many tasks are counted (guards against a run that accepted nothing); default 1. */
  atLeast?: number;
}

/**
 * Every accepted task (of a tenant) ends the run in the given state(s), e.g. "every task done" after
 * many workers raced for few slots. I11 already demands a terminal state; this names which one.
 */
export const everyTask: ExpectationKind<EveryTask> = {
  kind: 'every-task',
  class: 'liveness',
  description: 'every accepted task (of a tenant) ends the run in the given state(s) and outcome',
  schema: z.strictObject({
    kind: z.literal('every-task'),
    state: z.union([z.enum(STATES), z.array(z.enum(STATES)).min(1)]),
    tenant: z.string().min(1).optional(),
    outcome: z.enum(['done', 'stale_input', 'cancelled', 'interrupted']).optional(),
    atLeast: z.number().int().min(0).optional(),
  }),
  check(spec, run) {
    const labels = labelsById(run);
    const wanted = Array.isArray(spec.state) ? spec.state : [spec.state];
    const tasks = run.final.tasks.filter((task) => spec.tenant === undefined || task.tenant === spec.tenant);
    const problems: string[] = [];
    const atLeast = spec.atLeast ?? 1;
    if (tasks.length < atLeast) problems.push(`${tasks.length} task(s)${spec.tenant === undefined ? '' : ` of tenant ${spec.tenant}`} in the final database, expected at least ${atLeast}`);
    const wrong = tasks.filter((task) => !wanted.includes(task.state) || (spec.outcome !== undefined && task.outcome !== spec.outcome));
    for (const task of wrong.slice(0, 5)) problems.push(`${nameOf(labels, task.id)} ended ${task.state}${task.outcome === undefined ? '' : ` (${task.outcome})`}, expected ${wanted.join(' or ')}${spec.outcome === undefined ? '' : ` (${spec.outcome})`}`);
    if (wrong.length > 5) problems.push(`... and ${wrong.length - 5} more`);
    return problems;
  },
};
