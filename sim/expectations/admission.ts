import { z } from 'zod';
import type { TaskEvent } from '../../src/queue/types.ts';
import { SPEC_LIVE_STATES, SPEC_TERMINAL_STATES } from '../checkers/spec-rules.ts';
import { analyse, stateAt, wallTimeAt } from '../checkers/timeline.ts';
import type { WorldResult } from '../world.ts';
import type { ExpectationKind } from './types.ts';
import { describeSelector, describeTask, selectTasks, taskSelectorSchema, tooFew, type TaskSelector } from './task-selector.ts';
import { labelsById, nameOf } from './values.ts';
import { own } from '../own.ts';

/**
 * Expectations of issue 16 (A1, A2: named budgets and admission), for seed 004's drills: critical work
 * deferred then run while the queue is full (D1), a paused tenant that gets no lease until it is
 * resumed (D6), reservations carried through uncertain and released once (D8), retries that reserve
 * from the same budgets as first attempts (A4), and bucket levels that survive a restart (A1).
 */

const STATES = [...SPEC_LIVE_STATES, ...SPEC_TERMINAL_STATES] as [string, ...string[]];
const REASONS = ['tenant_paused', 'capacity', 'rate_limited', 'budget', 'session_busy'] as const;

/** A DEFER an event records: an enqueued event's admission, or a claim's deferred event. */
export function deferralOf(event: Pick<TaskEvent, 'type' | 'data'>): string | undefined {
  if (event.type === 'deferred') return typeof event.data.reason === 'string' ? event.data.reason : undefined;
  if (event.type !== 'enqueued') return undefined;
  const admission = event.data.admission as { action?: unknown; reason?: unknown } | undefined;
  return admission?.action === 'DEFER' && typeof admission.reason === 'string' ? admission.reason : undefined;
}

// ---------------------------------------------------------------- deferred-then-ran

interface DeferredThenRan {
  kind: 'deferred-then-ran';
  tasks?: TaskSelector;
  /** Only the selected tasks enqueued critical (A2). */
  critical?: boolean;
  /** Each was deferred for one of these reasons before its first claim. */
  reason: (typeof REASONS)[number] | (typeof REASONS)[number][];
  /** And ends in this state (or one of them); default done. */
  state?: string | string[];
}

/**
 * D1: every selected task was DEFERred (at enqueue or at a claim) for the reason before its first
 * claim, was then claimed, and ends in the state: "critical work under a full queue is deferred, then
 * runs", never refused.
 */
export const deferredThenRan: ExpectationKind<DeferredThenRan> = {
  kind: 'deferred-then-ran',
  class: 'liveness',
  description: 'every selected task (critical ones only, if asked) was deferred for the reason before its first claim, then claimed, and ends in the state (default done)',
  schema: z.strictObject({
    kind: z.literal('deferred-then-ran'),
    tasks: taskSelectorSchema.optional(),
    critical: z.boolean().optional(),
    reason: z.union([z.enum(REASONS), z.array(z.enum(REASONS)).min(1)]),
    state: z.union([z.enum(STATES), z.array(z.enum(STATES)).min(1)]).optional(),
  }),
  check(spec, run) {
    const analysis = analyse(run);
    const reasons: readonly string[] = Array.isArray(spec.reason) ? spec.reason : [spec.reason];
    const states: readonly string[] = spec.state === undefined ? ['done'] : Array.isArray(spec.state) ? spec.state : [spec.state];
    const selected = selectTasks(run, { ...spec.tasks, minTasks: 0 }).filter((task) => {
      if (spec.critical !== true) return true;
      return (analysis.eventsByTask.get(task.id) ?? []).some((event) => event.type === 'enqueued' && event.data.critical === true);
    });
    const few = tooFew(spec.tasks, selected);
    if (few !== undefined) return [spec.critical === true ? `${few} (critical ones)` : few];
    const problems: string[] = [];
    for (const task of selected) {
      const events = analysis.eventsByTask.get(task.id) ?? [];
      const firstClaim = events.findIndex((event) => event.type === 'claimed');
      const before = firstClaim < 0 ? events : events.slice(0, firstClaim);
      const deferred = before.map(deferralOf).filter((reason): reason is string => reason !== undefined);
      if (!deferred.some((reason) => reasons.includes(reason))) problems.push(`${describeTask(task)} was not deferred ${reasons.join(' or ')} before its first claim (deferrals: ${deferred.join(', ') || 'none'})`);
      if (firstClaim < 0) problems.push(`${describeTask(task)} was never claimed`);
      if (!states.includes(task.task.state)) problems.push(`${describeTask(task)} ended ${task.task.state}, expected ${states.join(' or ')}`);
    }
    return problems.slice(0, 8);
  },
};

