import type { TaskEvent, TaskState, TaskView } from '../../src/queue/types.ts';
import type { HistoryEntry } from '../history.ts';
import type { Violation } from '../report-types.ts';
import type { WorldResult } from '../world.ts';
import { specConfig, specIsTaskState, type JudgeConfig } from './spec-rules.ts';

/**
 * The shared reading of a finished run that every checker starts from. The event log is replayed once
 * in commit order (events.id) to know each task's state and lease holder before and after every event;
 * history entries are placed in that order by their `ev` cursor (the newest committed event id when
 * the call returned), and on the wall clock the core saw by adding up the clock-jump notes.
 *
 * It is computed once per WorldResult and memoised, so fourteen checkers cost one replay.
 */

export interface Holder {
  workerId: string;
  generation: number;
}

export interface Analysis {
  config: JudgeConfig;
  tasks: ReadonlyMap<number, TaskView>;
  /** Each task's events in commit order. */
  eventsByTask: ReadonlyMap<number, readonly TaskEvent[]>;
  /** Per position in `world.events`: the task's state just before and just after that event. */
  stateBefore: readonly (TaskState | undefined)[];
  stateAfter: readonly (TaskState | undefined)[];
  /** Per position: the lease holder before / after the event, only while the task is running. */
  holderBefore: readonly (Holder | undefined)[];
  holderAfter: readonly (Holder | undefined)[];
  /** Position in `world.events` of an event id. */
  positionOfEvent: ReadonlyMap<number, number>;
  /** Per history entry: the event cursor known before the entry (the largest `ev` recorded earlier). */
  cursorBefore: readonly number[];
  /** Per history entry: the wall-clock skew (sum of clock jumps) in force at that entry. */
  skewAt: readonly number[];
  /**
   * Power losses (S4, faults/power-loss.ts): the history index of each `power-loss` note, and the invoke
   * indexes of the calls whose commits it rolled back (the note's `lost`). See `rolledBack` and `evAt`.
   */
  powerLosses: readonly { index: number; cursor: number; lost: readonly { invoke: number; operation: string }[] }[];
  undoneInvokes: ReadonlySet<number>;
  /** Per history entry: the event cursor of the next power loss's recovered database (Infinity if none follows). */
  capAt: readonly number[];
}

/**
 * The writes that may roll back on a power loss under the default durability, as src/store/durability.ts
 * documents them (its LOSABLE_WRITES), restated here so the judge does not take its word from the code
 * it judges: a claim, heartbeat, checkpoint or event append, a sweep (expireLeases, reconcile) and a
 * confirmation may be undone, and so may a further reservation (A1: `reserve`, lost with the model call it was for);
 * a pause or resume of a tenant (synced) may not, an acknowledged enqueue (Q1), effect-ledger row (R3), cancel (Q13) or end
 * of a run may not.
 */
export const MAY_ROLL_BACK: ReadonlySet<string> = new Set(['claim', 'heartbeat', 'checkpoint', 'appendEvent', 'expireLeases', 'reconcile', 'confirmStopped', 'reserve']);

/**
 * True when the entry's place in the log was undone by a power loss: an ok whose commit the power-loss
 * note names as lost, or an answer recorded before a power loss at a cursor beyond what the database
 * came back with (the events it saw are gone, and their ids are given to new events). Such an entry says
 * nothing about the final log; whether its loss was allowed is judged on its own (MAY_ROLL_BACK).
 */
export function rolledBack(analysis: Analysis, entry: HistoryEntry): boolean {
  if (entry.type === 'ok' && analysis.undoneInvokes.has(entry.invokeIndex)) return true;
  if (entry.type !== 'ok' && entry.type !== 'fail') return false;
  const ev = evOf(entry);
  return ev !== undefined && ev > (analysis.capAt[entry.index] ?? Number.POSITIVE_INFINITY);
}

/** The entry's cursor placed in the final log: `ev`, capped at what a later power loss kept. */
export function evAt(analysis: Analysis, entry: HistoryEntry): number | undefined {
  const ev = evOf(entry);
  return ev === undefined ? undefined : Math.min(ev, analysis.capAt[entry.index] ?? Number.POSITIVE_INFINITY);
}

/** A state the SPEC names (spec-rules.ts). */
export const isTaskState = specIsTaskState;

/** The configuration the run's queue was opened with: the scenario's overrides over the SPEC's defaults. */
export function configOf(world: WorldResult): JudgeConfig {
  return specConfig(world.scenario.queue);
}

/** The cursor an entry recorded (`data.ev`), if any. */
export function evOf(entry: HistoryEntry): number | undefined {
  const data = entry.data as { ev?: unknown } | undefined;
  return data !== null && typeof data === 'object' && typeof data.ev === 'number' ? data.ev : undefined;
}

/** The event's author, from its columns (or, for the claim, its data). */
export function authorOf(event: TaskEvent): Holder | undefined {
  if (event.workerId !== undefined && event.generation !== undefined) return { workerId: event.workerId, generation: event.generation };
  return undefined;
}

