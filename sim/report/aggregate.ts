import { TRANSITIONS } from '../../src/queue/states.ts';
import type { TaskState } from '../../src/queue/types.ts';
import { ALL_MARKS } from '../checkers/marks.ts';
import type { Verdict } from '../report-types.ts';
import type { BudgetSpec } from '../../src/queue/types.ts';
import { admissionRows, edgeRows, type AdmissionRow, type EdgeRow } from './admission.ts';
import { NEW_TASK, type BudgetPeak, type BudgetPlot, type EffectCounts, type RunDigest, type SettlementCounts, type TaskSample } from './digest.ts';
import { addCounts, byCount, compareLabels, distribution, histogram, priorityBanding, type Distribution, type HistogramBin } from './stats.ts';
import type { TimelineModel } from './timeline-model.ts';

/** One seed's line in a report. */
export interface SeedRow {
  index: number;
  seed: string;
  verdict: Verdict;
  traceHash: string;
  /** First violation, one line; empty for a pass. */
  reason: string;
  violations: { invariant: string; kind: string; message: string; taskId?: number }[];
  tasks: number;
  simulatedMs: number;
  /** Set on a seed that crashed the harness instead of producing a world. */
  crash?: string;
}

export interface TransitionRow {
  from: string;
  to: string;
  count: number;
  /** The edge is in the core's state machine (src/queue/states.ts); an enqueue edge counts as legal. */
  legal: boolean;
}

export interface LabelledDistribution extends Distribution {
  label: string;
}

export interface MarkRow {
  mark: string;
  total: number;
  /** Seeds in which the mark was reached at least once. */
  seeds: number;
}

/** Everything a scenario report shows, computed from the digests of its seeds. */
export interface ReportFigures {
  seedsRun: number;
  verdicts: Record<Verdict, number>;
  seeds: SeedRow[];
  transitions: TransitionRow[];
  wait: {
    overall: Distribution | null;
    byPriority: LabelledDistribution[];
    byTenant: LabelledDistribution[];
    histogram: HistogramBin[];
    /** Histogram bins split by priority band, for the stacked chart. */
    histogramByPriority: { label: string; bins: HistogramBin[] }[];
    neverClaimed: Record<string, number>;
  };
  runTime: { overall: Distribution | null; byPriority: LabelledDistribution[]; byTenant: LabelledDistribution[] };
  takeover: { all: Distribution | null; resumed: Distribution | null; samples: number };
  retries: [string, number][];
  failures: [string, number][];
  rejections: { op: string; reason: string; count: number }[];
  settlements: SettlementCounts;
  effects: EffectCounts;
  finalStates: Record<string, number>;
  marks: MarkRow[];
  /** Sum of the per-seed metrics (tasks, claims, simulatedMs, ...). */
  metrics: Record<string, number>;
  timeline: TimelineModel | null;
  /** Issue 16: admission decisions by (action, reason), with the count per tenant. */
  admission: AdmissionRow[];
  /** Seed 004's state-transition table: (from, to, event) with counts, and every edge never observed. */
  edges: EdgeRow[];
  budgets: BudgetFigures;
}

export interface BudgetFigures {
  /** Every budget configured in some seed (of each name, the lowest seed index's). */
  specs: Record<string, BudgetSpec>;
  /** Per budget over the seeds: the highest peak (a rate bucket: the lowest level), and sums of the rest. */
  peaks: (BudgetPeak & { seeds: number })[];
  /** The step plots of one seed (the first with budgets drawn), or none. */
  plots: BudgetPlot[];
}

const VERDICTS: readonly Verdict[] = ['pass', 'safety', 'liveness', 'nondeterminism'];
const STATE_ORDER: readonly string[] = [NEW_TASK, ...Object.keys(TRANSITIONS)];

/**
 * Folds run digests into a scenario's figures as they arrive, in any order (threads finish out of
 * order); the result does not depend on that order. Samples are kept (a few numbers per task) so the
 * percentiles are exact; everything else is a counter.
 */
export class ReportAggregator {
  private readonly seedRows: SeedRow[] = [];
  private readonly transitions: Record<string, number> = {};
  private readonly waits: TaskSample[] = [];
  private readonly runs: TaskSample[] = [];
  private readonly takeovers: { latencyMs: number; resumed: boolean }[] = [];
  private readonly neverClaimed: Record<string, number> = {};
  private readonly retries: Record<string, number> = {};
  private readonly failures: Record<string, number> = {};
  private readonly rejections: Record<string, number> = {};
  private readonly finalStates: Record<string, number> = {};
  private readonly markTotals: Record<string, number> = {};
  private readonly markSeeds: Record<string, number> = {};
  private readonly metrics: Record<string, number> = {};
  private readonly settlements: SettlementCounts = { holds: 0, settled: 0, released: 0, stillHeld: 0, heldCredits: 0, chargedCredits: 0 };
  private readonly effects: EffectCounts = { ledger: 0, providerExecutions: 0, providerRequests: 0, deadLetters: 0 };
  private timeline: TimelineModel | undefined;
  private readonly admission: Record<string, number> = {};
  private readonly edges: Record<string, number> = {};
  private readonly budgetSpecs: Record<string, { index: number; spec: BudgetSpec }> = {};
  private readonly budgetPeaks = new Map<string, BudgetPeak & { seeds: number }>();
  private budgetPlots: { index: number; plots: BudgetPlot[] } | undefined;

