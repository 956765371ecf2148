import type { Verdict } from '../report-types.ts';
import type { JobResult } from './types.ts';

/** Per-scenario counts for the summary table and the JSON summary. */
export interface ScenarioTally {
  scenario: string;
  seeds: number;
  pass: number;
  safety: number;
  liveness: number;
  /** Runs judged nondeterministic or that crashed the harness, plus unseed mismatches. */
  nondeterminism: number;
  /** Thread time spent on this scenario's runs (first runs only), for seeds per second per core. */
  busyMs: number;
  /** Marks summed over this scenario's runs (S8). */
  marks: Record<string, number>;
}

/** A sampled seed whose two runs gave different trace hashes (S6, I14). */
export interface UnseedMismatch {
  first: JobResult;
  hashA: string;
  hashB: string;
}

export interface Tally {
  scenarios: ScenarioTally[];
  /** Every first run, in job order. */
  runs: JobResult[];
  /** Every first run whose verdict is not pass, in job order. */
  failures: JobResult[];
  mismatches: UnseedMismatch[];
  /** How many seeds were run twice, and whose second run arrived. */
  unseedChecked: number;
}

/**
 * Folds the results into per-scenario counts. Results are sorted by job id first, so the report does
 * not depend on which thread finished first.
 */
export function tally(scenarioNames: readonly string[], results: readonly JobResult[]): Tally {
  const sorted = [...results].sort((a, b) => a.job.id - b.job.id);
  const byScenario = new Map(scenarioNames.map((scenario) => [scenario, emptyTally(scenario)]));
  const firstRuns = new Map<string, JobResult>();
  for (const result of sorted) {
    if (result.job.repeat) continue;
    firstRuns.set(key(result), result);
    const row = byScenario.get(result.job.scenario) as ScenarioTally;
    row.seeds++;
    row[countedAs(result.verdict)]++;
    row.busyMs += result.elapsedMs;
    for (const [mark, count] of Object.entries(result.marks)) row.marks[mark] = (row.marks[mark] ?? 0) + count;
  }
  const mismatches: UnseedMismatch[] = [];
  let unseedChecked = 0;
  for (const repeat of sorted) {
    if (!repeat.job.repeat) continue;
    const first = firstRuns.get(key(repeat));
    if (first === undefined) continue;
    unseedChecked++;
    if (first.crash === undefined && repeat.crash === undefined && first.traceHash === repeat.traceHash) continue;
    mismatches.push({ first, hashA: first.traceHash, hashB: repeat.traceHash });
    // The seed's verdict cannot be trusted once it gave two traces: it moves to the nondeterminism column.
    const row = byScenario.get(first.job.scenario) as ScenarioTally;
    const column = countedAs(first.verdict);
    if (column !== 'nondeterminism') {
      row[column]--;
      row.nondeterminism++;
    }
  }
  const runs = sorted.filter((result) => !result.job.repeat);
  const failures = runs.filter((result) => result.verdict !== 'pass');
  return { scenarios: [...byScenario.values()], runs, failures, mismatches, unseedChecked };
}

export function totalOf(rows: readonly ScenarioTally[]): ScenarioTally {
  const total = emptyTally('total');
  for (const row of rows) {
    total.seeds += row.seeds;
    total.pass += row.pass;
    total.safety += row.safety;
    total.liveness += row.liveness;
    total.nondeterminism += row.nondeterminism;
    total.busyMs += row.busyMs;
    for (const [mark, count] of Object.entries(row.marks)) total.marks[mark] = (total.marks[mark] ?? 0) + count;
  }
  return total;
}

function countedAs(verdict: Verdict): 'pass' | 'safety' | 'liveness' | 'nondeterminism' {
  return verdict === 'pass' || verdict === 'safety' || verdict === 'liveness' ? verdict : 'nondeterminism';
}

function emptyTally(scenario: string): ScenarioTally {
  return { scenario, seeds: 0, pass: 0, safety: 0, liveness: 0, nondeterminism: 0, busyMs: 0, marks: {} };
}

function key(result: JobResult): string {
  return `${result.job.scenario}\u0000${result.job.seed}`;
}
