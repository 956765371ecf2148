import { serviceBooks, serviceMaxCharge } from '../checkers/i19-fair-share.ts';
import { configOf, tenantLimit } from '../checkers/timeline.ts';
import { depthSeries, fairShareSeries, type TenantCharts } from './tenant-series.ts';
import type { TaskEvent, TaskState, TaskView } from '../../src/queue/types.ts';
import type { HistoryEntry } from '../history.ts';
import { resolveConfig } from '../../src/queue/config.ts';
import type { AdmissionRecord, BudgetSpec } from '../../src/queue/types.ts';
import { admissionCounts, edgeCounts } from './admission.ts';
import { budgetSeries, levelPoints, trackPeak, type LevelPoint } from './budget-series.ts';
import { takeoverSamples } from '../metrics/takeover-latency.ts';
import type { RunReport, Verdict } from '../report-types.ts';
import type { WorldResult } from '../world.ts';
import { bump } from './stats.ts';
import { buildTimeline, type TimelineModel } from './timeline-model.ts';
import { toolGraphRuns } from './tool-graphs.ts';

/**
 * What a report keeps of one seed: a few counters and a few numbers per task, computed where the run
 * happened (a check thread), so the WorldResult (history, database snapshot, events) can be dropped at
 * once. A report over hundreds of seeds holds hundreds of these, never a world.
 */
export interface RunDigest {
  index: number;
  seed: string;
  verdict: Verdict;
  traceHash: string;
  /** The first violations (full list in the counterexample file). */
  violations: { invariant: string; kind: string; message: string; taskId?: number }[];
  violationCount: number;
  marks: Record<string, number>;
  metrics: Record<string, number>;
  /** `from>to` -> count; `from` is `(enqueue)` for a task's first event. From the final database's events. */
  transitions: Record<string, number>;
  /** Enqueue -> first claim, per claimed task. */
  waits: TaskSample[];
  /** Tasks never claimed, by final state (superseded, expired, cancelled, ...). */
  neverClaimed: Record<string, number>;
  /** Claim -> result of the last attempt (the core's run_ms), per task that has one. */
  runs: TaskSample[];
  /** Kill -> the next generation's task_resumed (or claim, when it started over). */
  takeovers: { latencyMs: number; resumed: boolean }[];
  /** Back to ready for another attempt, by reason: the error class of a retry, or how the lease was given back. */
  retries: Record<string, number>;
  /** Ended failed, by reason. */
  failures: Record<string, number>;
  /** Refused operations, `op:reason` (enqueue:queue_full, checkpoint:stale_lease, claim:quota, ...). */
  rejections: Record<string, number>;
  settlements: SettlementCounts;
  effects: EffectCounts;
  finalStates: Record<string, number>;
  /** `action\u001freason\u001ftenant` -> count (admission.ts admissionCounts): RUN, DEFER, REJECT, PAUSE, RESUME. */
  admission: Record<string, number>;
  /** `from>to>event type` -> count (admission.ts edgeCounts): the state-transition table by event. */
  edges: Record<string, number>;
  budgets: BudgetDigest;
  /** Only for the seeds a report may draw (the first, and failing ones). */
  timeline?: TimelineModel;
}

/** What a report keeps of a seed's budgets (issue 16): the configuration, each budget's extremes, and the drawn seed's levels. */
export interface BudgetDigest {
  /** The budgets configured for this seed (scenario.queue.budgets, resolved). */
  specs: Record<string, BudgetSpec>;
  peaks: BudgetPeak[];
  /** The step plot of each concurrency and rate (budget, scope), for the seeds a report may draw. */
  series?: BudgetPlot[];
}

export interface BudgetPeak {
  budget: string;
  kind: BudgetSpec['kind'];
  limit: number;
  /** Scopes the log moved (tenants, runs, sessions; 1 for a global budget). */
  scopes: number;
  /** The most units held (concurrency) or used (total) in any scope; a rate bucket's lowest level. */
  peak: number;
  /** Scopes that reached the limit (a rate bucket: that went empty, level <= 0). */
  atLimit: number;
  grants: number;
  unitsGranted: number;
  overdrafts: number;
}

