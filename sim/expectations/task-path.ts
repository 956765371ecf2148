import { z } from 'zod';
import type { TaskState } from '../../src/queue/types.ts';
import { SPEC_LIVE_STATES, SPEC_TERMINAL_STATES } from '../checkers/spec-rules.ts';
import { analyse, isTaskState } from '../checkers/timeline.ts';
import type { ExpectationKind } from './types.ts';
import { oneTaskOf } from './tasks.ts';

const STATES = [...SPEC_LIVE_STATES, ...SPEC_TERMINAL_STATES] as [TaskState, ...TaskState[]];

interface TaskPath {
  kind: 'task-path';
  /** The task's label. */
  task: string;
  /** The states it went through, in order, from its first (usually ready) to its last. */
  path: TaskState[];
  /** The path is the whole story (default); false: the states appear in this order, others may come between. */
  exact?: boolean;
}

/**
 * The states one task went through, in order, read from its event log (each event's `to`): e.g. seed
 * 000's lease table for one task, ready -> running -> uncertain -> ready -> running -> done, or a
 * superseded version's ready -> superseded (it never ran).
 */
export const taskPath: ExpectationKind<TaskPath> = {
  kind: 'task-path',
  class: 'safety',
  description: 'a named task went through exactly these states, in order (or, with exact: false, these in order among others)',
  schema: z.strictObject({
    kind: z.literal('task-path'),
    task: z.string().min(1),
    path: z.array(z.enum(STATES)).min(1),
    exact: z.boolean().optional(),
  }),
  check(spec, run) {
    const id = oneTaskOf(run, spec.task);
    if (typeof id === 'string') return [id];
    const path = statesOf(run, id);
    const shown = path.join(' -> ');
    const wanted = spec.path.join(' -> ');
    if (spec.exact === false) {
      let next = 0;
      for (const state of path) if (state === spec.path[next]) next++;
      return next === spec.path.length ? [] : [`task ${id} ('${spec.task}') went ${shown}; expected ${wanted} in that order`];
    }
    return shown === wanted ? [] : [`task ${id} ('${spec.task}') went ${shown}; expected exactly ${wanted}`];
  },
};

/** A task's states in order, one entry per change of state. */
export function statesOf(run: Parameters<typeof analyse>[0], taskId: number): TaskState[] {
  const states: TaskState[] = [];
  for (const event of analyse(run).eventsByTask.get(taskId) ?? []) {
    const to = event.data?.to;
    if (isTaskState(to) && states[states.length - 1] !== to) states.push(to);
  }
  return states;
}
