import type { BudgetSpec, TaskEvent } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';
import { specBudgetScope } from './spec-rules.ts';
import { analyse, ViolationList, type Analysis } from './timeline.ts';
import type { Checker } from './types.ts';

/**
 * The budget books of a run, read from its event log alone (A1): the units each event takes from or
 * gives back to a (budget, scope), restated from the SPEC and the event contract, not from src.
 *
 * - a grant: `claimed` data.reserved and `budget_reserved` data.reserved (units per budget);
 * - a charge beyond the reservation: `checkpoint` data.overdraft;
 * - a return: data.released on the edge that frees the slot (complete, fail, cancel, interrupt,
 *   confirmStopped, reconcile); a return of 0 units moves nothing.
 */
export type BudgetMove = 'grant' | 'overdraft' | 'return';

export interface BudgetStep {
  position: number;
  event: TaskEvent;
  budget: string;
  scope: string;
  move: BudgetMove;
  units: number;
}

function unitsOf(value: unknown): [string, number][] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [];
  return Object.entries(value as Record<string, unknown>).filter((entry): entry is [string, number] => typeof entry[1] === 'number' && Number.isFinite(entry[1]));
}

/**
 * The moves of every event in commit order, for the budgets the run's config declares. Read once per
 * run (I5 and I15 both replay them); the list is shared, so callers must not change it.
 */
export function budgetSteps(world: WorldResult, analysis: Analysis = analyse(world)): readonly BudgetStep[] {
  const cached = stepsOf.get(analysis);
  if (cached !== undefined && cached.world === world) return cached.steps;
  const { budgets } = analysis.config;
  const steps: BudgetStep[] = [];
  world.events.forEach((event, position) => {
    const task = analysis.tasks.get(event.taskId);
    if (task === undefined) return;
    if (event.type === 'claimed' || event.type === 'budget_reserved') addSteps(steps, budgets, position, event, task, event.data.reserved, 'grant');
    if (event.type === 'checkpoint') addSteps(steps, budgets, position, event, task, event.data.overdraft, 'overdraft');
    addSteps(steps, budgets, position, event, task, event.data.released, 'return');
  });
  stepsOf.set(analysis, { world, steps });
  return steps;
}

const stepsOf = new WeakMap<Analysis, { world: WorldResult; steps: readonly BudgetStep[] }>();

function addSteps(steps: BudgetStep[], budgets: Analysis['config']['budgets'], position: number, event: TaskEvent, task: { id: number; tenant: string; topic: string }, value: unknown, move: BudgetMove): void {
  for (const [budget, units] of unitsOf(value)) {
    const spec = Object.hasOwn(budgets, budget) ? budgets[budget] : undefined;
    if (spec === undefined) continue;
    if (move === 'return' && units === 0) continue;
    steps.push({ position, event, budget, scope: specBudgetScope(spec, task), move, units });
  }
}

export function bucketKey(budget: string, scope: string): string {
  return `${budget}\u0000${scope}`;
}

export function describeBucket(budget: string, scope: string): string {
  return scope === '' ? `${budget} (global)` : `${budget} (${scope.replace('\u001f', '/')})`;
}

/** A replayed (budget, scope): what the stored row must say at the end. */
export interface ReplayedBucket {
  budget: string;
  scope: string;
  spec: BudgetSpec;
  /** Concurrency: units held; total: units used; rate: the level scaled by periodMs. */
  level: bigint;
  /** The refill clock: the latest instant a write touched the row. */
  updatedAt: number;
}

/**
 * Replays every bucket with the SPEC's integer rules and calls `visit` after each move. A rate bucket's
 * level is kept scaled (units x periodMs), starts full at its first grant, and refills by
 * max(0, at - updatedAt) x refill up to capacity x periodMs before each move; updatedAt only moves
 * forward. A grant takes units x periodMs, an overdraft too (it may go below zero), a return gives
 * units x periodMs back, never above capacity x periodMs. BigInt throughout: exact whatever the sizes.
 */
export function replayBuckets(world: WorldResult, visit?: (step: BudgetStep, bucket: ReplayedBucket, before: ReplayedBucket | undefined) => void, analysis: Analysis = analyse(world)): Map<string, ReplayedBucket> {
  const buckets = new Map<string, ReplayedBucket>();
  for (const step of budgetSteps(world, analysis)) {
    const old = buckets.get(bucketKey(step.budget, step.scope));
    const bucket = applyBudgetStep(buckets, step, analysis.config.budgets[step.budget]!);
    visit?.(step, bucket, old);
  }
  return buckets;
}