export interface BudgetPlot {
  /** Drawn instead of the level/limit caption, with no limit line (the fair-share service plots). */
  caption?: string;
  budget: string;
  kind: BudgetSpec['kind'];
  scope: string;
  limit: number;
  seed: string;
  index: number;
  fromMs: number;
  toMs: number;
  points: LevelPoint[];
}

/** Step plots kept per seed at most (tenant-scoped budgets make one per tenant). */
export const MAX_BUDGET_PLOTS = 24;

export interface TaskSample {
  tenant: string;
  priority: number;
  ms: number;
}

export interface SettlementCounts {
  holds: number;
  settled: number;
  released: number;
  stillHeld: number;
  heldCredits: number;
  chargedCredits: number;
}

export interface EffectCounts {
  /** Entries in the effect ledger (R3). */
  ledger: number;
  /** Operations the external provider executed, and requests it received (repeats included). */
  providerExecutions: number;
  providerRequests: number;
  deadLetters: number;
}

export const NEW_TASK = '(enqueue)';
/** Violations copied into a digest; the rest are counted. */
const VIOLATIONS_KEPT = 5;
/** Failed operations that are not refusals: an empty queue is just an idle worker. */
const NOT_A_REJECTION = new Set(['claim:empty']);

/**
 * The (from, to) of every state change in the event log, replayed per task in commit order. An event
 * carries `to` when it changes the state; `from` is taken from the event when it names one, else from
 * the replayed state (a task's first event comes from `(enqueue)`).
 */
export function transitionCounts(events: readonly TaskEvent[]): Record<string, number> {
  const state = new Map<number, string>();
  const counts: Record<string, number> = {};
  for (const event of [...events].sort((a, b) => a.id - b.id)) {
    const to = event.data?.to;
    if (typeof to !== 'string') continue;
    const from = typeof event.data.from === 'string' ? event.data.from : (state.get(event.taskId) ?? NEW_TASK);
    bump(counts, `${from}>${to}`);
    state.set(event.taskId, to);
  }
  return counts;
}

/**
 * Wait (enqueue -> first claim) per claimed task, from the first `claimed` event: the queue wait the
 * core itself recorded at that claim, else the claim time minus the enqueue time.
 */
export function waitSamples(events: readonly TaskEvent[], tasks: readonly TaskView[]): { waits: TaskSample[]; neverClaimed: Record<string, number> } {
  const firstClaim = new Map<number, TaskEvent>();
  for (const event of events) {
    if (event.type !== 'claimed') continue;
    const seen = firstClaim.get(event.taskId);
    if (seen === undefined || event.id < seen.id) firstClaim.set(event.taskId, event);
  }
  const waits: TaskSample[] = [];
  const neverClaimed: Record<string, number> = {};
  for (const task of tasks) {
    const claim = firstClaim.get(task.id);
    if (claim === undefined) {
      bump(neverClaimed, task.state);
      continue;
    }
    const recorded = claim.data.queueWaitMs;
    const ms = typeof recorded === 'number' ? recorded : claim.at - task.enqueuedAt;
    waits.push({ tenant: task.tenant, priority: task.priority, ms: Math.max(0, ms) });
  }
  return { waits, neverClaimed };
}

export function runSamples(tasks: readonly TaskView[]): TaskSample[] {
  return tasks.flatMap((task) => (task.runMs === undefined ? [] : [{ tenant: task.tenant, priority: task.priority, ms: Math.max(0, task.runMs) }]));
}

/** Why tasks went back to ready (retries) and why they ended failed, from the event log. */
export function retryAndFailureReasons(events: readonly TaskEvent[]): { retries: Record<string, number>; failures: Record<string, number> } {
  const retries: Record<string, number> = {};
  const failures: Record<string, number> = {};
  for (const event of events) {
    const { from, to } = event.data ?? {};
    if (to === 'ready' && (from === 'running' || from === 'uncertain')) {
      const errorClass = event.data.errorClass;
      bump(retries, event.type === 'retry_scheduled' && typeof errorClass === 'string' ? `${event.type}: ${errorClass}` : event.type);
    }
    if (to === 'failed') {
      const reason = event.data.reason ?? event.data.errorClass;
      bump(failures, typeof reason === 'string' ? reason : event.type);
    }
  }
  return { retries, failures };
}