  add(digest: RunDigest): void {
    this.seedRows.push({
      index: digest.index,
      seed: digest.seed,
      verdict: digest.verdict,
      traceHash: digest.traceHash,
      reason: firstReason(digest),
      violations: digest.violations,
      tasks: digest.metrics.tasks ?? 0,
      simulatedMs: digest.metrics.simulatedMs ?? 0,
    });
    addCounts(this.transitions, digest.transitions);
    this.waits.push(...digest.waits);
    this.runs.push(...digest.runs);
    this.takeovers.push(...digest.takeovers);
    addCounts(this.neverClaimed, digest.neverClaimed);
    addCounts(this.retries, digest.retries);
    addCounts(this.failures, digest.failures);
    addCounts(this.rejections, digest.rejections);
    addCounts(this.finalStates, digest.finalStates);
    addCounts(this.markTotals, digest.marks);
    for (const [mark, count] of Object.entries(digest.marks)) if (count > 0) addCounts(this.markSeeds, { [mark]: 1 });
    addCounts(this.metrics, digest.metrics);
    for (const key of Object.keys(this.settlements) as (keyof SettlementCounts)[]) this.settlements[key] += digest.settlements[key];
    for (const key of Object.keys(this.effects) as (keyof EffectCounts)[]) this.effects[key] += digest.effects[key];
    if (digest.timeline !== undefined && preferTimeline(digest.timeline, this.timeline)) this.timeline = digest.timeline;
    addCounts(this.admission, digest.admission ?? {});
    addCounts(this.edges, digest.edges ?? {});
    this.addBudgets(digest);
  }

  private addBudgets(digest: RunDigest): void {
    const budgets = digest.budgets;
    if (budgets === undefined) return;
    for (const [name, spec] of Object.entries(budgets.specs)) {
      const seen = Object.hasOwn(this.budgetSpecs, name) ? this.budgetSpecs[name] : undefined;
      if (seen === undefined || digest.index < seen.index) this.budgetSpecs[name] = { index: digest.index, spec };
    }
    for (const peak of budgets.peaks) {
      const seen = this.budgetPeaks.get(peak.budget);
      if (seen === undefined) {
        this.budgetPeaks.set(peak.budget, { ...peak, seeds: 1 });
        continue;
      }
      // A bucket unused in a seed stays full: its "lowest level" then is the capacity, which min keeps right.
      seen.peak = peak.kind === 'rate' ? Math.min(seen.peak, peak.peak) : Math.max(seen.peak, peak.peak);
      seen.limit = Math.max(seen.limit, peak.limit);
      seen.scopes += peak.scopes;
      seen.atLimit += peak.atLimit;
      seen.grants += peak.grants;
      seen.unitsGranted += peak.unitsGranted;
      seen.overdrafts += peak.overdrafts;
      seen.seeds++;
    }
    if (budgets.series !== undefined && (this.budgetPlots === undefined || digest.index < this.budgetPlots.index)) this.budgetPlots = { index: digest.index, plots: budgets.series };
  }

  /** A seed whose run crashed the harness: it has a verdict line and nothing else. */
  addCrash(index: number, seed: string, crash: string): void {
    const firstLine = crash.split('\n')[0] ?? crash;
    this.seedRows.push({ index, seed, verdict: 'nondeterminism', traceHash: '', reason: `harness crash: ${firstLine}`, violations: [], tasks: 0, simulatedMs: 0, crash: firstLine });
  }

  get count(): number {
    return this.seedRows.length;
  }

