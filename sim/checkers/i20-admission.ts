import type { TaskEvent } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';
import { replayCounts } from './i3-quotas.ts';
import { SPEC_ADMISSION_REASONS, SPEC_CAPACITY_REASONS, specIsTerminal } from './spec-rules.ts';
import { analyse, evAt, lastAtOrBefore, rolledBack, ViolationList } from './timeline.ts';
import type { Checker } from './types.ts';

const REASONS = new Set(SPEC_ADMISSION_REASONS);
const CAPACITY = new Set(SPEC_CAPACITY_REASONS);
const DECISIONS = new Set(['RUN', 'DEFER', 'REJECT']);
const PAUSE_CHANGES = new Set(['PAUSE', 'RESUME']);

/** A deferral the log records: a `deferred` event, or an `enqueued` event whose data says it was admitted DEFER. */
export interface LoggedDeferral {
  event: TaskEvent;
  reason: unknown;
  retryAt?: unknown;
}

export function loggedDeferrals(world: WorldResult): LoggedDeferral[] {
  const out: LoggedDeferral[] = [];
  for (const event of world.events) {
    if (event.type === 'deferred') out.push({ event, reason: event.data.reason, retryAt: event.data.retryAt });
    else if (event.type === 'enqueued') {
      const admission = event.data.admission as { action?: unknown; reason?: unknown } | undefined;
      if (admission !== null && typeof admission === 'object' && admission.action === 'DEFER') out.push({ event, reason: admission.reason });
    }
  }
  return out;
}

/** Counts of a multiset of keys. */
function bag(keys: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const key of keys) counts.set(key, (counts.get(key) ?? 0) + 1);
  return counts;
}

function missing(from: Map<string, number>, against: Map<string, number>): [string, number][] {
  return [...from].filter(([key, n]) => (against.get(key) ?? 0) < n).map(([key, n]) => [key, n - (against.get(key) ?? 0)]);
}

const show = (key: string) => key.split('\u0000').join(' / ');

/**
 * I20: admission is explicit (A2).
 *
 * Rules:
 * - every admission decision (RUN, DEFER, REJECT) and every deferral in the log carries a reason from
 *   the SPEC's set; a row's action is a decision or a pause change (PAUSE / RESUME, I17's);
 * - every rejection recorded for admission (a reason of the set) has its REJECT decision (same tenant,
 *   instant and reason; `queue_full` and `over_capacity` are one capacity refusal), and every REJECT
 *   its rejection: the refusal is explicit in both books;
 * - every DEFER of a task has its deferral in the task's log (a `deferred` event, or the `enqueued`
 *   event's admission) and the other way round; a DEFER is recorded once per change: two deferrals of
 *   one task with the same reason and no claim between are one wait written twice;
 * - a rate DEFER's retryAt is never before the instant of the decision;
 * - no critical task is REJECTed for capacity while fewer than capacity + criticalHeadroom tasks are
 *   live (ready + running + uncertain, replayed as I4 does), at the point of the log the refusal
 *   committed at.
 */
export const i20Admission: Checker = {
  invariant: 'I20',
  kind: 'safety',
  description: 'admission is explicit: every decision carries a reason from the set; every refusal and deferral recorded; no critical task rejected for capacity within the headroom',
  check(world: WorldResult) {
    const analysis = analyse(world);
    const out = new ViolationList('I20', 'safety');
    const deferrals = loggedDeferrals(world);
    for (const deferral of deferrals) {
      const { event } = deferral;
      if (typeof deferral.reason !== 'string' || !REASONS.has(deferral.reason)) out.add('reason', `task ${event.taskId}'s ${event.type} event ${event.id} defers it with reason ${JSON.stringify(deferral.reason)}, not one of the SPEC's`, { taskId: event.taskId });
      if (deferral.retryAt !== undefined && (typeof deferral.retryAt !== 'number' || deferral.retryAt < event.at)) out.add('retryAt', `task ${event.taskId}'s deferral (event ${event.id} at ${event.at}) names retryAt ${JSON.stringify(deferral.retryAt)}, before the decision`, { taskId: event.taskId });
    }
    checkOncePerChange(world, deferrals, out);
    const rows = world.admissionDecisions;
    if (rows !== undefined) {
      for (const row of rows) {
        if (PAUSE_CHANGES.has(row.action)) continue;
        if (!DECISIONS.has(row.action)) out.add('reason', `an admission decision of tenant ${row.tenant} at ${row.at} has action ${JSON.stringify(row.action)}`, row.taskId === undefined ? {} : { taskId: row.taskId });
        else if (!REASONS.has(row.reason)) out.add('reason', `a ${row.action} of tenant ${row.tenant}${row.taskId === undefined ? '' : ` (task ${row.taskId})`} at ${row.at} has reason ${JSON.stringify(row.reason)}, not one of the SPEC's`, row.taskId === undefined ? {} : { taskId: row.taskId });
        if (row.retryAt !== undefined && row.retryAt < row.at) out.add('retryAt', `a ${row.action} of task ${row.taskId} at ${row.at} names retryAt ${row.retryAt}, before the decision`, row.taskId === undefined ? {} : { taskId: row.taskId });
      }
      // Capacity refusals are one class whichever of Q3's or A2's names they carry.
      const reasonClass = (reason: string) => (CAPACITY.has(reason) ? 'capacity' : reason);
      const rejections = bag(world.final.rejections.filter((rejection) => REASONS.has(rejection.reason)).map((rejection) => `${rejection.tenant}\u0000${rejection.at}\u0000${reasonClass(rejection.reason)}`));
      const rejects = bag(rows.filter((row) => row.action === 'REJECT').map((row) => `${row.tenant}\u0000${row.at}\u0000${reasonClass(row.reason)}`));
      for (const [key, n] of missing(rejections, rejects)) out.add('rejection', `${n} rejection(s) of ${show(key)} have no REJECT admission decision`);
      for (const [key, n] of missing(rejects, rejections)) out.add('rejection', `${n} REJECT decision(s) of ${show(key)} have no recorded rejection`);
      const defers = bag(rows.filter((row) => row.action === 'DEFER' && row.taskId !== undefined).map((row) => `task ${row.taskId}\u0000${row.at}\u0000${row.reason}`));
      const logged = bag(deferrals.map((deferral) => `task ${deferral.event.taskId}\u0000${deferral.event.at}\u0000${String(deferral.reason)}`));
      for (const [key, n] of missing(logged, defers)) out.add('deferral', `${n} deferral(s) in the log (${show(key)}) have no DEFER admission decision`);
      for (const [key, n] of missing(defers, logged)) out.add('deferral', `${n} DEFER decision(s) (${show(key)}) have no deferral in the task's log`);
    }
    checkCritical(world, analysis, out);
    return out.list;
  },
};