/** Every refused operation in the history, as `op:reason`, except an idle claim (`claim:empty`). */
export function rejectionCounts(entries: readonly HistoryEntry[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const entry of entries) {
    if (entry.type !== 'fail') continue;
    const key = `${entry.op}:${entry.reason}`;
    if (!NOT_A_REJECTION.has(key)) bump(counts, key);
  }
  return counts;
}

export function settlementCounts(holds: WorldResult['holds']): SettlementCounts {
  const counts: SettlementCounts = { holds: holds.length, settled: 0, released: 0, stillHeld: 0, heldCredits: 0, chargedCredits: 0 };
  for (const hold of holds) {
    counts.heldCredits += hold.credits;
    counts.chargedCredits += hold.chargedCredits ?? 0;
    if (hold.state === 'settled') counts.settled++;
    else if (hold.state === 'released') counts.released++;
    else counts.stillHeld++;
  }
  return counts;
}

/** The task a violation is about: its taskId, else the `task N` its first line names. */
export function violationTasks(violation: { taskId?: number; message: string }): number[] {
  if (violation.taskId !== undefined) return [violation.taskId];
  const firstLine = violation.message.split('\n')[0] ?? '';
  return [...firstLine.matchAll(/\btask (\d+)\b/g)].map((match) => Number(match[1]));
}

export interface DigestOptions {
  /** Build the timeline of this seed (it costs a pass over the history and a few kB). */
  timeline: boolean;
}

/** The budgets of one run: extremes per budget always, the step plots only for a drawn seed. */
export function budgetDigest(index: number, seed: string, world: Pick<WorldResult, 'scenario' | 'events' | 'final' | 'startMs' | 'endMs'>, withSeries: boolean): BudgetDigest {
  const specs = resolveConfig(world.scenario.queue).budgets;
  if (Object.keys(specs).length === 0) return { specs, peaks: [] };
  const tracks = budgetSeries(world.events, specs, world.final.tasks);
  const peaks: BudgetPeak[] = Object.keys(specs)
    .sort()
    .map((budget) => {
      const spec = specs[budget]!;
      const mine = tracks.filter((track) => track.budget === budget);
      const limit = spec.kind === 'rate' ? spec.capacity : spec.limit;
      const extremes = mine.map(trackPeak);
      const moves = mine.flatMap((track) => track.changes);
      return {
        budget,
        kind: spec.kind,
        limit,
        scopes: mine.length,
        peak: spec.kind === 'rate' ? Math.min(limit, ...extremes) : Math.max(0, ...extremes),
        atLimit: extremes.filter((peak) => (spec.kind === 'rate' ? peak <= 0 : peak >= limit)).length,
        grants: moves.filter((move) => move.move === 'grant').length,
        unitsGranted: moves.reduce((sum, move) => sum + (move.move === 'grant' ? move.units : 0), 0),
        overdrafts: moves.filter((move) => move.move === 'overdraft').length,
      };
    });
  if (!withSeries) return { specs, peaks };
  const fromMs = world.events.reduce((least, event) => Math.min(least, event.at), world.startMs);
  const toMs = world.events.reduce((most, event) => Math.max(most, event.at), world.endMs);
  const series: BudgetPlot[] = tracks
    .filter((track) => track.kind !== 'total')
    .slice(0, MAX_BUDGET_PLOTS)
    .map((track) => ({ budget: track.budget, kind: track.kind, scope: track.scope, limit: track.limit, seed, index, fromMs, toMs, points: levelPoints(track, fromMs, toMs) }));
  series.sort((a, b) => (a.budget < b.budget ? -1 : a.budget > b.budget ? 1 : a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0));
  return { specs, peaks, series };
}

