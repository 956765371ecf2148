import { z } from 'zod';
import type { TaskState } from '../../src/queue/types.ts';
import { SPEC_TERMINAL_STATES } from '../checkers/spec-rules.ts';
import { analyse } from '../checkers/timeline.ts';
import type { WorldResult } from '../world.ts';
import type { ExpectationKind } from './types.ts';
import { describeTask, selectTasks, taskSelectorSchema, tooFew, type SelectedTask, type TaskSelector } from './task-selector.ts';

/** Base priorities are 0..30 (Q4): aging has to lift a base-b task by 30 - b points to reach the top. */
const TOP_PRIORITY = 30;

interface MaxWait {
  kind: 'max-wait';
  /** Which tasks; default every accepted task. */
  tasks?: TaskSelector;
  /** A fixed bound on the wait from enqueue to first claim. */
  maxMs?: number;
  /**
   * The bound aging implies (Q4), per task: (30 - base) * agingPeriodMs + agingSlackMs. After
   * (30 - base) periods the task outranks every newcomer; the slack is the time the queue needs to
   * drain the work that arrived before that moment (the scenario states it).
   */
  agingSlackMs?: number;
}

const TERMINAL = new Set<TaskState>(SPEC_TERMINAL_STATES);

/**
 * The wait from enqueue to first claim (Q7's queue wait, on the core's clock) of the selected tasks is
 * within a bound. A selected task that never started fails unless it ended (superseded, expired,
 * cancelled) within its bound; one still waiting when the run ended fails.
 */
export const maxWait: ExpectationKind<MaxWait> = {
  kind: 'max-wait',
  class: 'liveness',
  description: 'the selected tasks start (first claim) within maxMs of enqueue, or within the aging bound (30 - base) * agingPeriodMs + agingSlackMs',
  schema: z
    .strictObject({
      kind: z.literal('max-wait'),
      tasks: taskSelectorSchema.optional(),
      maxMs: z.number().int().min(0).optional(),
      agingSlackMs: z.number().int().min(0).optional(),
    })
    .refine((spec) => (spec.maxMs === undefined) !== (spec.agingSlackMs === undefined), {
      message: 'give exactly one of maxMs (a fixed bound) or agingSlackMs (the aging bound plus slack)',
    }),
  check(spec, run) {
    const selected = selectTasks(run, spec.tasks);
    const few = tooFew(spec.tasks, selected);
    if (few !== undefined) return [few];
    const messages: string[] = [];
    for (const task of selected) {
      const bound = boundOf(spec, run, task);
      if (typeof bound === 'string') {
        messages.push(bound);
        continue;
      }
      const wait = waitOf(run, task);
      if (wait.startedAt !== undefined) {
        const waited = wait.startedAt - task.task.enqueuedAt;
        if (waited > bound.ms) messages.push(`${describeTask(task)} (base ${task.task.priority}) waited ${waited} ms for its first claim, bound ${bound.ms} ms${bound.why}`);
      } else if (wait.endedAt !== undefined) {
        const waited = wait.endedAt - task.task.enqueuedAt;
        if (waited > bound.ms) messages.push(`${describeTask(task)} (base ${task.task.priority}) never started: it waited ${waited} ms and ended ${task.task.state}, bound ${bound.ms} ms${bound.why}`);
      } else {
        messages.push(`${describeTask(task)} (base ${task.task.priority}) never started: it was still waiting when the run ended, bound ${bound.ms} ms${bound.why}`);
      }
    }
    return messages;
  },
};

function boundOf(spec: MaxWait, run: WorldResult, task: SelectedTask): { ms: number; why: string } | string {
  if (spec.maxMs !== undefined) return { ms: spec.maxMs, why: '' };
  const { config } = analyse(run);
  const lift = TOP_PRIORITY - task.task.priority;
  if (config.agingCap < lift) {
    return `${describeTask(task)} (base ${task.task.priority}): agingCap ${config.agingCap} < ${lift}, so aging alone never lifts it to the top score and there is no aging bound`;
  }
  const slack = spec.agingSlackMs ?? 0;
  return { ms: lift * config.agingPeriodMs + slack, why: ` ((30 - ${task.task.priority}) * ${config.agingPeriodMs} + ${slack} slack)` };
}

/** When the task was first claimed, or else when it ended without ever running (core clock). */
function waitOf(run: WorldResult, task: SelectedTask): { startedAt?: number; endedAt?: number } {
  for (const event of analyse(run).eventsByTask.get(task.id) ?? []) {
    if (event.type === 'claimed') return { startedAt: event.at };
    if (isTerminal(event.data.to)) return { endedAt: event.at };
  }
  return {};
}

function isTerminal(to: unknown): boolean {
  return typeof to === 'string' && TERMINAL.has(to as TaskState);
}
