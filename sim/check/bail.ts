import type { CoverageOutcome } from './coverage.ts';
import type { Job } from './seeds.ts';
import type { JobResult } from './types.ts';

/**
 * `leasehold check --bail` (alias `--fail-fast`, as vitest and jest name it): the check stops handing
 * out seeds after the first one that fails, the seeds already running finish, and the rest are not run.
 * Nothing is skipped silently: the summary, summary.json, the JUnit report and the catalogue report say
 * how many seeds of how many were not run, and coverage is not judged on a run that stopped early (the
 * seeds that would have reached the marks never ran).
 *
 * Seeds are handed out in plan order (every scenario's seed #0, then #1, ...), so every seed planned
 * before the one that stopped the check has run: the lowest failing seed of a stopped check is the lowest
 * failing seed of the whole plan. Only the seeds running beside it, and the unseed repeats at the back of
 * the queue, can differ from a full run.
 */

/** What a check run with --bail did: whether it stopped, after which run, and what it left unrun. */
export interface BailOutcome {
  /** The run whose failure stopped the check; absent when no seed failed (then every seed ran). */
  after?: JobResult;
  /** First runs (seeds) the check planned, guided children (--explore) included. */
  seedsPlanned: number;
  /** Of those, how many were never run. */
  seedsNotRun: number;
  /** Per scenario, its seeds not run (scenarios with none left out). */
  notRunByScenario: Record<string, number>;
  /** Unseed repeats (second runs of a sampled seed) left in the queue when the check stopped. */
  repeatsNotRun: number;
}

/** summary.json's `bail` (null without --bail). */
export interface BailSummary {
  stopped: boolean;
  after: { scenario: string; seed: string; index: number; verdict: string } | null;
  seedsPlanned: number;
  seedsNotRun: number;
  notRunByScenario: Record<string, number>;
  repeatsNotRun: number;
}

/**
 * The pool's stop test under --bail: a first run whose verdict is not pass (a violation, a failed
 * expectation, a crash), or a seed whose two runs (the unseed check) gave two trace hashes or crashed.
 * The two runs of a seed may arrive in either order on several threads, so each side waits for the other.
 */
export function failureDetector(): (result: JobResult) => boolean {
  const firstRuns = new Map<string, JobResult>();
  const repeats = new Map<string, JobResult>();
  const differ = (first: JobResult, repeat: JobResult) => first.crash !== undefined || repeat.crash !== undefined || first.traceHash !== repeat.traceHash;
  return (result) => {
    const key = `${result.job.scenario}\u0000${result.job.seed}`;
    if (!result.job.repeat) {
      if (result.verdict !== 'pass') return true;
      firstRuns.set(key, result);
      const repeat = repeats.get(key);
      return repeat !== undefined && differ(result, repeat);
    }
    repeats.set(key, result);
    const first = firstRuns.get(key);
    return first !== undefined && differ(first, result);
  };
}

/** Adds unrun jobs (first runs counted per scenario, repeats in a sum) to a bail outcome. */
export function countNotRun(outcome: BailOutcome, jobs: readonly Job[]): void {
  for (const job of jobs) {
    if (job.repeat) {
      outcome.repeatsNotRun++;
      continue;
    }
    outcome.seedsNotRun++;
    outcome.notRunByScenario[job.scenario] = (outcome.notRunByScenario[job.scenario] ?? 0) + 1;
  }
}

/** A check that stopped early did not run the seeds its coverage marks are measured over: not judged, and why. */
export function bailedCoverage(coverage: CoverageOutcome, bail: BailOutcome | undefined): CoverageOutcome {
  if (bail?.after === undefined) return coverage;
  return { enforced: false, required: coverage.required, reason: `the check stopped after its first failure (--bail) with ${bail.seedsNotRun} of ${bail.seedsPlanned} seeds not run` };
}

/** The line the summary, the report and a merge print for a check that stopped early (undefined when it did not). */
export function bailLine(bail: { seedsNotRun: number; seedsPlanned: number; repeatsNotRun: number; after?: { scenario: string; seed: string } | JobResult | null } | undefined | null): string | undefined {
  if (bail === undefined || bail === null || bail.after === undefined || bail.after === null) return undefined;
  const after = 'job' in bail.after ? bail.after.job : bail.after;
  const repeats = bail.repeatsNotRun > 0 ? ` (and ${bail.repeatsNotRun} unseed repeat(s))` : '';
  return `stopped after the first failure (--bail, at ${after.scenario} seed ${after.seed}): ${bail.seedsNotRun} of ${bail.seedsPlanned} seeds not run${repeats}; coverage not judged`;
}

export function bailSummary(bail: BailOutcome | undefined): BailSummary | null {
  if (bail === undefined) return null;
  const after = bail.after;
  return {
    stopped: after !== undefined,
    // A repeat stops the check only when its trace hash differs from its first run's: nondeterminism.
    after: after === undefined ? null : { scenario: after.job.scenario, seed: after.job.seed, index: after.job.index, verdict: after.job.repeat ? 'nondeterminism' : after.verdict },
    seedsPlanned: bail.seedsPlanned,
    seedsNotRun: bail.seedsNotRun,
    notRunByScenario: bail.notRunByScenario,
    repeatsNotRun: bail.repeatsNotRun,
  };
}
