import { z } from 'zod';
import type { TaskView } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';

/**
 * Which tasks an expectation is about: every accepted task that matches all the given fields (no
 * field: every accepted task). Labels are what scenario files name tasks by (an explicit task's
 * label or topic, a flood's topic); tenants and a base-priority range select whole groups, e.g. "the
 * low-priority tasks" or "every tenant but the one that floods".
 */
export interface TaskSelector {
  /** Exactly these labels. */
  labels?: string[];
  /** Labels starting with this, e.g. 'flood-'. */
  labelPrefix?: string;
  /** Tasks of these tenants. */
  tenants?: string[];
  /** Tasks whose base priority is in this inclusive range. */
  priority?: [number, number];
  /** At least this many accepted tasks must match, or the expectation fails (a typo would otherwise pass); default 1. */
  minTasks?: number;
}

export const taskSelectorSchema = z.strictObject({
  labels: z.array(z.string().min(1)).min(1).optional(),
  labelPrefix: z.string().min(1).optional(),
  tenants: z.array(z.string().min(1)).min(1).optional(),
  priority: z
    .tuple([z.number().int().min(0).max(30), z.number().int().min(0).max(30)])
    .refine(([low, high]) => low <= high, { message: 'priority range [low, high] needs low <= high' })
    .optional(),
  minTasks: z.number().int().min(0).optional(),
});

export interface SelectedTask {
  id: number;
  label: string;
  /** The task as the final database holds it. */
  task: TaskView;
}

/** The accepted tasks a selector names, by id, with the label each was sent under. */
export function selectTasks(run: WorldResult, selector: TaskSelector = {}): SelectedTask[] {
  const byId = new Map(run.final.tasks.map((task) => [task.id, task]));
  const selected = new Map<number, SelectedTask>();
  for (const { arrival, result } of run.enqueued) {
    if (!result.ok || selected.has(result.taskId)) continue;
    const label = arrival.label ?? arrival.request.topic;
    const task = byId.get(result.taskId);
    if (task === undefined || !matches(selector, label, task)) continue;
    selected.set(result.taskId, { id: result.taskId, label, task });
  }
  return [...selected.values()].sort((a, b) => a.id - b.id);
}

function matches(selector: TaskSelector, label: string, task: TaskView): boolean {
  if (selector.labels !== undefined && !selector.labels.includes(label)) return false;
  if (selector.labelPrefix !== undefined && !label.startsWith(selector.labelPrefix)) return false;
  if (selector.tenants !== undefined && !selector.tenants.includes(task.tenant)) return false;
  if (selector.priority !== undefined && (task.priority < selector.priority[0] || task.priority > selector.priority[1])) return false;
  return true;
}

/** The message for a selection smaller than `minTasks` (default 1), or undefined when it is big enough. */
export function tooFew(selector: TaskSelector = {}, selected: readonly SelectedTask[]): string | undefined {
  const wanted = selector.minTasks ?? 1;
  if (selected.length >= wanted) return undefined;
  return `${describeSelector(selector)} matched ${selected.length} accepted task${selected.length === 1 ? '' : 's'}, expected at least ${wanted}`;
}

export function describeSelector(selector: TaskSelector = {}): string {
  const parts: string[] = [];
  if (selector.labels !== undefined) parts.push(`labels ${selector.labels.join(', ')}`);
  if (selector.labelPrefix !== undefined) parts.push(`labels '${selector.labelPrefix}*'`);
  if (selector.tenants !== undefined) parts.push(`tenants ${selector.tenants.join(', ')}`);
  if (selector.priority !== undefined) parts.push(`base priority ${selector.priority[0]}..${selector.priority[1]}`);
  return parts.length === 0 ? 'the selection (every task)' : `the selection (${parts.join('; ')})`;
}

/** A task's name in messages: its id and label. */
export function describeTask(selected: SelectedTask): string {
  return `task ${selected.id} ('${selected.label}')`;
}