  figures(): ReportFigures {
    const seeds = [...this.seedRows].sort((a, b) => a.index - b.index);
    const verdicts = Object.fromEntries(VERDICTS.map((verdict) => [verdict, 0])) as Record<Verdict, number>;
    for (const row of seeds) verdicts[row.verdict]++;
    const band = priorityBanding([...this.waits, ...this.runs].map((sample) => sample.priority));
    const priorityLabels = [...new Set(this.waits.map((sample) => band(sample.priority)))].sort(compareLabels);
    return {
      seedsRun: seeds.length,
      verdicts,
      seeds,
      transitions: transitionRows(this.transitions),
      wait: {
        overall: distribution(this.waits.map((sample) => sample.ms)) ?? null,
        byPriority: grouped(this.waits, (sample) => band(sample.priority)),
        byTenant: grouped(this.waits, (sample) => sample.tenant),
        histogram: histogram(this.waits.map((sample) => sample.ms)),
        histogramByPriority: priorityLabels.map((label) => ({ label, bins: histogram(this.waits.filter((sample) => band(sample.priority) === label).map((sample) => sample.ms)) })),
        neverClaimed: { ...this.neverClaimed },
      },
      runTime: {
        overall: distribution(this.runs.map((sample) => sample.ms)) ?? null,
        byPriority: grouped(this.runs, (sample) => band(sample.priority)),
        byTenant: grouped(this.runs, (sample) => sample.tenant),
      },
      takeover: {
        all: distribution(this.takeovers.map((sample) => sample.latencyMs)) ?? null,
        resumed: distribution(this.takeovers.filter((sample) => sample.resumed).map((sample) => sample.latencyMs)) ?? null,
        samples: this.takeovers.length,
      },
      retries: byCount(this.retries),
      failures: byCount(this.failures),
      rejections: byCount(this.rejections).map(([key, count]) => {
        const split = key.indexOf(':');
        return { op: key.slice(0, split), reason: key.slice(split + 1), count };
      }),
      settlements: { ...this.settlements },
      effects: { ...this.effects },
      finalStates: { ...this.finalStates },
      marks: markRows(this.markTotals, this.markSeeds),
      metrics: { ...this.metrics },
      timeline: this.timeline ?? null,
      admission: admissionRows(this.admission),
      edges: edgeRows(this.edges),
      budgets: {
        specs: Object.fromEntries(Object.keys(this.budgetSpecs).sort().map((name) => [name, this.budgetSpecs[name]!.spec])),
        peaks: [...this.budgetPeaks.values()].sort((a, b) => (a.budget < b.budget ? -1 : a.budget > b.budget ? 1 : 0)).map((peak) => ({ ...peak })),
        plots: this.budgetPlots?.plots ?? [],
      },
    };
  }
}

/** The timeline to draw: the first failing seed, else the first seed. */
function preferTimeline(candidate: TimelineModel, current: TimelineModel | undefined): boolean {
  if (current === undefined) return true;
  const failing = (model: TimelineModel) => model.verdict !== 'pass';
  if (failing(candidate) !== failing(current)) return failing(candidate);
  return candidate.index < current.index;
}

function firstReason(digest: RunDigest): string {
  const first = digest.violations[0];
  if (first === undefined) return '';
  const line = first.message.split('\n')[0] ?? '';
  const more = digest.violationCount > 1 ? ` (+${digest.violationCount - 1} more)` : '';
  return `${line.startsWith(first.invariant) ? line : `${first.invariant} ${line}`}${more}`;
}

/**
 * Every edge of the state machine (taken or not, so the table doubles as coverage of the transitions)
 * plus the enqueue edges and anything else observed, in state order.
 */
export function transitionRows(counts: Readonly<Record<string, number>>): TransitionRow[] {
  const rows = new Map<string, TransitionRow>();
  for (const [from, targets] of Object.entries(TRANSITIONS)) {
    for (const to of targets) rows.set(`${from}>${to}`, { from, to, count: 0, legal: true });
  }
  rows.set(`${NEW_TASK}>ready`, { from: NEW_TASK, to: 'ready', count: 0, legal: true });
  for (const [key, count] of Object.entries(counts)) {
    const [from, to] = key.split('>') as [string, string];
    const row = rows.get(key);
    if (row !== undefined) row.count += count;
    else rows.set(key, { from, to, count, legal: from === NEW_TASK || (TRANSITIONS[from as TaskState]?.includes(to as TaskState) ?? false) });
  }
  const order = (state: string) => {
    const index = STATE_ORDER.indexOf(state);
    return index < 0 ? STATE_ORDER.length : index;
  };
  return [...rows.values()].sort((a, b) => order(a.from) - order(b.from) || order(a.to) - order(b.to) || (a.to < b.to ? -1 : a.to > b.to ? 1 : 0));
}

function grouped(samples: readonly TaskSample[], labelOf: (sample: TaskSample) => string): LabelledDistribution[] {
  const groups = new Map<string, number[]>();
  for (const sample of samples) {
    const label = labelOf(sample);
    const list = groups.get(label);
    if (list === undefined) groups.set(label, [sample.ms]);
    else list.push(sample.ms);
  }
  return [...groups.entries()].sort(([a], [b]) => compareLabels(a, b)).map(([label, values]) => ({ label, ...distribution(values)! }));
}

function markRows(totals: Readonly<Record<string, number>>, seeds: Readonly<Record<string, number>>): MarkRow[] {
  const names = [...ALL_MARKS, ...Object.keys(totals).filter((mark) => !(ALL_MARKS as readonly string[]).includes(mark)).sort()];
  return names.map((mark) => ({ mark, total: totals[mark] ?? 0, seeds: seeds[mark] ?? 0 }));
}