// ---------------------------------------------------------------- tenant-paused

const PAUSE_SITUATIONS = ['ready', 'running', 'retry-waiting', 'uncertain', 'stopped'] as const;
type PauseSituation = (typeof PAUSE_SITUATIONS)[number];

interface TenantPaused {
  kind: 'tenant-paused';
  tenant: string;
  /** The operator paused it at least this many times (a pause that never committed proves nothing); default 1. */
  minPauses?: number;
  /**
   * At some pause the tenant had tasks in each of these situations (read from the log committed before
   * it): ready, running, retry-waiting (backing off after a retryable failure), uncertain (its worker
   * died or froze, the stop not yet confirmed), stopped (back to ready after its worker's stop was
   * confirmed or the reconciler re-queued it).
   */
  statesAtPause?: PauseSituation[];
  /** Some task of the tenant was confirmed stopped (back to ready, or ended) while it was paused: its next lease had to wait for the resume. */
  confirmedWhilePaused?: boolean;
}

/** The operator's pause intervals of a tenant in the event log: events after the pause's cursor, up to its resume's (Infinity: never resumed). */
export function pauseIntervals(run: WorldResult, tenant: string): { from: number; to: number }[] {
  const intervals: { from: number; to: number }[] = [];
  let open: number | undefined;
  const actions = run.history
    .entries()
    .filter((entry) => entry.type === 'ok' && (entry.op === 'pauseTenant' || entry.op === 'resumeTenant'))
    .map((entry) => ({ op: (entry as { op: string }).op, data: entry.data as { tenant?: unknown; ev?: unknown } | undefined }))
    .filter(({ data }) => data?.tenant === tenant && typeof data.ev === 'number')
    .map(({ op, data }) => ({ op, ev: data!.ev as number }))
    .sort((a, b) => a.ev - b.ev);
  for (const { op, ev } of actions) {
    if (op === 'pauseTenant' && open === undefined) open = ev;
    if (op === 'resumeTenant' && open !== undefined) {
      intervals.push({ from: open, to: ev });
      open = undefined;
    }
  }
  if (open !== undefined) intervals.push({ from: open, to: Number.POSITIVE_INFINITY });
  return intervals;
}

/**
 * D6 (A2, I17 restated for one scenario): between the operator's pause of the tenant and its resume, in
 * commit order and across restarts, no task of the tenant was claimed; every pause was resumed.
 */
export const tenantPaused: ExpectationKind<TenantPaused> = {
  kind: 'tenant-paused',
  class: 'safety',
  description: 'no task of the tenant was claimed between the operator pausing it and resuming it (in commit order); it was paused at least minPauses times and resumed each time; optionally, a pause found its tasks in given states, and one was confirmed stopped while paused',
  schema: z.strictObject({
    kind: z.literal('tenant-paused'),
    tenant: z.string().min(1),
    minPauses: z.number().int().min(0).optional(),
    statesAtPause: z.array(z.enum(PAUSE_SITUATIONS)).min(1).optional(),
    confirmedWhilePaused: z.boolean().optional(),
  }),
  check(spec, run) {
    const intervals = pauseIntervals(run, spec.tenant);
    const problems: string[] = [];
    if (spec.statesAtPause !== undefined) {
      const seen = pauseSituations(run, spec.tenant);
      const wanted = spec.statesAtPause;
      if (!seen.some((counts) => wanted.every((situation) => (counts.get(situation) ?? 0) > 0))) {
        const described = seen.map((counts, index) => `pause ${index + 1}: ${[...counts].map(([situation, count]) => `${situation} ${count}`).join(', ') || 'nothing live'}`).join(' | ');
        problems.push(`no pause of ${spec.tenant} found it with tasks ${wanted.join(', ')} (${described || 'no pause'})`);
      }
    }
    const wanted = spec.minPauses ?? 1;
    if (intervals.length < wanted) problems.push(`tenant ${spec.tenant} was paused ${intervals.length} time(s), expected at least ${wanted}`);
    for (const interval of intervals) if (interval.to === Number.POSITIVE_INFINITY) problems.push(`tenant ${spec.tenant} paused after event ${interval.from} was never resumed`);
    const analysis = analyse(run);
    const labels = labelsById(run);
    if (spec.confirmedWhilePaused === true) {
      const confirmed = run.events.some((event) => event.type === 'stop_confirmed' && analysis.tasks.get(event.taskId)?.tenant === spec.tenant && intervals.some((interval) => event.id > interval.from && event.id <= interval.to));
      if (!confirmed) problems.push(`no task of ${spec.tenant} was confirmed stopped while it was paused`);
    }
    for (const event of run.events) {
      if (event.type !== 'claimed' || analysis.tasks.get(event.taskId)?.tenant !== spec.tenant) continue;
      const inside = intervals.find((interval) => event.id > interval.from && event.id <= interval.to);
      if (inside !== undefined) problems.push(`${nameOf(labels, event.taskId)} of paused tenant ${spec.tenant} was claimed (event ${event.id} at +${event.at - run.startMs} ms) while paused (after event ${inside.from}, before the resume at ${inside.to})`);
    }
    return problems.slice(0, 8);
  },
};

