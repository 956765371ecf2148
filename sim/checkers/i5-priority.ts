import type { TaskEvent, TaskState } from '../../src/queue/types.ts';
import type { FailEntry } from '../history.ts';
import type { WorldResult } from '../world.ts';
import { analyse, eventsInWindow, evAt, evOf, rolledBack, tenantLimit, ViolationList, wallTimeAt, type Analysis } from './timeline.ts';
import { applyBudgetStep, bucketKey, budgetSteps, canGrant, type BudgetStep, type ReplayedBucket } from './i15-budgets.ts';
import { historyPauses } from './i17-paused-tenant.ts';
import { specOrder, specScore } from './spec-formulas.ts';
import { specBudgetScope, SPEC_OCCUPYING_STATES } from './spec-rules.ts';
import type { Checker } from './types.ts';

/** Base priorities are integers 0..30 (Q4). */
const TOP_PRIORITY = 30;
/** The claim retires at most this many unclaimable tasks per call and then reports empty (claim.ts). */
const CLAIM_SKIPS_MAX = 64;

interface Track {
  id: number;
  tenant: string;
  topic: string;
  /** A1: what one attempt needs of each budget, from the enqueued event (none: undefined). */
  needs: Record<string, number> | undefined;
  priority: number;
  enqueuedAt: number;
  deadline: number | undefined;
  notBefore: number;
  firstClaimAt: number | undefined;
}

interface Candidate {
  track: Track;
  score: number;
}

/** What the replay found at one successful claim. */
export interface ClaimDecision {
  event: TaskEvent;
  /** The eligible ready tasks at that instant, with their aged scores. */
  candidates: Candidate[];
  /** True when the claimed task beat an eligible task of higher base priority: aging decided it. */
  agingOvertook: boolean;
}

interface Replay {
  decisions: ClaimDecision[];
  safety: ViolationList;
  liveness: ViolationList;
}

const memo = new WeakMap<WorldResult, Replay>();
const OCCUPYING = new Set<TaskState | undefined>(SPEC_OCCUPYING_STATES);

/**
 * I5 (safety): each claim takes the best eligible task by (score at claim time, enqueue time, id).
 *
 * The ready set is rebuilt by replaying the log in commit order. At a `claimed` event at wall time
 * `at` (the time the claim transaction read), a task is eligible if it is ready, its notBefore has come
 * (enqueue time, or retry time + backoff, or the interrupt time), its deadline has not passed, its
 * retry age is within maxRetryAgeMs, and its tenant has a free slot. The claimed task must be eligible,
 * must be the minimum of specOrder over the eligible set with specScore() (spec-formulas.ts: the SPEC's Q4,
 * written again for the checker, never imported from src/),
 * and the score recorded in the claim event must be that score.
 */
export const i5Priority: Checker = {
  invariant: 'I5',
  kind: 'safety',
  description: 'priority order: each claim takes the best eligible task by (aged score, enqueue time, id)',
  check: (world) => replayClaims(world).safety.list,
};

/**
 * I5 (liveness): no starvation. Two rules.
 *
 * 1. No idle refusal: a claim refused `empty` or `quota` while a global slot was free and some task was
 *    ready and eligible (as above, at the wall time of the refused claim, placed by its `ev` cursor) let
 *    that task starve with a worker asking. Exception: a claim that retired CLAIM_SKIPS_MAX unclaimable
 *    tasks may stop there (claim.ts bounds the work of one claim).
 *
 * 2. The aging bound. Let T have base b and let U be claimed while T is eligible, with T ahead of U in
 *    (enqueue time, id). If T had waited at least D = (30 - b) * agingPeriodMs longer than U, then U can
 *    only win if U itself had waited at least (b + agingCap - 29) * agingPeriodMs. Proof: with
 *    floor(wT / P) >= floor(wU / P) + (30 - b), an uncapped T scores b + floor(wT / P) >= 30 + aU >=
 *    score(U), and T wins the tie on enqueue time; a capped T scores b + agingCap, which U (base <= 30)
 *    beats only with aU >= b + agingCap - 29. So a base-0 task that has waited 30 periods is passed by
 *    no newcomer until newcomers themselves wait 1 + agingCap - 30 periods: T is claimed within
 *    D + the time the queue needs to drain the work enqueued before e_T + D (each such task at most
 *    maxDeliveries claims), plus work that aged past the cap while T was also capped. The checker
 *    checks the per-overtake form, which needs no assumption about throughput.
 */
