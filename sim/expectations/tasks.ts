import type { WorldResult } from '../world.ts';

/**
 * The task ids a label names in one run: an explicit task's label (or its topic), a flood's topic. A
 * resent or duplicate request names the same id; a label with several versions names each version.
 */
export function taskIdsOf(run: WorldResult, label: string): number[] {
  const ids = new Set<number>();
  for (const { arrival, result } of run.enqueued) {
    if ((arrival.label ?? arrival.request.topic) === label && result.ok) ids.add(result.taskId);
  }
  return [...ids].sort((a, b) => a - b);
}

/** The one task a label names, or a message saying why there is not exactly one. */
export function oneTaskOf(run: WorldResult, label: string): number | string {
  const ids = taskIdsOf(run, label);
  if (ids.length === 1) return ids[0]!;
  return ids.length === 0 ? `no accepted task is labelled '${label}'` : `label '${label}' names ${ids.length} tasks (${ids.join(', ')}); give each version its own label`;
}
