import type { WorldResult } from '../world.ts';
import { ERROR_POINTS, KILL_POINTS, TASKLESS_POINTS } from '../faults/point-scope.ts';
import { SPEC_MOVES, SPEC_TERMINAL_STATES } from './spec-rules.ts';
import { analyse } from './timeline.ts';

/**
 * Issue 15 item 4: which windows of a run a fault landed in, and which pairs of state-machine moves a
 * task combined, so a check run can say how much of each it covered.
 *
 * A window is an await point of the worker runtime (faults/point-scope.ts: the model call, each tool
 * call, after an effect, between the checkpoints, after the terminal write, and every transaction
 * boundary) with what hit it: `kill@<point>` (the process died at the point), `kill-during@<point>`
 * (it died while the call after the point was in flight), `pause@<point>` (it froze there),
 * `jump@<point>` (the clock jumped there, faults/clock-jump-at.ts), `cancel@<point>` (the operator
 * cancelled the task there, faults/cancel-at.ts; only transaction boundaries that name a task).
 *
 * A path pair is two distinct moves of the SPEC's state machine (spec-rules.ts, restated from the SPEC,
 * not src's table) that one task's life combined, e.g. `running>uncertain + uncertain>ready`. A task
 * enters a terminal state once, so two moves into terminal states never combine: those pairs are not
 * in the universe.
 */

const FAULTS = ['kill', 'kill-during', 'pause', 'jump', 'cancel'] as const;

/** Every window a run can hit: a cancel only at a point that names its task, a failed call (error-at) only at a model or tool call. */
export const ALL_WINDOWS: readonly string[] = [
  ...FAULTS.flatMap((fault) => KILL_POINTS.filter((point) => fault !== 'cancel' || !TASKLESS_POINTS.has(point)).map((point) => `${fault}@${point}`)),
  ...ERROR_POINTS.map((point) => `fail@${point}`),
];

const MOVES = SPEC_MOVES.map((move) => `${move.from ?? 'new'}>${move.to}`);
const TERMINAL = new Set<string>(SPEC_TERMINAL_STATES);

function pairName(a: string, b: string): string {
  return a < b ? `${a} + ${b}` : `${b} + ${a}`;
}

/** Every pair of moves one task can combine: all pairs of distinct moves but two that both end the task. */
export const ALL_PATH_PAIRS: readonly string[] = SPEC_MOVES.flatMap((a, i) =>
  SPEC_MOVES.slice(i + 1)
    .filter((b) => !(TERMINAL.has(a.to) && TERMINAL.has(b.to)))
    .map((b) => pairName(MOVES[i]!, `${b.from ?? 'new'}>${b.to}`)),
).sort();

const POINTS = new Set<string>(KILL_POINTS);

/** The window a kill or pause note names, if it was a point fault's (a kill's reason is `point` or `point+Nms`). */
function windowOf(kind: string, data: { reason?: unknown; at?: unknown } | undefined): string | undefined {
  if (kind === 'kill' && typeof data?.reason === 'string') {
    const [point, delay] = data.reason.split('+');
    if (point !== undefined && POINTS.has(point)) return `${delay === undefined ? 'kill' : 'kill-during'}@${point}`;
  }
  if (kind === 'pause' && typeof data?.at === 'string' && POINTS.has(data.at)) return `pause@${data.at}`;
  if (kind === 'clock-jump' && typeof data?.at === 'string' && POINTS.has(data.at)) return `jump@${data.at}`;
  if (kind === 'cancel-at' && typeof data?.at === 'string' && POINTS.has(data.at)) return `cancel@${data.at}`;
  if (kind === 'error-at' && typeof data?.at === 'string' && POINTS.has(data.at)) return `fail@${data.at}`;
  return undefined;
}

export interface WindowTally {
  windows: Record<string, number>;
  pairs: Record<string, number>;
}

/** The windows this run's faults hit and the move pairs its tasks combined, with how often. */
export function windowTally(world: WorldResult): WindowTally {
  const windows: Record<string, number> = {};
  for (const entry of world.history.entries()) {
    if (entry.type !== 'note') continue;
    const window = windowOf(entry.kind, entry.data as { reason?: unknown; at?: unknown } | undefined);
    if (window !== undefined) windows[window] = (windows[window] ?? 0) + 1;
  }
  const analysis = analyse(world);
  const pairs: Record<string, number> = {};
  for (const events of analysis.eventsByTask.values()) {
    const moves = new Set<string>();
    for (const event of events) {
      const position = analysis.positionOfEvent.get(event.id)!;
      const before = analysis.stateBefore[position];
      const after = analysis.stateAfter[position];
      if (after !== undefined && before !== after) moves.add(`${before ?? 'new'}>${after}`);
    }
    const list = [...moves].sort();
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        const name = pairName(list[i]!, list[j]!);
        pairs[name] = (pairs[name] ?? 0) + 1;
      }
    }
  }
  return { windows, pairs };
}