export function sameHolder(a: Holder | undefined, b: Holder | undefined): boolean {
  return a !== undefined && b !== undefined && a.workerId === b.workerId && a.generation === b.generation;
}

export function describeHolder(holder: Holder | undefined): string {
  return holder === undefined ? 'nobody' : `${holder.workerId}@g${holder.generation}`;
}

const memo = new WeakMap<WorldResult, Analysis>();

export function analyse(world: WorldResult): Analysis {
  const cached = memo.get(world);
  if (cached !== undefined) return cached;
  const analysis = build(world);
  memo.set(world, analysis);
  return analysis;
}

function build(world: WorldResult): Analysis {
  const tasks = new Map(world.final.tasks.map((task) => [task.id, task]));
  const eventsByTask = new Map<number, TaskEvent[]>();
  const positionOfEvent = new Map<number, number>();
  const n = world.events.length;
  const stateBefore: (TaskState | undefined)[] = new Array(n);
  const stateAfter: (TaskState | undefined)[] = new Array(n);
  const holderBefore: (Holder | undefined)[] = new Array(n);
  const holderAfter: (Holder | undefined)[] = new Array(n);
  const state = new Map<number, TaskState>();
  const holder = new Map<number, Holder>();
  world.events.forEach((event, position) => {
    positionOfEvent.set(event.id, position);
    let list = eventsByTask.get(event.taskId);
    if (list === undefined) eventsByTask.set(event.taskId, (list = []));
    list.push(event);
    const before = state.get(event.taskId);
    stateBefore[position] = before;
    holderBefore[position] = before === 'running' ? holder.get(event.taskId) : undefined;
    const to = event.data?.to;
    const after = isTaskState(to) ? to : before;
    if (after !== undefined) state.set(event.taskId, after);
    if (event.type === 'claimed') {
      const workerId = event.workerId ?? (typeof event.data.workerId === 'string' ? event.data.workerId : undefined);
      const generation = event.generation ?? (typeof event.data.generation === 'number' ? event.data.generation : undefined);
      if (workerId !== undefined && generation !== undefined) holder.set(event.taskId, { workerId, generation });
    }
    stateAfter[position] = after;
    holderAfter[position] = after === 'running' ? holder.get(event.taskId) : undefined;
  });
  const entries = world.history.entries();
  const cursorBefore: number[] = new Array(entries.length);
  const skewAt: number[] = new Array(entries.length);
  const powerLosses: Analysis['powerLosses'][number][] = [];
  const undoneInvokes = new Set<number>();
  for (const entry of entries) {
    if (entry.type !== 'note' || entry.kind !== 'power-loss') continue;
    const data = entry.data as { cursor?: unknown; lost?: unknown } | undefined;
    const lost = Array.isArray(data?.lost) ? (data.lost as { invoke?: unknown; operation?: unknown }[]).map((commit) => ({ invoke: Number(commit.invoke), operation: String(commit.operation) })) : [];
    powerLosses.push({ index: entry.index, cursor: typeof data?.cursor === 'number' ? data.cursor : 0, lost });
    for (const commit of lost) if (commit.invoke >= 0) undoneInvokes.add(commit.invoke);
  }
  // Before a power loss, the final log holds only the events up to the cursor it came back with (a later
  // one keeps at least as much), so a cursor read before it is capped there; after it, the log goes on from it.
  const capAt: number[] = new Array(entries.length);
  let cap = Number.POSITIVE_INFINITY;
  let loss = powerLosses.length - 1;
  for (let index = entries.length - 1; index >= 0; index--) {
    while (loss >= 0 && powerLosses[loss]!.index >= index) cap = Math.min(cap, powerLosses[loss--]!.cursor);
    capAt[index] = cap;
  }
  let cursor = 0;
  let skew = 0;
  entries.forEach((entry, index) => {
    if (entry.type === 'note' && entry.kind === 'power-loss') cursor = Number((entry.data as { cursor?: unknown } | undefined)?.cursor ?? 0);
    cursorBefore[index] = Math.min(cursor, capAt[index]!);
    // The jump note is written just before the clock moves, at the same instant: later entries see it.
    if (entry.type === 'note' && entry.kind === 'clock-jump') skew += Number((entry.data as { deltaMs?: unknown } | undefined)?.deltaMs ?? 0);
    skewAt[index] = skew;
    const ev = evOf(entry);
    if (ev !== undefined && ev > cursor) cursor = ev;
  });
  return {
    config: configOf(world),
    tasks,
    eventsByTask,
    stateBefore,
    stateAfter,
    holderBefore,
    holderAfter,
    positionOfEvent,
    cursorBefore,
    skewAt,
    powerLosses,
    undoneInvokes,
    capAt,
  };
}

