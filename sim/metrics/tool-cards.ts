import type { TaskEvent } from '../../src/queue/types.ts';

/**
 * What a client shows of one task's tool cards (R2, seed 002: "the front end folds the half-finished
 * step before task_resumed and merges tool cards by tool-call id"). Walking the task's events in order:
 * a task_resumed event names the checkpoint's event sequence, and every card after that sequence
 * belongs to the half-finished step, so it is folded away; then cards are merged by tool-call id.
 */
export interface FoldedToolCards {
  /** tool_result events in the log, before any folding. */
  emitted: number;
  /** Cards removed by task_resumed folds. */
  foldedByResume: number;
  /** Tool-call ids still shown more than once after the resume folds (merging by id hides them). */
  duplicatesAfterResume: string[];
  /** The cards shown in the end: one per tool-call id, in first-shown order. */
  shown: string[];
  /** task_resumed events whose checkpointEventSeq names no checkpoint event of the task: folding impossible. */
  unresolvedResumes: number[];
}

export function foldToolCards(taskEvents: readonly TaskEvent[]): FoldedToolCards {
  const events = [...taskEvents].sort((a, b) => a.seq - b.seq);
  const checkpointSeqs = new Set(events.filter((event) => event.type === 'checkpoint').map((event) => event.seq));
  let visible: { id: string; seq: number }[] = [];
  let emitted = 0;
  let foldedByResume = 0;
  const unresolvedResumes: number[] = [];
  for (const event of events) {
    if (event.type === 'task_resumed') {
      const checkpointSeq = event.data.checkpointEventSeq;
      if (typeof checkpointSeq !== 'number' || !checkpointSeqs.has(checkpointSeq) || checkpointSeq >= event.seq) {
        unresolvedResumes.push(event.seq);
        continue;
      }
      const kept = visible.filter((card) => card.seq <= checkpointSeq);
      foldedByResume += visible.length - kept.length;
      visible = kept;
    } else if (event.type === 'tool_result') {
      emitted++;
      visible.push({ id: String(event.data.toolCallId), seq: event.seq });
    }
  }
  const counts = new Map<string, number>();
  for (const card of visible) counts.set(card.id, (counts.get(card.id) ?? 0) + 1);
  return {
    emitted,
    foldedByResume,
    duplicatesAfterResume: [...counts].filter(([, n]) => n > 1).map(([id]) => id),
    shown: [...counts.keys()],
    unresolvedResumes,
  };
}