/** Per committed pause of the tenant: how many of its tasks were in each situation, from the log committed before it. */
function pauseSituations(run: WorldResult, tenant: string): Map<PauseSituation, number>[] {
  const analysis = analyse(run);
  const result: Map<PauseSituation, number>[] = [];
  for (const entry of run.history.entries()) {
    if (entry.type !== 'ok' || entry.op !== 'pauseTenant') continue;
    const data = entry.data as { tenant?: unknown; ev?: unknown } | undefined;
    if (data?.tenant !== tenant || typeof data.ev !== 'number') continue;
    const cursor = data.ev;
    const now = wallTimeAt(analysis, entry);
    const counts = new Map<PauseSituation, number>();
    const bump = (situation: PauseSituation) => counts.set(situation, (counts.get(situation) ?? 0) + 1);
    for (const [taskId, events] of analysis.eventsByTask) {
      if (analysis.tasks.get(taskId)?.tenant !== tenant) continue;
      const { state } = stateAt(analysis, taskId, cursor);
      if (state === 'running') bump('running');
      if (state === 'uncertain') bump('uncertain');
      if (state !== 'ready') continue;
      const entered = events.findLast((event) => event.id <= cursor && typeof event.data.to === 'string');
      const backoffMs = entered?.data.backoffMs;
      if (entered?.type === 'retry_scheduled' && typeof backoffMs === 'number' && entered.at + backoffMs > now) bump('retry-waiting');
      else if (entered?.type === 'stop_confirmed' || entered?.type === 'reconciled') bump('stopped');
      else bump('ready');
    }
    result.push(counts);
  }
  return result;
}

// ---------------------------------------------------------------- reservations-once

interface ReservationsOnce {
  kind: 'reservations-once';
  tasks?: TaskSelector;
  /** At least this many attempts went uncertain holding a reservation and were later freed (reconciled or confirmed). */
  minCarried?: number;
  /** At least this many reconciled events (R5 auto) among the selected tasks. */
  minReconciled?: number;
}

/**
 * D8 (A1, I16 read from the event log): each claim that reserved units is followed by exactly one
 * slot-freeing event that releases them (released and consumed adding up to what was reserved, with
 * what checkpoints and reserves added), before the next claim; the expiry to uncertain releases nothing
 * (the reservation is carried); a terminal task holds nothing.
 */
