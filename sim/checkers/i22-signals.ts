import type { OkEntry } from '../history.ts';
import type { WorldResult } from '../world.ts';
import type { Checker } from './types.ts';
import { analyse, evAt, rolledBack, tenantLimit, ViolationList, type Analysis } from './timeline.ts';

/**
 * I22: signals are true. Every `signals()` answer the monitor recorded (world.ts scheduleMonitor, the
 * scenario's `monitor` section) equals a recomputation from the history at the same instant: the event
 * log replayed up to the read's cursor `ev`, and the recorded rows (admission decisions, rejections)
 * by time. The rules are restated here from SPEC A5, not taken from src/queue/signals.ts:
 *
 * - depth: ready tasks per (tenant, priority); leases: running tasks with holder and generation, age =
 *   now - its last claim; awaitingReconciliation: uncertain tasks; oldestWaiting: per tenant its ready
 *   task of least (enqueuedAt, id), waitedMs = now - enqueuedAt. All exact.
 * - decisions: RUN 'admitted' = claims in the log, DEFER by reason = the deferrals in the log (the
 *   deferred events and the enqueued events' admission), exact; REJECT, PAUSE, RESUME by reason and
 *   rejections by reason carry no event: between the rows recorded before now and those recorded at or
 *   before now (a row of the read's own instant may fall either side of it).
 * - retries by error class: the retry_scheduled events (fail -> ready), exact.
 * - waitMs, runMs: over the last WINDOW tasks created by (enqueuedAt, id): waitMs over those claimed
 *   (first claim - enqueuedAt), runMs over those ended after a claim (end - last claim); count, and
 *   nearest-rank p50, p95, and the max; null with no sample. Exact.
 * - alerts.stuckWhileCapacityNormal is true exactly when fewer than globalLimit tasks occupy slots and
 *   some ready task has waited at least stuckAfterMs since it was accepted whose tenant is not paused
 *   and below its slot limit, whose backoff has passed and whose deadline has not; so never for a
 *   paused tenant's work. Skipped when a pause or resume was recorded at the read's own instant.
 *
 * A run without a monitor has nothing to judge. The lease's expiresInMs is not judged (heartbeats write
 * no event); `at` must be the instant the read was recorded.
 */
export const WINDOW = 1_000;

const LIVE = new Set(['ready', 'running', 'uncertain']);

interface Track {
  id: number;
  tenant: string;
  priority: number;
  enqueuedAt: number;
  deadline: number | undefined;
  state: string | undefined;
  notBefore: number;
  firstClaimAt?: number;
  lastClaimAt?: number;
  endedAt?: number;
  workerId?: string;
  generation?: number;
}

interface Summary {
  count: number;
  p50: number | null;
  p95: number | null;
  max: number | null;
}

/** What I22 recomputes for one read. `exact` fields must equal; `bounds` give [least, most] per key. */
export interface Recomputed {
  at: number;
  depth: { tenant: string; priority: number; n: number }[];
  leases: { taskId: number; tenant: string; workerId: string; generation: number; ageMs: number }[];
  awaitingReconciliation: number;
  oldestWaiting: { tenant: string; taskId: number; enqueuedAt: number; waitedMs: number }[];
  retries: { errorClass: string; n: number }[];
  /** 'ACTION:reason' -> [least, most]. */
  decisions: Map<string, [number, number]>;
  /** reason -> [least, most]. */
  rejections: Map<string, [number, number]>;
  waitMs: Summary;
  runMs: Summary;
  /** undefined when a pause or resume was recorded at the read's instant. */
  stuck: boolean | undefined;
  /** A paused tenant's ready work has waited stuckAfterMs with slots free (the alert must stay silent for it). */
  pausedWaitingStuck: boolean;
  /** Ready work of a tenant at its own slot limit has waited stuckAfterMs with slots free (silent for it too). */
  atLimitWaitingStuck: boolean;
  occupied: number;
}

interface Read {
  entry: OkEntry;
  ev: number;
  signals: Record<string, unknown>;
}

function readsOf(world: WorldResult, analysis: Analysis): Read[] {
  const reads: Read[] = [];
  for (const entry of world.history.entries()) {
    if (entry.type !== 'ok' || entry.op !== 'signals' || rolledBack(analysis, entry)) continue;
    const data = entry.data as { signals?: unknown } | undefined;
    const ev = evAt(analysis, entry);
    if (ev === undefined || data?.signals === undefined || data.signals === null || typeof data.signals !== 'object') continue;
    reads.push({ entry, ev, signals: data.signals as Record<string, unknown> });
  }
  return reads.sort((a, b) => a.ev - b.ev || a.entry.index - b.entry.index);
}