export const i5Starvation: Checker = {
  invariant: 'I5',
  kind: 'liveness',
  description: 'no starvation: no refused claim while a task was eligible with a free slot; the aging bound',
  check: (world) => replayClaims(world).liveness.list,
};

export function claimDecisions(world: WorldResult): ClaimDecision[] {
  return replayClaims(world).decisions;
}

function replayClaims(world: WorldResult): Replay {
  const cached = memo.get(world);
  if (cached !== undefined) return cached;
  const analysis = analyse(world);
  const replay: Replay = { decisions: [], safety: new ViolationList('I5', 'safety'), liveness: new ViolationList('I5', 'liveness') };
  const tracks = new Map<number, Track>();
  for (const task of analysis.tasks.values()) {
    tracks.set(task.id, {
      id: task.id,
      tenant: task.tenant,
      topic: task.topic,
      needs: needsOf(analysis.eventsByTask.get(task.id)?.[0]),
      priority: task.priority,
      enqueuedAt: task.enqueuedAt,
      deadline: task.deadline,
      notBefore: task.enqueuedAt,
      firstClaimAt: undefined,
    });
  }
  const ready = new Set<number>();
  const occupied = { global: 0, byTenant: new Map<string, number>() };
  const refusals = refusedClaims(world);
  let next = 0;
  const steps = new Map<number, BudgetStep[]>();
  for (const step of budgetSteps(world, analysis)) {
    const list = steps.get(step.position);
    if (list === undefined) steps.set(step.position, [step]);
    else list.push(step);
  }
  const pauses = [...historyPauses(world, analysis).values()].flat().sort((a, b) => (a.ev ?? 0) - (b.ev ?? 0));
  const context: Context = { world, analysis, tracks, ready, occupied, replay, buckets: new Map(), steps, pauses, sessions: new Map(), critical: new Set([...analysis.eventsByTask].filter(([, events]) => events[0]?.type === 'enqueued' && events[0].data.critical === true).map(([id]) => id)) };
  world.events.forEach((event, position) => {
    while (next < refusals.length && refusals[next]!.ev < event.id) judgeRefusal(context, refusals[next++]!.entry);
    if (event.type === 'claimed') judgeClaim(context, event);
    apply(context, event, position);
  });
  while (next < refusals.length) judgeRefusal(context, refusals[next++]!.entry);
  memo.set(world, replay);
  return replay;
}

interface Context {
  world: WorldResult;
  analysis: Analysis;
  tracks: Map<number, Track>;
  ready: Set<number>;
  occupied: { global: number; byTenant: Map<string, number> };
  replay: Replay;
  /** A1: the budgets replayed up to the event being judged (I15's replay). */
  buckets: Map<string, ReplayedBucket>;
  steps: Map<number, BudgetStep[]>;
  /** A2: acknowledged pauses and resumes, by the event cursor at their commit. */
  pauses: { tenant: string; paused: boolean; ev?: number }[];
  /** A6: running and uncertain tasks per session (tenant, topic). */
  sessions: Map<string, number>;
  /** A2: critical tasks (their enqueued event says so). */
  critical: Set<number>;
}

function sessionKey(track: Pick<Track, 'tenant' | 'topic'>): string {
  return `${track.tenant}\u0000${track.topic}`;
}

/** A1: the needs an enqueued event names (the trusted caller's, A1), or undefined. */
function needsOf(event: TaskEvent | undefined): Record<string, number> | undefined {
  const needs = event?.type === 'enqueued' ? event.data.needs : undefined;
  if (needs === null || typeof needs !== 'object' || Array.isArray(needs)) return undefined;
  return needs as Record<string, number>;
}

/**
 * A2: the tenants paused when a transaction placed at `cursor` ran. A claim's own event has an id above
 * every pause committed before it (`strict`); a refusal writes no event, so a pause at its very cursor
 * may have come either side of it and counts as paused (the judge does not blame the queue for it).
 */
