import { z } from 'zod';
import type { TaskState } from '../../src/queue/types.ts';
import { SPEC_LIVE_STATES, SPEC_TERMINAL_STATES } from '../checkers/spec-rules.ts';
import type { ExpectationKind } from './types.ts';
import { oneTaskOf } from './tasks.ts';

interface FinalState {
  kind: 'final-state';
  /** The task's label (an explicit task's label, or its topic). */
  task: string;
  /** The state it must end in; a list means any of them. */
  state: TaskState | TaskState[];
}

const STATES = [...SPEC_LIVE_STATES, ...SPEC_TERMINAL_STATES] as [TaskState, ...TaskState[]];

/** The task ends the run in the given state (e.g. a superseded version ends `superseded`). */
export const finalState: ExpectationKind<FinalState> = {
  kind: 'final-state',
  class: 'safety',
  description: 'a named task ends the run in the given state (or one of the given states)',
  schema: z.strictObject({
    kind: z.literal('final-state'),
    task: z.string().min(1),
    state: z.union([z.enum(STATES), z.array(z.enum(STATES)).min(1)]),
  }),
  check(spec, run) {
    const id = oneTaskOf(run, spec.task);
    if (typeof id === 'string') return [id];
    const task = run.final.tasks.find((candidate) => candidate.id === id);
    const wanted = Array.isArray(spec.state) ? spec.state : [spec.state];
    if (task === undefined) return [`task ${id} ('${spec.task}') is not in the final database`];
    return wanted.includes(task.state) ? [] : [`task ${id} ('${spec.task}') ended ${task.state}, expected ${wanted.join(' or ')}`];
  },
};