/** Digests one judged run. Pure: the world is only read. */
export function digestRun(index: number, world: WorldResult, report: RunReport, options: DigestOptions): RunDigest {
  const tasks = world.final.tasks;
  const tenantOf = new Map(tasks.map((task) => [task.id, task.tenant]));
  const entries = world.history.entries();
  const { waits, neverClaimed } = waitSamples(world.events, tasks);
  const digest: RunDigest = {
    index,
    seed: report.seed,
    verdict: report.verdict,
    traceHash: report.traceHash,
    violations: report.violations.slice(0, VIOLATIONS_KEPT).map(({ invariant, kind, message, taskId }) => ({ invariant, kind, message, ...(taskId === undefined ? {} : { taskId }) })),
    violationCount: report.violations.length,
    marks: report.marks,
    metrics: report.metrics,
    transitions: transitionCounts(world.events),
    waits,
    neverClaimed,
    runs: runSamples(tasks),
    takeovers: takeoverSamples({ history: world.history, events: world.events }).map((sample) => ({ latencyMs: sample.latencyMs, resumed: sample.resumedAtMs !== undefined })),
    ...retryAndFailureReasons(world.events),
    rejections: rejectionCounts(entries),
    settlements: settlementCounts(world.holds),
    effects: {
      ledger: world.effects.length,
      providerExecutions: world.provider.executions.length,
      providerRequests: world.provider.requests.length,
      deadLetters: world.deadLetters.length,
    },
    finalStates: { ...(world.final.countsByState as Record<TaskState, number>) },
    admission: admissionCounts({
      events: world.events,
      tasks,
      rejections: world.final.rejections,
      admissionDecisions: (world as WorldResult & { admissionDecisions?: AdmissionRecord[] }).admissionDecisions,
    }),
    edges: edgeCounts(world.events),
    budgets: budgetDigest(index, report.seed, world, options.timeline),
  };
  // A3 (issue 17 item 4): under fair share, each tenant's cumulative service in I19's books, a plot each.
  const drawn = digest.budgets.series;
  if (drawn !== undefined && configOf(world).fairness === 'fair_share') {
    const fromMs = world.events.reduce((least, event) => Math.min(least, event.at), world.startMs);
    const toMs = world.events.reduce((most, event) => Math.max(most, event.at), world.endMs);
    for (const [tenant, points] of [...serviceBooks(world)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const steps = [{ at: fromMs, level: 0 }, ...points.map((point) => ({ at: point.at, level: point.service }))];
      drawn.push({ budget: 'service (fair share, model tokens)', kind: 'total', scope: `tenant:${tenant}`, limit: 0, seed: report.seed, index, fromMs, toMs, points: steps, caption: 'cumulative service charged (I19 books)' });
    }
  }
  if (options.timeline) {
    digest.timeline = buildTimeline({
      seed: report.seed,
      index,
      verdict: report.verdict,
      startMs: world.startMs,
      safetyEndMs: world.safetyEndMs,
      endMs: world.endMs,
      entries,
      events: world.events,
      tenantOf: (taskId) => tenantOf.get(taskId) ?? '?',
      highlight: report.violations.flatMap(violationTasks),
    });
    const fromMs = world.events.reduce((least, event) => Math.min(least, event.at), world.startMs);
    const toMs = world.events.reduce((most, event) => Math.max(most, event.at), world.endMs);
    const depth = depthSeries(world.events, (taskId) => tenantOf.get(taskId) ?? '?', fromMs, toMs);
    const charts: TenantCharts = { fromMs, toMs, depth: depth.series, depthOmitted: depth.omitted };
    const config = configOf(world);
    if (config.fairness === 'fair_share') {
      const weight = (tenant: string) => (Object.hasOwn(config.tenantWeights, tenant) ? (config.tenantWeights[tenant] as number) : 1);
      charts.fairShare = fairShareSeries(serviceBooks(world), serviceMaxCharge(world), weight, (tenant) => tenantLimit(config, tenant), fromMs, toMs);
    }
    digest.timeline.tenantCharts = charts;
    const graphs = toolGraphRuns(world);
    if (graphs.length > 0) digest.timeline.graphs = graphs;
  }
  return digest;
}