function summary(samples: number[]): Summary {
  if (samples.length === 0) return { count: 0, p50: null, p95: null, max: null };
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = (q: number) => sorted[Math.max(0, Math.ceil((q * sorted.length) / 100) - 1)]!;
  return { count: sorted.length, p50: rank(50), p95: rank(95), max: sorted[sorted.length - 1]! };
}

/** Each recorded read with what the history says it should have answered, in cursor order. */
export function recomputeSignals(world: WorldResult): { read: Read; expected: Recomputed }[] {
  const analysis = analyse(world);
  const reads = readsOf(world, analysis);
  if (reads.length === 0) return [];
  const { config } = analysis;
  const tracks = new Map<number, Track>();
  let runs = 0;
  const defers = new Map<string, number>();
  const retries = new Map<string, number>();
  const out: { read: Read; expected: Recomputed }[] = [];
  let position = 0;
  const events = world.events;
  const timedRows = (world.admissionDecisions ?? []).filter((row) => row.action === 'REJECT' || row.action === 'PAUSE' || row.action === 'RESUME');
  const pauseRows = timedRows.filter((row) => row.action !== 'REJECT');
  const rejectionRows = world.final.rejections;

  for (const read of reads) {
    for (; position < events.length && events[position]!.id <= read.ev; position++) {
      const event = events[position]!;
      let track = tracks.get(event.taskId);
      if (track === undefined) {
        const view = analysis.tasks.get(event.taskId);
        track = {
          id: event.taskId,
          tenant: view?.tenant ?? '',
          priority: view?.priority ?? 0,
          enqueuedAt: view?.enqueuedAt ?? event.at,
          deadline: view?.deadline,
          state: undefined,
          notBefore: view?.enqueuedAt ?? event.at,
        };
        tracks.set(event.taskId, track);
      }
      const before = analysis.stateBefore[position];
      const after = analysis.stateAfter[position];
      track.state = after;
      if (event.type === 'claimed') {
        runs += 1;
        track.firstClaimAt ??= event.at;
        track.lastClaimAt = event.at;
        track.workerId = event.workerId;
        track.generation = event.generation;
      }
      if (after !== undefined && !LIVE.has(after) && (before === undefined || LIVE.has(before))) track.endedAt = event.at;
      if (event.type === 'retry_scheduled') {
        if (typeof event.data.backoffMs === 'number') track.notBefore = event.at + event.data.backoffMs;
        const errorClass = String(event.data.errorClass);
        retries.set(errorClass, (retries.get(errorClass) ?? 0) + 1);
      }
      if (event.type === 'interrupted') track.notBefore = event.at;
      if (event.type === 'deferred' && typeof event.data.reason === 'string') defers.set(event.data.reason, (defers.get(event.data.reason) ?? 0) + 1);
      const admission = event.type === 'enqueued' ? (event.data.admission as { action?: unknown; reason?: unknown } | undefined) : undefined;
      if (admission?.action === 'DEFER' && typeof admission.reason === 'string') defers.set(admission.reason, (defers.get(admission.reason) ?? 0) + 1);
    }
    const at = read.entry.timeMs + (analysis.skewAt[read.entry.index] ?? 0);
    out.push({ read, expected: recomputeAt(world, analysis, at, [...tracks.values()], runs, defers, retries, timedRows, pauseRows, rejectionRows, config) });
  }
  return out;
}