/** One move of the replay: the bucket's new state, stored in `buckets` (see replayBuckets for the rules). */
export function applyBudgetStep(buckets: Map<string, ReplayedBucket>, step: BudgetStep, spec: BudgetSpec): ReplayedBucket {
  const key = bucketKey(step.budget, step.scope);
  const at = step.event.at;
  const old = buckets.get(key);
  const units = BigInt(step.units);
  let level: bigint;
  let updatedAt: number;
  if (spec.kind === 'rate') {
    const period = BigInt(spec.periodMs);
    const full = BigInt(spec.capacity) * period;
    const scaled = old === undefined ? full : refilledLevel(spec, old, at);
    updatedAt = old === undefined ? at : Math.max(old.updatedAt, at);
    if (step.move === 'return') {
      const back = scaled + units * period;
      level = back < full ? back : full;
    } else level = scaled - units * period;
  } else {
    const used = old?.level ?? 0n;
    updatedAt = Math.max(old?.updatedAt ?? at, at);
    level = step.move === 'return' ? used - units : used + units;
  }
  const bucket: ReplayedBucket = { budget: step.budget, scope: step.scope, spec, level, updatedAt };
  buckets.set(key, bucket);
  return bucket;
}

/** A rate bucket's scaled level refilled to `at` (nothing for a clock behind its refill clock). */
function refilledLevel(spec: Extract<BudgetSpec, { kind: 'rate' }>, bucket: ReplayedBucket, at: number): bigint {
  const full = BigInt(spec.capacity) * BigInt(spec.periodMs);
  const refilled = bucket.level + BigInt(Math.max(0, at - bucket.updatedAt)) * BigInt(spec.refill);
  return refilled < full ? refilled : full;
}

/**
 * Whether a (budget, scope) can grant `units` at `at` (A1): a concurrency or total budget has room for
 * them under its limit; a rate bucket, refilled to `at`, holds them (a bucket never used is full).
 */
export function canGrant(spec: BudgetSpec, bucket: ReplayedBucket | undefined, units: number, at: number): boolean {
  if (spec.kind === 'rate') {
    const need = BigInt(units) * BigInt(spec.periodMs);
    return bucket === undefined ? units <= spec.capacity : refilledLevel(spec, bucket, at) >= need;
  }
  return (bucket?.level ?? 0n) + BigInt(units) <= BigInt(spec.limit);
}

/**
 * I15: budgets hold (A1).
 *
 * Rules, over the event log in commit order:
 * - concurrency: the units held per (budget, scope), granted minus returned, never exceed the limit
 *   after any event (an uncertain task keeps its units: nothing returns them but the edge that frees
 *   the slot);
 * - rate: over every window of the bucket's moves i..j ending in a grant, the net outflow (grants and
 *   overdrafts minus returns) is at most capacity + refill x (T(j) - T(i)) / periodMs, T being the
 *   running maximum of the moves' times (the refill clock never goes back). In integers, with a running
 *   minimum: P·N(j) - refill·T(j) <= P·capacity + min over i <= j of (P·N(i-1) - refill·T(i));
 * - total: per run and per session, the units used (granted minus returned) never exceed the limit
 *   after a grant; a return never gives back more than was taken;
 * - the final budget_levels rows (when the world exported them) equal the replay: concurrency its held
 *   units, total its used units, rate the exact integer bucket refilled to the instant of the read, and
 *   every row's updatedAt; no row for a bucket no event touched and none missing for one that was.
 *
 * An overdraft (units consumed beyond the reservation, charged at a checkpoint) may take a bucket below
 * zero or a total past its limit: the units were spent. So the bounds are judged after grants (what the
 * queue decided to give), and the overdraft counts in what the next grant must find left.
 */
