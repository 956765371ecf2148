import { z } from 'zod';
import { claimDecisions } from '../checkers/i5-priority.ts';
import type { ExpectationKind } from './types.ts';
import { describeTask, selectTasks, taskSelectorSchema, tooFew, type TaskSelector } from './task-selector.ts';

interface AgingOvertake {
  kind: 'aging-overtake';
  /** Which tasks; default every accepted task. */
  tasks?: TaskSelector;
  /** Each one's first claim passed over at least this many eligible tasks of higher base priority; default 1. */
  minPassed?: number;
}

/**
 * Aging, not an idle moment, is what started the selected tasks: at each one's first claim, eligible
 * ready tasks of higher base priority were waiting and were passed over (the claim replay of I5 says
 * which tasks were eligible at that instant). A starvation scenario states it so that a green run
 * proves the flood was still pressing when the low-priority task got its turn.
 */
export const agingOvertake: ExpectationKind<AgingOvertake> = {
  kind: 'aging-overtake',
  class: 'liveness',
  description: 'each selected task was first claimed over eligible tasks of higher base priority (aging, not an idle queue, started it)',
  schema: z.strictObject({
    kind: z.literal('aging-overtake'),
    tasks: taskSelectorSchema.optional(),
    minPassed: z.number().int().min(1).optional(),
  }),
  check(spec, run) {
    const selected = selectTasks(run, spec.tasks);
    const few = tooFew(spec.tasks, selected);
    if (few !== undefined) return [few];
    const wanted = spec.minPassed ?? 1;
    const firstClaims = new Map<number, ReturnType<typeof claimDecisions>[number]>();
    for (const decision of claimDecisions(run)) if (!firstClaims.has(decision.event.taskId)) firstClaims.set(decision.event.taskId, decision);
    const messages: string[] = [];
    for (const task of selected) {
      const decision = firstClaims.get(task.id);
      if (decision === undefined) {
        messages.push(`${describeTask(task)} was never claimed`);
        continue;
      }
      const passed = decision.candidates.filter((candidate) => candidate.track.priority > task.task.priority);
      if (passed.length < wanted) {
        messages.push(
          `${describeTask(task)} (base ${task.task.priority}) was first claimed at ${decision.event.at} over ${passed.length} eligible task${passed.length === 1 ? '' : 's'} of higher base priority, expected at least ${wanted}: the queue had room, aging did not decide it`,
        );
      }
    }
    return messages;
  },
};