function pausedAt(context: Context, cursor: number, strict: boolean): Set<string> {
  const paused = new Set<string>();
  for (const change of context.pauses) {
    const ev = change.ev ?? 0;
    if (strict ? ev >= cursor : ev > cursor) break;
    if (change.paused) paused.add(change.tenant);
    else if (!(!strict && ev === cursor)) paused.delete(change.tenant);
  }
  return paused;
}

/**
 * The task a claim must take (A1, A2 on top of Q4): the eligible tasks in (score, enqueue time, id)
 * order, walked as the SPEC's admission does it: a paused tenant's tasks wait; a task whose session
 * (tenant, topic) has a running or uncertain task waits (A6, unless the policy is versioned); a task whose needs some
 * budget cannot grant now waits, holds that budget for itself (no smaller need behind it may take
 * it: the first budget in name order that says no, or that a better task already waits for), and its
 * tenant takes nothing more in this claim; a task a total budget (per run or session) can never grant
 * again ends instead of running. Returns the winner (undefined: none), and the tasks that waited.
 * A walk that would pass over more than CLAIM_SKIPS_MAX tasks is `unbounded`: the claim may stop there.
 */
function admissionWalk(context: Context, candidates: readonly Candidate[], at: number, paused: ReadonlySet<string>): { winner?: Candidate; waited: Set<number>; unbounded: boolean } {
  const { budgets, sessionPolicy } = context.analysis.config;
  const open: { candidate: Candidate; order: ReturnType<typeof key> }[] = [];
  for (const candidate of candidates) if (!paused.has(candidate.track.tenant)) open.push({ candidate, order: key(candidate) });
  // Most walks end at their first task: it is found alone, and the rest are sorted only when the walk
  // goes on past it. specOrder is a strict order (ids differ), so the walk visits the same tasks in the
  // same order as over the whole list sorted at once.
  moveBestFirst(open);
  const heldBack = new Set<string>();
  const blocked = new Set<string>();
  const waited = new Set<number>();
  let skips = 0;
  for (let index = 0; index < open.length; index++) {
    if (index === 1) sortFrom(open, 1);
    const { candidate } = open[index]!;
    const { track } = candidate;
    if (blocked.has(track.tenant)) {
      waited.add(track.id);
      continue;
    }
    // A6: under serial and cancel_in_progress a session runs one task at a time (uncertain included);
    // the task waits and holds nothing back: other sessions of its tenant may run.
    if (sessionPolicy !== 'versioned' && (context.sessions.get(sessionKey(track)) ?? 0) > 0) {
      if (++skips > CLAIM_SKIPS_MAX) return { waited, unbounded: true };
      waited.add(track.id);
      continue;
    }
    let refusal: { key: string; total: boolean } | undefined;
    for (const budget of Object.keys(track.needs ?? {}).sort()) {
      const units = track.needs![budget]!;
      const spec = Object.hasOwn(budgets, budget) ? budgets[budget] : undefined;
      if (spec === undefined || units === 0) continue;
      const bucket = bucketKey(budget, specBudgetScope(spec, track));
      if (heldBack.has(bucket) || !canGrant(spec, context.buckets.get(bucket), units, at)) {
        refusal = { key: bucket, total: spec.kind === 'total' && !heldBack.has(bucket) };
        break;
      }
    }
    if (refusal === undefined) return { winner: candidate, waited, unbounded: false };
    if (++skips > CLAIM_SKIPS_MAX) return { waited, unbounded: true };
    waited.add(track.id);
    if (refusal.total) continue;
    heldBack.add(refusal.key);
    blocked.add(track.tenant);
  }
  return { waited, unbounded: false };
}

type Keyed = { candidate: Candidate; order: ReturnType<typeof key> };

/** Swaps the first candidate in specOrder to the front. */
function moveBestFirst(keyed: Keyed[]): void {
  let best = 0;
  for (let index = 1; index < keyed.length; index++) if (specOrder(keyed[index]!.order, keyed[best]!.order) < 0) best = index;
  if (best !== 0) [keyed[0], keyed[best]] = [keyed[best]!, keyed[0]!];
}