export const reservationsOnce: ExpectationKind<ReservationsOnce> = {
  kind: 'reservations-once',
  class: 'safety',
  description: 'each attempt that reserved budget units releases them exactly once, at the edge that frees its slot; an expiry to uncertain carries them; at least minCarried attempts did, and minReconciled tasks were reconciled',
  schema: z.strictObject({
    kind: z.literal('reservations-once'),
    tasks: taskSelectorSchema.optional(),
    minCarried: z.number().int().min(0).optional(),
    minReconciled: z.number().int().min(0).optional(),
  }),
  check(spec, run) {
    const selected = selectTasks(run, spec.tasks);
    const few = tooFew(spec.tasks, selected);
    if (few !== undefined) return [few];
    const analysis = analyse(run);
    const problems: string[] = [];
    let carried = 0;
    let reconciled = 0;
    for (const task of selected) {
      let held: Record<string, number> | undefined;
      let uncertainHeld = false;
      for (const event of analysis.eventsByTask.get(task.id) ?? []) {
        const released = event.data.released as Record<string, number> | undefined;
        if (event.type === 'reconciled') reconciled++;
        if (event.type === 'claimed') {
          if (held !== undefined) problems.push(`${describeTask(task)}: claimed again (event ${event.id}) while the previous attempt's reservation was never released`);
          const reserved = event.data.reserved as Record<string, number> | undefined;
          held = reserved === undefined || Object.keys(reserved).length === 0 ? undefined : Object.assign(Object.create(null) as Record<string, number>, reserved);
          uncertainHeld = false;
          continue;
        }
        if (event.type === 'budget_reserved' && held !== undefined) {
          for (const [budget, units] of Object.entries((event.data.reserved as Record<string, number> | undefined) ?? {})) held[budget] = (own(held, budget) ?? 0) + units;
        }
        if (event.type === 'checkpoint' && held !== undefined) {
          for (const [budget, units] of Object.entries((event.data.overdraft as Record<string, number> | undefined) ?? {})) held[budget] = (own(held, budget) ?? 0) + units;
        }
        if (event.data.to === 'uncertain') {
          if (released !== undefined) problems.push(`${describeTask(task)}: its expiry to uncertain (event ${event.id}) released units; an uncertain task keeps its reservation`);
          if (held !== undefined) uncertainHeld = true;
          continue;
        }
        if (released === undefined) continue;
        if (held === undefined) {
          if (Object.values(released).some((units) => units > 0)) problems.push(`${describeTask(task)}: event ${event.id} (${event.type}) released ${JSON.stringify(released)} with nothing reserved`);
          continue;
        }
        const consumed = (event.data.consumed as Record<string, number> | undefined) ?? {};
        for (const [budget, units] of Object.entries(held)) {
          const back = own(released, budget) ?? 0;
          const kept = own(consumed, budget) ?? 0;
          if (back + kept !== units) problems.push(`${describeTask(task)}: event ${event.id} (${event.type}) released ${back} + consumed ${kept} of ${budget}, but the attempt held ${units}`);
        }
        if (uncertainHeld) carried++;
        held = undefined;
        uncertainHeld = false;
      }
      if (held !== undefined && !SPEC_LIVE_STATES.includes(task.task.state as never)) problems.push(`${describeTask(task)} ended ${task.task.state} still holding ${JSON.stringify(held)}`);
    }
    if (spec.minCarried !== undefined && carried < spec.minCarried) problems.push(`${carried} attempt(s) of ${describeSelector(spec.tasks)} carried a reservation through uncertain, expected at least ${spec.minCarried}`);
    if (spec.minReconciled !== undefined && reconciled < spec.minReconciled) problems.push(`${reconciled} reconciled event(s), expected at least ${spec.minReconciled}`);
    return problems.slice(0, 8);
  },
};

// ---------------------------------------------------------------- claims-reserve

interface ClaimsReserve {
  kind: 'claims-reserve';
  tasks?: TaskSelector;
  /** At least this many claims of a retry (an attempt after a retry_scheduled) reserved the task's needs. */
  minRetryClaims?: number;
}

/**
 * A4: retries spend budget. Every claim of a selected task that needs budgets reserved exactly what
 * the task needs (its enqueued event's needs), first attempts and retries alike.
 */
export const claimsReserve: ExpectationKind<ClaimsReserve> = {
  kind: 'claims-reserve',
  class: 'safety',
  description: "every claim of a selected task reserved exactly the task's needs (retries as first attempts); at least minRetryClaims claims were retries",
  schema: z.strictObject({ kind: z.literal('claims-reserve'), tasks: taskSelectorSchema.optional(), minRetryClaims: z.number().int().min(0).optional() }),
  check(spec, run) {
    const selected = selectTasks(run, spec.tasks);
    const few = tooFew(spec.tasks, selected);
    if (few !== undefined) return [few];
    const analysis = analyse(run);
    const problems: string[] = [];
    let retryClaims = 0;
    for (const task of selected) {
      const events = analysis.eventsByTask.get(task.id) ?? [];
      const needs = (events.find((event) => event.type === 'enqueued')?.data.needs as Record<string, number> | undefined) ?? {};
      let retried = false;
      for (const event of events) {
        if (event.type === 'retry_scheduled') retried = true;
        if (event.type !== 'claimed') continue;
        const reserved = (event.data.reserved as Record<string, number> | undefined) ?? {};
        const same = JSON.stringify(Object.entries(reserved).sort()) === JSON.stringify(Object.entries(needs).filter(([, units]) => units > 0).sort());
        if (!same) problems.push(`${describeTask(task)}: claim (event ${event.id}) reserved ${JSON.stringify(reserved)}, the task needs ${JSON.stringify(needs)}`);
        if (retried && same && Object.keys(needs).length > 0) retryClaims++;
        retried = false;
      }
    }
    if (spec.minRetryClaims !== undefined && retryClaims < spec.minRetryClaims) problems.push(`${retryClaims} retry claim(s) reserved the task's needs, expected at least ${spec.minRetryClaims}`);
    return problems.slice(0, 8);
  },
};

