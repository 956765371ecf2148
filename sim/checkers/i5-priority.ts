import type { TaskEvent, TaskState } from '../../src/queue/types.ts';
import type { FailEntry } from '../history.ts';
import type { WorldResult } from '../world.ts';
import { analyse, eventsInWindow, evAt, evOf, rolledBack, tenantLimit, ViolationList, wallTimeAt, type Analysis } from './timeline.ts';
import { specOrder, specScore } from './spec-formulas.ts';
import { SPEC_OCCUPYING_STATES } from './spec-rules.ts';
import type { Checker } from './types.ts';

/** Base priorities are integers 0..30 (Q4). */
const TOP_PRIORITY = 30;
/** The claim retires at most this many unclaimable tasks per call and then reports empty (claim.ts). */
const CLAIM_SKIPS_MAX = 64;

interface Track {
  id: number;
  tenant: string;
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
  const context = { world, analysis, tracks, ready, occupied, replay };
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
}

function apply(context: Context, event: TaskEvent, position: number): void {
  const { analysis, tracks, ready, occupied } = context;
  const before = analysis.stateBefore[position];
  const after = analysis.stateAfter[position];
  const track = tracks.get(event.taskId);
  if (after === 'ready') ready.add(event.taskId);
  else ready.delete(event.taskId);
  const delta = (OCCUPYING.has(after) ? 1 : 0) - (OCCUPYING.has(before) ? 1 : 0);
  if (delta !== 0 && track !== undefined) {
    occupied.global += delta;
    occupied.byTenant.set(track.tenant, (occupied.byTenant.get(track.tenant) ?? 0) + delta);
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
  const candidates = eligibleCandidates(context, at);
  const mine = candidates.find((candidate) => candidate.track.id === event.taskId);
  if (mine === undefined) {
    const why = context.ready.has(event.taskId) ? ineligibility(context, claimed, at) : 'not ready';
    replay.safety.add('ineligible', `task ${event.taskId} was claimed at ${at} though it was not eligible (${String(why)})`, { taskId: event.taskId });
  } else {
    const best = candidates.reduce((a, b) => (specOrder(key(a), key(b)) <= 0 ? a : b));
    if (best !== mine) {
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
  const candidates = eligibleCandidates(context, at);
  if (candidates.length === 0) return;
  const best = candidates.reduce((a, b) => (specOrder(key(a), key(b)) <= 0 ? a : b));
  replay.liveness.add(
    'idle refusal',
    `claim by ${entry.actor} at ${at} was refused ${entry.reason} with ${occupied.global}/${analysis.config.globalLimit} slots held while task ${best.track.id} was ready and eligible`,
    { at: [entry.index], taskId: best.track.id },
  );
}