/** Sorts keyed[from..] in specOrder, in place. */
function sortFrom(keyed: Keyed[], from: number): void {
  const rest = keyed.slice(from).sort((a, b) => specOrder(a.order, b.order));
  for (let index = 0; index < rest.length; index++) keyed[from + index] = rest[index]!;
}

function apply(context: Context, event: TaskEvent, position: number): void {
  const { analysis, tracks, ready, occupied } = context;
  for (const step of context.steps.get(position) ?? []) applyBudgetStep(context.buckets, step, analysis.config.budgets[step.budget]!);
  const before = analysis.stateBefore[position];
  const after = analysis.stateAfter[position];
  const track = tracks.get(event.taskId);
  if (after === 'ready') ready.add(event.taskId);
  else ready.delete(event.taskId);
  const delta = (OCCUPYING.has(after) ? 1 : 0) - (OCCUPYING.has(before) ? 1 : 0);
  if (delta !== 0 && track !== undefined) {
    occupied.global += delta;
    occupied.byTenant.set(track.tenant, (occupied.byTenant.get(track.tenant) ?? 0) + delta);
    context.sessions.set(sessionKey(track), (context.sessions.get(sessionKey(track)) ?? 0) + delta);
  }
  if (track === undefined) return;
  if (event.type === 'claimed') track.firstClaimAt ??= event.at;
  // Q16: a retry waits out its backoff; an interrupted run may be claimed at once (R8).
  if (event.type === 'retry_scheduled' && typeof event.data.backoffMs === 'number') track.notBefore = event.at + event.data.backoffMs;
  if (event.type === 'interrupted') track.notBefore = event.at;
}

/** Why a ready task could not be claimed at `at`, or undefined if it could. */
function ineligibility(context: Context, track: Track, at: number): string | undefined {
  const { config } = context.analysis;
  if (track.notBefore > at) return `notBefore ${track.notBefore} > ${at}`;
  if (track.deadline !== undefined && track.deadline <= at) return `deadline ${track.deadline} passed`;
  if (track.firstClaimAt !== undefined && at - track.firstClaimAt > config.maxRetryAgeMs) return 'retry age exceeded';
  const held = context.occupied.byTenant.get(track.tenant) ?? 0;
  if (held >= tenantLimit(config, track.tenant)) return `tenant ${track.tenant} at its limit (${held})`;
  return undefined;
}

function eligibleCandidates(context: Context, at: number): Candidate[] {
  const candidates: Candidate[] = [];
  for (const id of context.ready) {
    const track = context.tracks.get(id);
    if (track === undefined || ineligibility(context, track, at) !== undefined) continue;
    candidates.push({ track, score: specScore(track.priority, track.enqueuedAt, at, context.analysis.config) });
  }
  return candidates;
}

function key(candidate: Candidate) {
  return { score: candidate.score, enqueuedAt: candidate.track.enqueuedAt, id: candidate.track.id };
}

