import { z } from 'zod';
import type { TaskState } from '../../src/queue/types.ts';
import { SPEC_LIVE_STATES, SPEC_TERMINAL_STATES } from '../checkers/spec-rules.ts';
import type { NoteEntry } from '../history.ts';
import { analyse, isTaskState, stateAt, wallTimeAt, type Analysis } from '../checkers/timeline.ts';
import type { ExpectationKind } from './types.ts';

/**
 * What a task can be doing when the scheduler goes down: a task state, or one of two groupings.
 * `retry-waiting` is a ready task whose retry backoff has not passed yet (Q16), and `ready` then means
 * ready and claimable by time; `terminal` is any terminal state.
 */
const SITUATIONS = [...SPEC_LIVE_STATES, 'retry-waiting', ...SPEC_TERMINAL_STATES, 'terminal'] as const;
type Situation = (typeof SITUATIONS)[number];

interface StatesAtRestart {
  kind: 'states-at-restart';
  /** Each of these had at least one task in it at the moment of the restart. */
  states: Situation[];
  /**
   * 'any' (default): some single restart saw all of them; 'each': every restart did; 'all': every state
   * was seen by some restart (not necessarily the same one); a number: that restart (from 1).
   */
  restart?: 'any' | 'each' | 'all' | number;
  /** The run had at least this many restarts; default 1. */
  minRestarts?: number;
}

const TERMINAL = new Set<TaskState | undefined>(SPEC_TERMINAL_STATES);

/**
 * The scheduler restarted (S4: the database closed and reopened with only committed state) while
 * tasks were in the given states, read from the event log committed before the restart note (the
 * history's event cursor at that instant). This is what makes a restart scenario prove something:
 * "at the restart, tasks were ready, running, uncertain, waiting out a retry backoff and finished".
 */
export const statesAtRestart: ExpectationKind<StatesAtRestart> = {
  kind: 'states-at-restart',
  class: 'liveness',
  description: 'the scheduler restarted while tasks were in each of the given states (ready, running, uncertain, retry-waiting, terminal, ...)',
  schema: z.strictObject({
    kind: z.literal('states-at-restart'),
    states: z.array(z.enum(SITUATIONS)).min(1),
    restart: z.union([z.enum(['any', 'each', 'all']), z.number().int().min(1)]).optional(),
    minRestarts: z.number().int().min(1).optional(),
  }),
  check(spec, run) {
    const restarts = run.history.entries().filter((entry): entry is NoteEntry => entry.type === 'note' && entry.kind === 'restart');
    const minRestarts = spec.minRestarts ?? 1;
    if (restarts.length < minRestarts) return [`the scheduler restarted ${restarts.length} time(s), expected at least ${minRestarts}`];
    const analysis = analyse(run);
    const seen = restarts.map((note) => situationsAt(analysis, note));
    const missingAt = (index: number) => spec.states.filter((state) => (seen[index]!.get(state) ?? 0) === 0);
    const describe = (index: number) => {
      const counts = [...seen[index]!].map(([state, count]) => `${state} ${count}`).join(', ');
      return `restart ${index + 1} at +${restarts[index]!.timeMs - run.startMs} ms saw ${counts === '' ? 'no tasks' : counts}`;
    };
    const which = spec.restart ?? 'any';
    if (typeof which === 'number') {
      if (which > restarts.length) return [`there is no restart ${which}: the scheduler restarted ${restarts.length} time(s)`];
      const missing = missingAt(which - 1);
      return missing.length === 0 ? [] : [`${describe(which - 1)}; none ${missing.join(', ')}`];
    }
    if (which === 'all') {
      const never = spec.states.filter((state) => seen.every((counts) => (counts.get(state) ?? 0) === 0));
      return never.length === 0 ? [] : [`no restart saw a task ${never.join(', ')}: ${restarts.map((_, index) => describe(index)).join(' | ')}`];
    }
    const failing = restarts.map((_, index) => index).filter((index) => missingAt(index).length > 0);
    if (which === 'each') return failing.map((index) => `${describe(index)}; none ${missingAt(index).join(', ')}`);
    if (failing.length < restarts.length) return [];
    return [`no restart saw tasks in all of ${spec.states.join(', ')}: ${restarts.map((_, index) => `${describe(index)}; none ${missingAt(index).join(', ')}`).join(' | ')}`];
  },
};

/** How many tasks were in each situation when the restart note was written. */
function situationsAt(analysis: Analysis, note: NoteEntry): Map<Situation, number> {
  const cursor = analysis.cursorBefore[note.index] ?? 0;
  const now = wallTimeAt(analysis, note);
  const counts = new Map<Situation, number>();
  const bump = (situation: Situation) => counts.set(situation, (counts.get(situation) ?? 0) + 1);
  for (const [taskId, events] of analysis.eventsByTask) {
    const { state } = stateAt(analysis, taskId, cursor);
    if (state === undefined) continue;
    // The transition that put the task where it is: a retry leaves it ready until its backoff has passed.
    const entered = events.findLast((event) => event.id <= cursor && isTaskState(event.data.to));
    const backoffMs = entered?.data.backoffMs;
    if (state === 'ready' && entered?.type === 'retry_scheduled' && typeof backoffMs === 'number' && entered.at + backoffMs > now) bump('retry-waiting');
    else bump(state);
    if (TERMINAL.has(state)) bump('terminal');
  }
  return counts;
}