/** The position of the last item (sorted by id) whose id is at most `cursor`, or -1: a binary search. */
export function lastAtOrBefore<T>(items: readonly T[], idOf: (item: T) => number, cursor: number): number {
  let low = 0;
  let high = items.length - 1;
  let found = -1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    if (idOf(items[middle]!) <= cursor) {
      found = middle;
      low = middle + 1;
    } else high = middle - 1;
  }
  return found;
}

/** The task's state and running holder once every event with id <= cursor had committed. */
export function stateAt(analysis: Analysis, taskId: number, cursor: number): { state: TaskState | undefined; holder: Holder | undefined; lastEvent?: TaskEvent } {
  const events = analysis.eventsByTask.get(taskId) ?? [];
  const found = lastAtOrBefore(events, (event) => event.id, cursor);
  if (found < 0) return { state: undefined, holder: undefined };
  const event = events[found]!;
  const position = analysis.positionOfEvent.get(event.id)!;
  return { state: analysis.stateAfter[position], holder: analysis.holderAfter[position], lastEvent: event };
}

/** The task's events committed by one call: ids in (before, after]. */
export function eventsBetween(analysis: Analysis, taskId: number, before: number, after: number): TaskEvent[] {
  return window(analysis.eventsByTask.get(taskId) ?? [], before, after);
}

/** All events with ids in (before, after], in commit order, found by binary search. */
export function eventsInWindow(world: WorldResult, before: number, after: number): TaskEvent[] {
  return window(world.events, before, after);
}

/** Events of a list sorted by id with ids in (before, after]: a binary search for the start, then a copy of the run. */
function window(events: readonly TaskEvent[], before: number, after: number): TaskEvent[] {
  let low = 0;
  let high = events.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (events[middle]!.id <= before) low = middle + 1;
    else high = middle;
  }
  let end = low;
  while (end < events.length && events[end]!.id <= after) end++;
  return events.slice(low, end);
}

/** The wall-clock time the core read at a history entry: the timeline plus the clock jumps so far. */
export function wallTimeAt(analysis: Analysis, entry: HistoryEntry): number {
  return entry.timeMs + (analysis.skewAt[entry.index] ?? 0);
}

/** Each incarnation's life from the history notes: start, pause, resume, kill, exit (after a drain, R8). */
export type IncarnationState = 'alive' | 'paused' | 'dead';

export function incarnationStates(world: WorldResult): Map<string, { index: number; state: IncarnationState }[]> {
  const lives = new Map<string, { index: number; state: IncarnationState }[]>();
  for (const entry of world.history.entries()) {
    if (entry.type !== 'note') continue;
    const state: IncarnationState | undefined =
      entry.kind === 'start' || entry.kind === 'resume' ? 'alive' : entry.kind === 'pause' ? 'paused' : entry.kind === 'kill' || entry.kind === 'exit' ? 'dead' : undefined;
    if (state === undefined) continue;
    let list = lives.get(entry.actor);
    if (list === undefined) lives.set(entry.actor, (list = []));
    list.push({ index: entry.index, state });
  }
  return lives;
}

/** The incarnation's state just before history entry `index`; alive if it never appears in a note. */
export function incarnationStateAt(lives: Map<string, { index: number; state: IncarnationState }[]>, id: string, index: number): IncarnationState {
  let state: IncarnationState = 'alive';
  for (const change of lives.get(id) ?? []) {
    if (change.index >= index) break;
    state = change.state;
  }
  return state;
}

/** True if the incarnation was paused at some entry before `index` (it is, or was, a zombie). */
export function wasPausedBefore(lives: Map<string, { index: number; state: IncarnationState }[]>, id: string, index: number): boolean {
  return (lives.get(id) ?? []).some((change) => change.index < index && change.state === 'paused');
}

/** Occupancy limit of a tenant (Q6, A2: a limit of 0 pauses the tenant). */
export function tenantLimit(config: JudgeConfig, tenant: string): number {
  // Own keys only, as in the core: a tenant called "constructor" has no limit of its own.
  return Object.hasOwn(config.tenantLimits, tenant) ? (config.tenantLimits[tenant] as number) : config.perTenantLimit;
}

/** Only the first few violations of one rule are reported: a broken run would otherwise flood the report. */
export const VIOLATIONS_PER_RULE_MAX = 5;

export class ViolationList {
  readonly list: Violation[] = [];
  private readonly perRule = new Map<string, number>();

  constructor(
    private readonly invariant: string,
    private readonly kind: 'safety' | 'liveness',
  ) {}

  add(rule: string, message: string, extra: { at?: number[]; taskId?: number } = {}): void {
    const count = (this.perRule.get(rule) ?? 0) + 1;
    this.perRule.set(rule, count);
    if (count > VIOLATIONS_PER_RULE_MAX) return;
    const violation: Violation = { invariant: this.invariant, kind: this.kind, message: `${this.invariant} ${rule}: ${message}` };
    if (extra.at !== undefined) violation.at = extra.at;
    if (extra.taskId !== undefined) violation.taskId = extra.taskId;
    this.list.push(violation);
  }
}
