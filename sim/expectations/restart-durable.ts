import { z } from 'zod';
import type { TaskEvent } from '../../src/queue/types.ts';
import type { Durability } from '../../src/store/durability.ts';
import type { HistoryEntry, NoteEntry } from '../history.ts';
import { analyse, evOf } from '../checkers/timeline.ts';
import type { ExpectationKind } from './types.ts';

interface RestartDurable {
  kind: 'restart-durable';
  /** The run had at least this many restarts (or power losses, with `across`); default 1. */
  minRestarts?: number;
  /** The outage judged: a scheduler restart (a process crash, the default) or a power loss of the host. */
  across?: 'restart' | 'power-loss';
  /** The store ran at this durability, as it reports it (WorldResult.durability). */
  durability?: Durability;
}

const OUTAGES = ['restart', 'power-loss'] as const;
/** The durability levels (src/store/durability.ts), restated: the judge imports no value from src/. */
const DURABILITIES = ['acknowledged', 'every_commit', 'process_crash'] as const satisfies readonly Durability[];

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
 *
 * `across: "power-loss"` asks the same of power losses, which is what durability every_commit promises
 * (src/store/durability.ts: nothing committed is lost): each power-loss note rolled back no commit, and
 * the log holds every event id the history saw before the last one (the cursor uncapped by what the
 * database came back with). `durability` asks that the SQLite store really ran at that level (on PGlite,
 * where PostgreSQL's own settings decide, it is not asked).
 */
export const restartDurable: ExpectationKind<RestartDurable> = {
  kind: 'restart-durable',
  class: 'safety',
  description: 'every write the queue acknowledged before a restart (or a power loss) (enqueue, claim, complete, fail, the event log) is in the final database',
  schema: z.strictObject({
    kind: z.literal('restart-durable'),
    minRestarts: z.number().int().min(1).optional(),
    across: z.enum(OUTAGES, { error: `expected one of ${OUTAGES.map((outage) => JSON.stringify(outage)).join(', ')}` }).optional(),
    durability: z.enum(DURABILITIES, { error: `expected one of ${DURABILITIES.map((level) => JSON.stringify(level)).join(', ')}` }).optional(),
  }),
  check(spec, run) {
    const entries = run.history.entries();
    const across = spec.across ?? 'restart';
    const problems: string[] = [];
    // On PGlite (the PostgreSQL store) a durability is not the store's to set: PostgreSQL decides what a commit survives by its own settings.
    if (spec.durability !== undefined && run.store !== 'pglite' && run.durability !== spec.durability) problems.push(`the store ran at durability ${run.durability ?? '(none: not a file the store set a level on)'}, expected ${spec.durability}`);
    const restarts = entries.filter((entry): entry is NoteEntry => entry.type === 'note' && entry.kind === across);
    const minRestarts = spec.minRestarts ?? 1;
    if (restarts.length < minRestarts) return [...problems, across === 'restart' ? `the scheduler restarted ${restarts.length} time(s), expected at least ${minRestarts}` : `the host lost power ${restarts.length} time(s), expected at least ${minRestarts}`];
    const analysis = analyse(run);
    const lastRestart = restarts[restarts.length - 1]!.index;
    let cursor = analysis.cursorBefore[lastRestart] ?? 0;
    if (across === 'power-loss') {
      for (const loss of restarts) {
        const lost = ((loss.data as { lost?: { operation?: unknown }[] } | undefined)?.lost ?? []).map((commit) => String(commit.operation));
        if (lost.length > 0) problems.push(`the power loss at +${loss.timeMs - run.startMs} ms rolled back ${lost.length} commit(s): ${lost.join(', ')}`);
      }
      // The cursor analysis gives is capped at what the database came back with; here nothing may be lost, so the history's own newest cursor counts.
      for (const entry of entries) {
        if (entry.index >= lastRestart) break;
        const ev = entry.type === 'ok' || entry.type === 'fail' ? evOf(entry) : undefined;
        if (ev !== undefined && ev > cursor) cursor = ev;
      }
    }
    const kept = run.events.filter((event) => event.id <= cursor).length;
    if (kept < cursor) problems.push(`the event log had reached id ${cursor} before the last ${across}; the final database holds ${kept} of those events`);
    const byTask = analysis.eventsByTask;
    for (const entry of entries) {
      if (entry.index >= lastRestart) break;
      if (entry.type !== 'ok' || entry.taskId === undefined) continue;
      const lost = lostWrite(entry, byTask.get(entry.taskId) ?? [], analysis.tasks.has(entry.taskId));
      if (lost !== undefined) problems.push(`${entry.actor}'s ${entry.op} of task ${entry.taskId}${entry.generation === undefined ? '' : ` (generation ${entry.generation})`} at +${entry.timeMs - run.startMs} ms was acknowledged before a ${across}, but ${lost}`);
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