function recomputeAt(
  _world: WorldResult,
  _analysis: Analysis,
  at: number,
  tracks: Track[],
  runs: number,
  defers: ReadonlyMap<string, number>,
  retries: ReadonlyMap<string, number>,
  timedRows: readonly { at: number; action: string; reason: string; tenant: string }[],
  pauseRows: readonly { at: number; action: string; reason: string; tenant: string }[],
  rejectionRows: readonly { at: number; reason: string }[],
  config: Analysis['config'],
): Recomputed {
  const depth = new Map<string, { tenant: string; priority: number; n: number }>();
  const oldest = new Map<string, Track>();
  const leases: Recomputed['leases'] = [];
  const occupiedBy = new Map<string, number>();
  let occupied = 0;
  let uncertain = 0;
  for (const track of tracks) {
    if (track.state === 'ready') {
      const key = `${track.tenant}\u0000${track.priority}`;
      const row = depth.get(key) ?? { tenant: track.tenant, priority: track.priority, n: 0 };
      row.n += 1;
      depth.set(key, row);
      const best = oldest.get(track.tenant);
      if (best === undefined || track.enqueuedAt < best.enqueuedAt || (track.enqueuedAt === best.enqueuedAt && track.id < best.id)) oldest.set(track.tenant, track);
    }
    if (track.state === 'running' || track.state === 'uncertain') {
      occupied += 1;
      occupiedBy.set(track.tenant, (occupiedBy.get(track.tenant) ?? 0) + 1);
    }
    if (track.state === 'uncertain') uncertain += 1;
    if (track.state === 'running') {
      leases.push({ taskId: track.id, tenant: track.tenant, workerId: track.workerId ?? '', generation: track.generation ?? 0, ageMs: at - (track.lastClaimAt ?? at) });
    }
  }
  const decisions = new Map<string, [number, number]>();
  if (runs > 0) decisions.set('RUN:admitted', [runs, runs]);
  for (const [reason, n] of defers) decisions.set(`DEFER:${reason}`, [n, n]);
  for (const row of timedRows) {
    if (row.at > at) continue;
    const key = `${row.action}:${row.reason}`;
    const bounds = decisions.get(key) ?? [0, 0];
    if (row.at < at) bounds[0] += 1;
    bounds[1] += 1;
    decisions.set(key, bounds);
  }
  const rejections = new Map<string, [number, number]>();
  for (const row of rejectionRows) {
    if (row.at > at) continue;
    const bounds = rejections.get(row.reason) ?? [0, 0];
    if (row.at < at) bounds[0] += 1;
    bounds[1] += 1;
    rejections.set(row.reason, bounds);
  }
  const window = [...tracks].sort((a, b) => b.enqueuedAt - a.enqueuedAt || b.id - a.id).slice(0, WINDOW);
  const waits: number[] = [];
  const ranFor: number[] = [];
  for (const track of window) {
    if (track.firstClaimAt !== undefined) waits.push(track.firstClaimAt - track.enqueuedAt);
    if (track.endedAt !== undefined && track.lastClaimAt !== undefined) ranFor.push(track.endedAt - track.lastClaimAt);
  }
  // Pauses in force at `at`: the last PAUSE/RESUME row before it; a row at `at` itself leaves it open.
  const paused = new Map<string, boolean>();
  let ambiguous = false;
  for (const row of pauseRows) {
    if (row.at < at) paused.set(row.tenant, row.action === 'PAUSE');
    else if (row.at === at) ambiguous = true;
  }
  let stuck = false;
  let pausedWaitingStuck = false;
  let atLimitWaitingStuck = false;
  if (occupied < config.globalLimit) {
    for (const track of tracks) {
      if (track.state !== 'ready' || at - track.enqueuedAt < config.stuckAfterMs) continue;
      if (paused.get(track.tenant) === true) {
        pausedWaitingStuck = true;
        continue;
      }
      // The tenant's own limit only (hasOwn, in tenantLimit): read as a plain property, a tenant named
      // `constructor` would find Object.prototype's function and never count as at its limit (issue 31).
      const limit = tenantLimit(config, track.tenant);
      if ((occupiedBy.get(track.tenant) ?? 0) >= limit) {
        atLimitWaitingStuck = true;
        continue;
      }
      if (track.notBefore > at) continue;
      if (track.deadline !== undefined && track.deadline <= at) continue;
      stuck = true;
    }
  }
  return {
    at,
    depth: [...depth.values()],
    leases,
    awaitingReconciliation: uncertain,
    oldestWaiting: [...oldest.values()].map((track) => ({ tenant: track.tenant, taskId: track.id, enqueuedAt: track.enqueuedAt, waitedMs: at - track.enqueuedAt })),
    retries: [...retries].map(([errorClass, n]) => ({ errorClass, n })),
    decisions,
    rejections,
    waitMs: summary(waits),
    runMs: summary(ranFor),
    stuck: ambiguous ? undefined : stuck,
    pausedWaitingStuck,
    atLimitWaitingStuck,
    occupied,
  };
}

