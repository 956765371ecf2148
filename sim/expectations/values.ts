import { z } from 'zod';
import type { WorldResult } from '../world.ts';

/**
 * Small pieces the expectation kinds share: a number that is either exact or a [min, max] range, and
 * the label of a task id (the reverse of taskIdsOf).
 */

/** An exact integer, or an inclusive [min, max] range of integers. */
export type NumberOrRange = number | [number, number];

export const numberOrRange = z.union([
  z.number().int(),
  z
    .tuple([z.number().int(), z.number().int()])
    .refine(([low, high]) => low <= high, { message: 'expected [min, max] with min <= max' }),
]);

export function inRange(value: unknown, wanted: NumberOrRange): boolean {
  if (typeof value !== 'number') return false;
  return typeof wanted === 'number' ? value === wanted : value >= wanted[0] && value <= wanted[1];
}

export function describeRange(wanted: NumberOrRange): string {
  return typeof wanted === 'number' ? String(wanted) : `in [${wanted[0]}, ${wanted[1]}]`;
}

/** Each accepted task's label (an explicit task's label, else its topic), by task id. */
export function labelsById(run: WorldResult): Map<number, string> {
  const labels = new Map<number, string>();
  for (const { arrival, result } of run.enqueued) {
    if (result.ok && !labels.has(result.taskId)) labels.set(result.taskId, arrival.label ?? arrival.request.topic);
  }
  return labels;
}

/** `task 7 ('H1')`, or `task 7` for a task no arrival names. */
export function nameOf(labels: ReadonlyMap<number, string>, taskId: number): string {
  const label = labels.get(taskId);
  return label === undefined ? `task ${taskId}` : `task ${taskId} ('${label}')`;
}
