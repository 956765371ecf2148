import type { BudgetSpec, TaskEvent } from '../../src/queue/types.ts';

/**
 * Budget levels over time (issue 16 item 6), replayed from the event log alone with the core's integer
 * rules (src/queue/budgets.ts), restated here so the report does not lean on the code it reports on:
 *
 * - a grant: `claimed` data.reserved and `budget_reserved` data.reserved (units per budget);
 * - a charge beyond the reservation: `checkpoint` data.overdraft;
 * - a return: data.released on the edge that frees the slot; a return of 0 units writes nothing.
 *
 * Concurrency: the level is the units held (grants minus returns, never below 0). Total: the units used
 * per run or session (grants and overdrafts minus returns). Rate: a token bucket kept scaled by periodMs
 * (units x periodMs), full (capacity x periodMs) at its first use; before each write it refills by
 * max(0, at - updatedAt) x refill, capped at capacity x periodMs, and updatedAt = max(updatedAt, at) (a
 * clock that goes back refills nothing); a grant takes units x periodMs, an overdraft too (the level may
 * go below zero), a return gives units x periodMs back, never above capacity x periodMs. The elapsed
 * time is bounded by the time that fills the bucket from its level (ceil((full - level) / refill)), which
 * keeps the product exact and changes nothing else (the core bounds it the same way). Pure: no clock,
 * no randomness.
 */

export type BudgetMove = 'grant' | 'overdraft' | 'return';

/** One write to a (budget, scope), with the level after it. */
export interface BudgetChange {
  eventId: number;
  taskId: number;
  type: string;
  at: number;
  move: BudgetMove;
  units: number;
  /** Concurrency: units held; total: units used; rate: the bucket's level scaled by periodMs. */
  scaled: number;
  /** The refill clock after the write (rate); the latest instant written otherwise. */
  updatedAt: number;
}

/** A point of the step plot: the level in whole units from `at` until the next point. */
export interface LevelPoint {
  at: number;
  level: number;
}

export interface BudgetTrack {
  budget: string;
  kind: BudgetSpec['kind'];
  /** '' global, 'tenant:T', 'run:ID', 'session:T\u001ftopic' (the core's scope keys). */
  scope: string;
  /** The most the level may reach: a concurrency or total limit, a rate bucket's capacity. */
  limit: number;
  /** Rate only: the bucket's refill, in units per periodMs. */
  refill?: number;
  periodMs?: number;
  changes: BudgetChange[];
}

export interface BudgetTask {
  id: number;
  tenant: string;
  topic: string;
}

/** The core's scope key of a budget for a task. */
export function scopeOf(spec: BudgetSpec, task: BudgetTask | undefined): string {
  if (spec.kind === 'total') {
    if (spec.per === 'run') return `run:${task?.id ?? '?'}`;
    return `session:${task?.tenant ?? '?'}\u001f${task?.topic ?? '?'}`;
  }
  return (spec.scope ?? 'global') === 'tenant' ? `tenant:${task?.tenant ?? '?'}` : '';
}

/** `budget (global)`, `budget (tenant:acme)`, `budget (session:acme/topic)`. */
export function describeScope(budget: string, scope: string): string {
  return scope === '' ? `${budget} (global)` : `${budget} (${scope.replace('\u001f', '/')})`;
}

function unitsOf(value: unknown): [string, number][] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [];
  return Object.entries(value as Record<string, unknown>).filter((entry): entry is [string, number] => typeof entry[1] === 'number' && Number.isSafeInteger(entry[1]));
}

type RateSpec = Extract<BudgetSpec, { kind: 'rate' }>;

/** The bucket's scaled level at `at`, refilled from its last write: min(full, level + max(0, at - updatedAt) x refill). */
export function rateLevel(spec: RateSpec, last: { scaled: number; updatedAt: number } | undefined, at: number): { scaled: number; since: number } {
  const full = spec.capacity * spec.periodMs;
  if (last === undefined) return { scaled: full, since: at };
  const elapsed = Math.max(0, at - last.updatedAt);
  const bounded = spec.refill === 0 ? 0 : Math.min(elapsed, Math.max(0, Math.ceil((full - last.scaled) / spec.refill)));
  return { scaled: Math.min(full, last.scaled + bounded * spec.refill), since: Math.max(last.updatedAt, at) };
}

/**
 * Every (budget, scope) the log moved, with each write in commit order (events sorted by id). Budgets
 * the configuration does not declare are ignored; `tasks` gives each task's tenant and topic (scopes).
 */
