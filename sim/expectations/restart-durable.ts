import { z } from 'zod';
import type { TaskEvent } from '../../src/queue/types.ts';
import type { HistoryEntry, NoteEntry } from '../history.ts';
import { analyse, evOf } from '../checkers/timeline.ts';
import type { ExpectationKind } from './types.ts';

interface RestartDurable {
  kind: 'restart-durable';
  /** The run had at least this many restarts; default 1. */
  minRestarts?: number;
}

/** The event a successful write of the holder (Q8) leaves in the task's log. */
const ENDS_OF_RUN: Record<string, ReadonlySet<string>> = {
  complete: new Set(['completed']),
  fail: new Set(['retry_scheduled', 'failed', 'cancelled']),
};

/**
 * Nothing acknowledged is lost across a restart (Q18, S4): the scheduler closed the database and
 * reopened it, and everything the queue had answered `ok` before the restart is still in the final
 * database. The event log up to the last cursor the history saw before each restart is complete
 * (event ids are the log's rowids, so ids 1..cursor must all be there); every task whose enqueue was
 * acknowledged exists; every acknowledged claim left its `claimed` event for that generation; every
 * acknowledged complete or fail left the event that ended that generation's run.
 */
export const restartDurable: ExpectationKind<RestartDurable> = {
  kind: 'restart-durable',
  class: 'safety',
  description: 'every write the queue acknowledged before a restart (enqueue, claim, complete, fail, the event log) is in the final database',
  schema: z.strictObject({
    kind: z.literal('restart-durable'),
    minRestarts: z.number().int().min(1).optional(),
  }),
  check(spec, run) {
    const entries = run.history.entries();
    const restarts = entries.filter((entry): entry is NoteEntry => entry.type === 'note' && entry.kind === 'restart');
    const minRestarts = spec.minRestarts ?? 1;
    if (restarts.length < minRestarts) return [`the scheduler restarted ${restarts.length} time(s), expected at least ${minRestarts}`];
    const analysis = analyse(run);
    const problems: string[] = [];
    const lastRestart = restarts[restarts.length - 1]!.index;
    const cursor = analysis.cursorBefore[lastRestart] ?? 0;
    const kept = run.events.filter((event) => event.id <= cursor).length;
    if (kept < cursor) problems.push(`the event log had reached id ${cursor} before the last restart; the final database holds ${kept} of those events`);
    const byTask = analysis.eventsByTask;
    for (const entry of entries) {
      if (entry.index >= lastRestart) break;
      if (entry.type !== 'ok' || entry.taskId === undefined) continue;
      const lost = lostWrite(entry, byTask.get(entry.taskId) ?? [], analysis.tasks.has(entry.taskId));
      if (lost !== undefined) problems.push(`${entry.actor}'s ${entry.op} of task ${entry.taskId}${entry.generation === undefined ? '' : ` (generation ${entry.generation})`} at +${entry.timeMs - run.startMs} ms was acknowledged before a restart, but ${lost}`);
      if (problems.length >= 10) break;
    }
    return problems;
  },
};

/** What an acknowledged write should have left and did not, or undefined. */
function lostWrite(entry: HistoryEntry & { type: 'ok' }, events: readonly TaskEvent[], exists: boolean): string | undefined {
  if (entry.op === 'enqueue') return exists ? undefined : 'the task is not in the final database';
  const generation = entry.generation;
  if (generation === undefined) return undefined;
  const ev = evOf(entry);
  const upTo = (event: TaskEvent) => ev === undefined || event.id <= ev;
  if (entry.op === 'claim') {
    return events.some((event) => event.type === 'claimed' && event.data.generation === generation && upTo(event)) ? undefined : 'its claimed event is not in the final database';
  }
  const ends = ENDS_OF_RUN[entry.op];
  if (ends === undefined) return undefined;
  return events.some((event) => ends.has(event.type) && event.generation === generation && upTo(event)) ? undefined : `no ${[...ends].join('/')} event of that generation is in the final database`;
}