/** JSON with keys sorted, restated here (the judge imports nothing from src/). */
function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return `{${entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${JSON.stringify(k)}:${sortedJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** A list is compared as a set of rows (its order is not a signal). */
const canon = (rows: unknown): string => (Array.isArray(rows) ? `[${(rows as unknown[]).map(sortedJson).sort().join(',')}]` : sortedJson(rows));

function compareCounts(
  violations: ViolationList,
  rule: string,
  reported: unknown,
  keyOf: (row: Record<string, unknown>) => string,
  expected: ReadonlyMap<string, [number, number]>,
  where: string,
  index: number,
): void {
  const got = new Map<string, number>();
  for (const row of Array.isArray(reported) ? (reported as Record<string, unknown>[]) : []) got.set(keyOf(row), Number(row.n));
  for (const key of new Set([...got.keys(), ...expected.keys()])) {
    const n = got.get(key) ?? 0;
    const [least, most] = expected.get(key) ?? [0, 0];
    if (n < least || n > most) violations.add(rule, `${where}: ${key} reported ${n}, the history says ${least === most ? least : `${least}..${most}`}`, { at: [index] });
  }
}

export const i22Signals: Checker = {
  invariant: 'I22',
  kind: 'safety',
  description: 'signals are true: every recorded signals() answer equals a recomputation from the history at the same instant; the alert fires exactly when its condition holds, never for a paused tenant alone',
  check(world) {
    const violations = new ViolationList('I22', 'safety');
    for (const { read, expected } of recomputeSignals(world)) {
      const s = read.signals;
      const index = read.entry.index;
      const where = `the signals read at ${expected.at} (history ${index}, cursor ${read.ev})`;
      const same = (rule: string, field: string, got: unknown, want: unknown) => {
        if (canon(got) !== canon(want)) violations.add(rule, `${where}: ${field} reported ${canon(got)}, the history says ${canon(want)}`, { at: [index] });
      };
      same('at', 'at', s.at, expected.at);
      same('depth', 'depth', s.depth, expected.depth);
      const leases = Array.isArray(s.leases) ? (s.leases as Record<string, unknown>[]).map(({ expiresInMs: _e, ...rest }) => rest) : s.leases;
      same('leases', 'leases', leases, expected.leases);
      same('reconciliation', 'awaitingReconciliation', s.awaitingReconciliation, expected.awaitingReconciliation);
      same('oldest-waiting', 'oldestWaiting', s.oldestWaiting, expected.oldestWaiting);
      same('retries', 'retries', s.retries, expected.retries);
      same('latency', 'waitMs', s.waitMs, expected.waitMs);
      same('latency', 'runMs', s.runMs, expected.runMs);
      compareCounts(violations, 'decisions', s.decisions, (row) => `${String(row.action)}:${String(row.reason)}`, expected.decisions, where, index);
      compareCounts(violations, 'rejections', s.rejections, (row) => String(row.reason), expected.rejections, where, index);
      const alert = (s.alerts as { stuckWhileCapacityNormal?: unknown } | undefined)?.stuckWhileCapacityNormal;
      if (expected.stuck !== undefined && alert !== expected.stuck) {
        const why = expected.stuck
          ? `an eligible task waited stuckAfterMs with ${expected.occupied} of ${analyse(world).config.globalLimit} slots occupied`
          : expected.pausedWaitingStuck || expected.atLimitWaitingStuck
            ? `only ${[expected.pausedWaitingStuck ? 'a paused tenant' : '', expected.atLimitWaitingStuck ? 'a tenant at its own slot limit' : ''].filter(Boolean).join(' or ')} has work waiting past stuckAfterMs`
            : 'no eligible task has waited stuckAfterMs while slots are free';
        violations.add('alert', `${where}: stuckWhileCapacityNormal reported ${String(alert)}, but ${why}`, { at: [index] });
      }
    }
    return violations.list;
  },
};

/**
 * Coverage marks (S8): reads where the alert fired as it should, where it stayed silent for a paused
 * tenant's waiting work, and where it stayed silent for the waiting work of a tenant at its own limit.
 */
export function signalMarks(world: WorldResult): { fired: number; silentPaused: number; silentAtLimit: number } {
  let fired = 0;
  let silentPaused = 0;
  let silentAtLimit = 0;
  for (const { read, expected } of recomputeSignals(world)) {
    const alert = (read.signals.alerts as { stuckWhileCapacityNormal?: unknown } | undefined)?.stuckWhileCapacityNormal;
    if (alert === true && expected.stuck === true) fired += 1;
    if (alert === false && expected.stuck === false && expected.pausedWaitingStuck) silentPaused += 1;
    if (alert === false && expected.stuck === false && expected.atLimitWaitingStuck) silentAtLimit += 1;
  }
  return { fired, silentPaused, silentAtLimit };
}