export function budgetSeries(events: readonly TaskEvent[], budgets: Readonly<Record<string, BudgetSpec>>, tasks: readonly BudgetTask[]): BudgetTrack[] {
  const byId = new Map(tasks.map((task) => [task.id, task]));
  const tracks = new Map<string, BudgetTrack>();
  const ordered = [...events].sort((a, b) => a.id - b.id);
  for (const event of ordered) {
    const moves: [BudgetMove, unknown][] = [];
    if (event.type === 'claimed' || event.type === 'budget_reserved') moves.push(['grant', event.data?.reserved]);
    if (event.type === 'checkpoint') moves.push(['overdraft', event.data?.overdraft]);
    moves.push(['return', event.data?.released]);
    for (const [move, value] of moves) {
      for (const [budget, units] of unitsOf(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
        const spec = Object.hasOwn(budgets, budget) ? budgets[budget] : undefined;
        if (spec === undefined || units === 0) continue;
        const scope = scopeOf(spec, byId.get(event.taskId));
        const key = `${budget}\u0000${scope}`;
        let track = tracks.get(key);
        if (track === undefined) {
          track = { budget, kind: spec.kind, scope, limit: spec.kind === 'rate' ? spec.capacity : spec.limit, changes: [], ...(spec.kind === 'rate' ? { refill: spec.refill, periodMs: spec.periodMs } : {}) };
          tracks.set(key, track);
        }
        const last = track.changes[track.changes.length - 1];
        const at = event.at;
        let scaled: number;
        let updatedAt: number;
        if (spec.kind === 'rate') {
          const now = rateLevel(spec, last, at);
          const full = spec.capacity * spec.periodMs;
          scaled = move === 'return' ? Math.min(full, now.scaled + units * spec.periodMs) : now.scaled - units * spec.periodMs;
          updatedAt = now.since;
        } else {
          const used = last?.scaled ?? 0;
          scaled = move === 'return' ? Math.max(0, used - units) : used + units;
          updatedAt = Math.max(last?.updatedAt ?? at, at);
        }
        track.changes.push({ eventId: event.id, taskId: event.taskId, type: event.type, at, move, units, scaled, updatedAt });
      }
    }
  }
  return [...tracks.values()].sort((a, b) => (a.budget < b.budget ? -1 : a.budget > b.budget ? 1 : a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0));
}

/** The level in whole units after a change: a rate bucket's scaled level rounded down (the core's budgetLevels). */
export function wholeUnits(track: Pick<BudgetTrack, 'kind' | 'periodMs'>, scaled: number): number {
  return track.kind === 'rate' ? Math.floor(scaled / (track.periodMs ?? 1)) : scaled;
}

/** Whole-unit refill steps drawn between two writes at most; past it the ramp is drawn coarser. */
const MAX_REFILL_STEPS = 48;

/**
 * The track as a step plot in whole units, from `fromMs` to `toMs` (queue clock): the level before each
 * write and after it at the write's instant, and for a rate bucket the instants between writes at which
 * the refill adds a whole unit (at most MAX_REFILL_STEPS per gap, evenly chosen, then the instant it is
 * full). A clock that goes back draws the point where the event says it happened.
 */
export function levelPoints(track: BudgetTrack, fromMs: number, toMs: number): LevelPoint[] {
  const rate = track.kind === 'rate' ? { capacity: track.limit, refill: track.refill ?? 0, periodMs: track.periodMs ?? 1 } : undefined;
  const startLevel = rate === undefined ? 0 : rate.capacity;
  const points: LevelPoint[] = [{ at: Math.min(fromMs, track.changes[0]?.at ?? fromMs), level: startLevel }];
  const push = (at: number, level: number) => {
    const last = points[points.length - 1]!;
    if (last.level === level) return;
    if (last.at === at) {
      points.pop();
      const before = points[points.length - 1];
      if (before !== undefined && before.level === level) return;
    }
    points.push({ at, level });
  };
  const ramp = (scaled: number, since: number, untilMs: number) => {
    if (rate === undefined || rate.refill === 0) return;
    const full = rate.capacity * rate.periodMs;
    const first = Math.floor(scaled / rate.periodMs) + 1;
    const steps: number[] = [];
    for (let unit = first; unit <= rate.capacity; unit++) steps.push(unit);
    const chosen = steps.length <= MAX_REFILL_STEPS ? steps : steps.filter((_, index) => index % Math.ceil(steps.length / MAX_REFILL_STEPS) === 0 || index === steps.length - 1);
    for (const unit of chosen) {
      const target = Math.min(full, unit * rate.periodMs);
      const at = since + Math.ceil((target - scaled) / rate.refill);
      if (at > untilMs) break;
      push(at, unit);
    }
  };
  let previous: BudgetChange | undefined;
  for (const change of track.changes) {
    if (previous !== undefined) ramp(previous.scaled, previous.updatedAt, change.at);
    // The level just before the write (a rate bucket refilled to this instant) is what the ramp reached.
    push(change.at, wholeUnits(track, change.scaled));
    previous = change;
  }
  if (previous !== undefined) ramp(previous.scaled, previous.updatedAt, toMs);
  return points;
}

/** The extreme a track reached: the most units held or used, or a rate bucket's lowest level (whole units). */
export function trackPeak(track: BudgetTrack): number {
  const levels = track.changes.map((change) => wholeUnits(track, change.scaled));
  if (track.kind === 'rate') return Math.min(track.limit, ...levels);
  return Math.max(0, ...levels);
}