function judgeClaim(context: Context, event: TaskEvent): void {
  const { replay, tracks } = context;
  const at = event.at;
  const claimed = tracks.get(event.taskId);
  if (claimed === undefined) return;
  const all = eligibleCandidates(context, at);
  // A3: under fair share the claim first picks the least served tenant (judged by I19; critical work
  // bypasses it), then Q4 within it: the order is judged among the claimed tenant's own tasks.
  const fair = context.analysis.config.fairness === 'fair_share' && !context.critical.has(claimed.id);
  const eligible = fair ? all.filter((candidate) => candidate.track.tenant === claimed.tenant) : all;
  const paused = pausedAt(context, event.id, true);
  const walk = admissionWalk(context, eligible, at, paused);
  // What the claim could take: eligible, of a tenant not paused, not waiting for a budget.
  const candidates = eligible.filter((candidate) => !paused.has(candidate.track.tenant) && !walk.waited.has(candidate.track.id));
  const mine = candidates.find((candidate) => candidate.track.id === event.taskId);
  if (mine === undefined) {
    const why = !context.ready.has(event.taskId)
      ? 'not ready'
      : paused.has(claimed.tenant)
        ? `tenant ${claimed.tenant} paused`
        : walk.waited.has(claimed.id)
          ? 'it had to wait for its session or a budget'
          : ineligibility(context, claimed, at);
    replay.safety.add('ineligible', `task ${event.taskId} was claimed at ${at} though it was not eligible (${String(why)})`, { taskId: event.taskId });
  } else {
    const best = walk.winner;
    if (best !== undefined && best !== mine && !walk.unbounded) {
      replay.safety.add(
        'order',
        `claim at ${at} took task ${event.taskId} (base ${claimed.priority}, score ${mine.score}) over task ${best.track.id} (base ${best.track.priority}, score ${best.score}, enqueued ${best.track.enqueuedAt})`,
        { taskId: event.taskId },
      );
    }
    if (event.data.score !== mine.score) {
      replay.safety.add('score', `claim of task ${event.taskId} at ${at} recorded score ${String(event.data.score)}, expected ${mine.score}`, { taskId: event.taskId });
    }
  }
  checkAgingBound(context, event, claimed, candidates);
  const agingOvertook = mine !== undefined && candidates.some((candidate) => candidate.track.priority > claimed.priority);
  replay.decisions.push({ event, candidates, agingOvertook });
}

function checkAgingBound(context: Context, event: TaskEvent, claimed: Track, candidates: Candidate[]): void {
  const { config } = context.analysis;
  const at = event.at;
  const waitedU = Math.max(0, at - claimed.enqueuedAt);
  for (const { track } of candidates) {
    if (track.id === claimed.id) continue;
    const ahead = track.enqueuedAt < claimed.enqueuedAt || (track.enqueuedAt === claimed.enqueuedAt && track.id < claimed.id);
    if (!ahead) continue;
    const lead = Math.max(0, at - track.enqueuedAt) - waitedU;
    if (lead < (TOP_PRIORITY - track.priority) * config.agingPeriodMs) continue;
    if (waitedU >= (track.priority + config.agingCap - (TOP_PRIORITY - 1)) * config.agingPeriodMs) continue;
    context.replay.liveness.add(
      'aging bound',
      `task ${track.id} (base ${track.priority}) had waited ${lead} ms longer than task ${event.taskId} (base ${claimed.priority}, waited ${waitedU} ms), yet the claim at ${at} took ${event.taskId}`,
      { taskId: track.id },
    );
  }
}

function refusedClaims(world: WorldResult): { entry: FailEntry; ev: number }[] {
  const refusals: { entry: FailEntry; ev: number }[] = [];
  for (const entry of world.history.entries()) {
    // A refusal answered in history a power loss undid is judged against a log that is gone: left out.
    if (entry.type !== 'fail' || entry.op !== 'claim' || (entry.reason !== 'empty' && entry.reason !== 'quota') || rolledBack(analyse(world), entry)) continue;
    const ev = evOf(entry);
    if (ev !== undefined) refusals.push({ entry, ev });
  }
  return refusals.sort((a, b) => a.ev - b.ev || a.entry.index - b.entry.index);
}

function judgeRefusal(context: Context, entry: FailEntry): void {
  const { analysis, occupied, replay } = context;
  if (occupied.global >= analysis.config.globalLimit) return;
  const ev = evAt(analysis, entry) ?? 0;
  const from = analysis.cursorBefore[entry.invokeIndex] ?? 0;
  let retired = 0;
  for (const event of eventsInWindow(context.world, from, ev)) {
    if ((event.type === 'expired' || event.type === 'failed') && event.data.from === 'ready') retired++;
  }
  if (retired >= CLAIM_SKIPS_MAX) return;
  const at = wallTimeAt(analysis, entry);
  const walk = admissionWalk(context, eligibleCandidates(context, at), at, pausedAt(context, ev, false));
  const best = walk.winner;
  if (best === undefined || walk.unbounded) return;
  replay.liveness.add(
    'idle refusal',
    `claim by ${entry.actor} at ${at} was refused ${entry.reason} with ${occupied.global}/${analysis.config.globalLimit} slots held while task ${best.track.id} was ready and eligible`,
    { at: [entry.index], taskId: best.track.id },
  );
}

