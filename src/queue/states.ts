import { InvariantError } from './errors.ts';
import type { TaskState } from './types.ts';

/**
 * The task state machine, in one place. Every state change the queue makes is checked against this
 * table before it is written, and every change appends the event named here (Q15).
 *
 *   (enqueue) --> ready --claim--> running --complete--> done
 *                   |  ^              |  \--fail--> ready (retry) | failed
 *                   |  |              |  \--lease passes--> uncertain --confirmStopped--> ready | failed
 *                   |  \--------------+----------------------------------/
 *                   \--> superseded | cancelled | expired | failed (retry age)
 */
export const TRANSITIONS: Readonly<Record<TaskState, readonly TaskState[]>> = {
  ready: ['running', 'superseded', 'cancelled', 'expired', 'failed'],
  running: ['done', 'ready', 'failed', 'uncertain', 'cancelled', 'expired'],
  uncertain: ['ready', 'failed', 'cancelled', 'expired'],
  done: [],
  failed: [],
  superseded: [],
  cancelled: [],
  expired: [],
};

/** States that hold a concurrency slot (Q6: uncertain keeps its slot). */
export const OCCUPYING_STATES: readonly TaskState[] = ['running', 'uncertain'];

/** States counted against capacity (Q3). */
export const LIVE_STATES: readonly TaskState[] = ['ready', 'running', 'uncertain'];

export const TERMINAL_STATES: readonly TaskState[] = ['done', 'failed', 'superseded', 'cancelled', 'expired'];

export function isTerminal(state: TaskState): boolean {
  return TRANSITIONS[state].length === 0;
}

export function canTransition(from: TaskState, to: TaskState): boolean {
  return TRANSITIONS[from].includes(to);
}

/** Throws if `from -> to` is not an edge of the state machine: a write that would break it is a bug. */
export function assertTransition(taskId: number, from: TaskState, to: TaskState): void {
  if (!canTransition(from, to)) {
    throw new InvariantError(`task ${taskId}: illegal transition ${from} -> ${to}`);
  }
}