// ---------------------------------------------------------------- budget-restart

interface BudgetRestart {
  kind: 'budget-restart';
  /** At least this many restarts noted budget levels before and after; default 1. */
  minRestarts?: number;
}

interface LevelNote {
  budget: string;
  scope: string;
  kind: string;
  level: number;
  limit: number;
  updatedAt?: number;
}

/**
 * A1: bucket state survives a restart. Each restart notes the budget levels as the scheduler goes down
 * and once it is back (faults/restart.ts); nothing can reserve while it is down, so every stored row
 * is the same after (its refill clock too), concurrency and total levels are equal, and a rate bucket,
 * read refilled to the core's now, has gained at most the refill of the core's clock time in between
 * (capped at its capacity) and nothing when the clock went back: a restart (or a clock jump) grants
 * nothing beyond elapsed time.
 */
export const budgetRestart: ExpectationKind<BudgetRestart> = {
  kind: 'budget-restart',
  class: 'safety',
  description: "across each restart, budget levels are kept: the stored rows unchanged, a rate bucket refilled by at most the core clock's elapsed time (nothing when it went back)",
  schema: z.strictObject({ kind: z.literal('budget-restart'), minRestarts: z.number().int().min(0).optional() }),
  check(spec, run) {
    const budgets = (run.scenario.queue.budgets ?? {}) as Record<string, { kind: string; refill?: number; periodMs?: number; capacity?: number }>;
    const entries = run.history.entries();
    const problems: string[] = [];
    let pairs = 0;
    for (const [index, entry] of entries.entries()) {
      if (entry.type !== 'note' || entry.kind !== 'restart') continue;
      const before = entry.data as unknown as { clockMs?: number; levels?: LevelNote[] } | undefined;
      if (before?.levels === undefined || before.clockMs === undefined) continue;
      // The next budget-levels note, unless another restart (or a power loss) came first.
      const after = entries.slice(index + 1).find((other) => other.type === 'note' && (other.kind === 'budget-levels' || other.kind === 'restart' || other.kind === 'power-loss'));
      if (after === undefined || after.type !== 'note' || after.kind !== 'budget-levels') continue;
      const afterData = after.data as unknown as { clockMs: number; levels: LevelNote[] };
      pairs++;
      const delta = afterData.clockMs - before.clockMs;
      const key = (level: LevelNote) => `${level.budget}\u0000${level.scope}`;
      const afterByKey = new Map(afterData.levels.map((level) => [key(level), level]));
      for (const level of before.levels) {
        const now = afterByKey.get(key(level));
        const where = `restart at +${entry.timeMs - run.startMs} ms: ${level.budget}${level.scope === '' ? '' : ` (${level.scope})`}`;
        if (now === undefined) {
          problems.push(`${where} had level ${level.level} before and is gone after`);
          continue;
        }
        if (level.kind !== 'rate') {
          if (now.level !== level.level) problems.push(`${where} held ${level.level} before and ${now.level} after`);
          continue;
        }
        if (level.updatedAt !== undefined && now.updatedAt !== level.updatedAt) problems.push(`${where}: its refill clock was ${level.updatedAt} before and ${now.updatedAt} after: the stored bucket changed while the scheduler was down`);
        const spec = budgets[level.budget];
        // A level is read refilled to the core's now: forward, by at most the elapsed time's refill (one
        // unit of slack for whole units); back, by nothing, and it may lose only the refill it had been
        // read with for the time the clock went back (never below what is stored).
        const units = (ms: number) => (spec?.refill !== undefined && spec.periodMs !== undefined ? Math.floor((spec.refill * ms) / spec.periodMs) + 1 : 0);
        const most = delta > 0 ? Math.min(level.limit, level.level + units(delta)) : level.level;
        const least = delta >= 0 ? level.level : level.level - units(-delta);
        if (now.level < least) problems.push(`${where} had ${level.level} units before and ${now.level} after, less than ${least} (the core's clock moved ${delta} ms): a restart lost bucket state`);
        if (now.level > most) problems.push(`${where} had ${level.level} units before and ${now.level} after, more than ${most} (the core's clock moved ${delta} ms): the restart granted units`);
      }
    }
    const wanted = spec.minRestarts ?? 1;
    if (pairs < wanted) problems.push(`${pairs} restart(s) noted budget levels before and after, expected at least ${wanted}`);
    return problems.slice(0, 8);
  },
};