export const i15Budgets: Checker = {
  invariant: 'I15',
  kind: 'safety',
  description: 'budgets hold: concurrency within limits at every instant, rate buckets within capacity + refill over every window, totals never exceeded',
  check(world: WorldResult) {
    const analysis = analyse(world);
    const out = new ViolationList('I15', 'safety');
    // Per rate bucket: the running terms of the window rule.
    const windows = new Map<string, { net: bigint; maxAt: number; minTerm: bigint | undefined }>();
    const buckets = replayBuckets(
      world,
      (step, bucket) => {
        const { spec, budget, scope } = bucket;
        const where = `after event ${step.event.id} (${step.event.type} of task ${step.event.taskId})`;
        const name = describeBucket(budget, scope);
        if (spec.kind === 'concurrency') {
          if (bucket.level > BigInt(spec.limit)) out.add('concurrency', `${where} ${bucket.level} units of ${name} are held, limit ${spec.limit}`, { taskId: step.event.taskId });
          if (bucket.level < 0n) out.add('concurrency', `${where} ${name} returned more units than were held (${bucket.level})`, { taskId: step.event.taskId });
        } else if (spec.kind === 'total') {
          if (step.move === 'grant' && bucket.level > BigInt(spec.limit)) out.add('total', `${where} ${bucket.level} units of ${name} are used, limit ${spec.limit}`, { taskId: step.event.taskId });
          if (bucket.level < 0n) out.add('total', `${where} ${name} returned more units than were used (${bucket.level})`, { taskId: step.event.taskId });
        } else {
          const key = bucketKey(budget, scope);
          const P = BigInt(spec.periodMs);
          const refill = BigInt(spec.refill);
          const w = windows.get(key) ?? { net: 0n, maxAt: step.event.at, minTerm: undefined };
          const maxAt = Math.max(w.maxAt, step.event.at);
          // The window starting at this move: N(i-1) is the net before it, T(i) its clock.
          const term = P * w.net - refill * BigInt(maxAt);
          const minTerm = w.minTerm === undefined || term < w.minTerm ? term : w.minTerm;
          const net = w.net + (step.move === 'return' ? -BigInt(step.units) : BigInt(step.units));
          windows.set(key, { net, maxAt, minTerm });
          if (step.move === 'grant' && P * net - refill * BigInt(maxAt) > P * BigInt(spec.capacity) + minTerm) {
            out.add('rate', `${where} ${name} granted more than capacity ${spec.capacity} + refill ${spec.refill} per ${spec.periodMs} ms over a window ending here (net outflow since the window's start exceeds the bound by ${(P * net - refill * BigInt(maxAt) - P * BigInt(spec.capacity) - minTerm + P - 1n) / P} units)`, { taskId: step.event.taskId });
          }
        }
      },
      analysis,
    );
    checkLevels(world, buckets, out);
    return out.list;
  },
};

function checkLevels(world: WorldResult, buckets: Map<string, ReplayedBucket>, out: ViolationList): void {
  const rows = world.budgetLevels;
  if (rows === undefined) return;
  const seen = new Set<string>();
  for (const row of rows) {
    const key = bucketKey(row.budget, row.scope);
    const name = describeBucket(row.budget, row.scope);
    seen.add(key);
    const bucket = buckets.get(key);
    if (bucket === undefined) {
      out.add('levels', `budget_levels has a row for ${name} (level ${row.level}) but no event granted any of it`);
      continue;
    }
    if (row.kind !== bucket.spec.kind) out.add('levels', `budget_levels row of ${name} is of kind ${row.kind}, the config declares ${bucket.spec.kind}`);
    if (row.updatedAt !== bucket.updatedAt) out.add('levels', `budget_levels row of ${name} was last written at ${row.updatedAt}, the events' replay last touches it at ${bucket.updatedAt}`);
    const { spec } = bucket;
    if (spec.kind === 'rate') {
      const P = BigInt(spec.periodMs);
      const full = BigInt(spec.capacity) * P;
      const at = world.budgetLevelsAt;
      if (at !== undefined) {
        const refilled = bucket.level + BigInt(Math.max(0, at - bucket.updatedAt)) * BigInt(spec.refill);
        const scaled = refilled < full ? refilled : full;
        const expected = floorDiv(scaled, P);
        if (BigInt(row.level) !== expected) out.add('levels', `budget_levels reports ${row.level} units in ${name} at ${at}; the replay of the events leaves ${expected} (scaled ${bucket.level} at ${bucket.updatedAt})`);
      } else {
        // Without the instant of the read: at least the replayed level, at most full.
        const low = floorDiv(bucket.level, P);
        if (BigInt(row.level) < low || row.level > spec.capacity || (spec.refill === 0 && BigInt(row.level) !== low)) {
          out.add('levels', `budget_levels reports ${row.level} units in ${name}; the replay of the events leaves ${low} (before any refill since ${bucket.updatedAt}), capacity ${spec.capacity}`);
        }
      }
    } else if (BigInt(row.level) !== bucket.level) {
      out.add('levels', `budget_levels reports ${row.level} units of ${name} ${spec.kind === 'concurrency' ? 'held' : 'used'}; the replay of the events leaves ${bucket.level}`);
    }
  }
  for (const [key, bucket] of buckets) {
    if (!seen.has(key)) out.add('levels', `budget_levels has no row for ${describeBucket(bucket.budget, bucket.scope)}, which the events moved`);
  }
}

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}