/** A DEFER is written once per change of the task's reason; a claim ends the wait. */
function checkOncePerChange(world: WorldResult, deferrals: LoggedDeferral[], out: ViolationList): void {
  const deferralById = new Map(deferrals.map((deferral) => [deferral.event.id, deferral]));
  const waiting = new Map<number, { reason: unknown; id: number }>();
  for (const event of world.events) {
    if (event.type === 'claimed') {
      waiting.delete(event.taskId);
      continue;
    }
    const deferral = deferralById.get(event.id);
    if (deferral === undefined) continue;
    const before = waiting.get(event.taskId);
    if (before !== undefined && before.reason === deferral.reason) out.add('once', `task ${event.taskId} was deferred ${JSON.stringify(deferral.reason)} again (event ${event.id}) while still waiting on the same reason (event ${before.id}): a DEFER is recorded once per change`, { taskId: event.taskId });
    waiting.set(event.taskId, { reason: deferral.reason, id: event.id });
  }
}

/** No critical task REJECTed for capacity while the live tasks were fewer than capacity + criticalHeadroom. */
function checkCritical(world: WorldResult, analysis: ReturnType<typeof analyse>, out: ViolationList): void {
  const { capacity, criticalHeadroom } = analysis.config;
  const key = (tenant: unknown, topic: unknown, version: unknown) => `${String(tenant)}\u0000${String(topic)}\u0000${String(version)}`;
  const critical = new Set(world.enqueued.filter(({ arrival }) => arrival.request.critical === true).map(({ arrival }) => key(arrival.request.tenant, arrival.request.topic, arrival.request.version)));
  const entries = world.history.entries();
  const refusals = entries.filter((entry) => entry.type === 'fail' && entry.op === 'enqueue' && CAPACITY.has(entry.reason) && !rolledBack(analysis, entry));
  if (refusals.length === 0) return;
  const ids: number[] = [];
  const liveAfter: number[] = [];
  replayCounts(world, analysis, (position, counts) => {
    ids.push(world.events[position]!.id);
    liveAfter.push(counts.live);
  });
  for (const entry of refusals) {
    if (entry.type !== 'fail') continue;
    const invoke = entries[entry.invokeIndex];
    const data = invoke?.data as { tenant?: unknown; topic?: unknown; version?: unknown; critical?: unknown; args?: unknown } | undefined;
    const request = (Array.isArray(data?.args) ? data.args[0] : undefined) as { tenant?: unknown; topic?: unknown; version?: unknown; critical?: unknown } | undefined;
    const source = request ?? data;
    if (source === undefined) continue;
    const isCritical = source.critical === true || data?.critical === true || critical.has(key(source.tenant, source.topic, source.version));
    if (!isCritical) continue;
    const ev = evAt(analysis, entry);
    if (ev === undefined) continue;
    const found = lastAtOrBefore(ids, (id) => id, ev);
    const live = found < 0 ? 0 : liveAfter[found]!;
    if (live < capacity + criticalHeadroom) {
      out.add('critical', `critical enqueue of ${show(key(source.tenant, source.topic, source.version))} was refused ${entry.reason} with ${live} live tasks, capacity ${capacity} + critical headroom ${criticalHeadroom}`, { at: [entry.index] });
    }
  }
}

/** I20, liveness: no DEFERred task is lost: after the liveness phase of a drained run each one is terminal. */
export const i20DeferredNotLost: Checker = {
  invariant: 'I20',
  kind: 'liveness',
  description: 'no DEFERred task is lost: every deferred task ends terminal after the liveness phase',
  check(world: WorldResult) {
    const out = new ViolationList('I20', 'liveness');
    if (!world.drained) return out.list;
    const analysis = analyse(world);
    const deferred = new Set(loggedDeferrals(world).map((deferral) => deferral.event.taskId));
    for (const row of world.admissionDecisions ?? []) if (row.action === 'DEFER' && row.taskId !== undefined) deferred.add(row.taskId);
    for (const taskId of [...deferred].sort((a, b) => a - b)) {
      const task = analysis.tasks.get(taskId);
      if (task === undefined) out.add('lost', `task ${taskId} was deferred but the database does not have it`, { taskId });
      else if (!specIsTerminal(task.state)) out.add('lost', `task ${taskId} was deferred and is still ${task.state} after the liveness phase`, { taskId });
    }
    return out.list;
  },
};
