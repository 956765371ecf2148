import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EXIT_OK } from '../cli/exit-codes.ts';
import { UsageError } from '../cli/usage-error.ts';
import type { Verdict, Violation } from '../report-types.ts';
import { judgeCoverage, type CoverageOutcome } from './coverage.ts';
import { junitXml } from './junit.ts';
import { checkExitCode, stoppedSuffix, verdictLine } from './report.ts';
import { bailLine, type BailSummary } from './bail.ts';
import { summaryTable, coverageLine } from './summary.ts';
import { totalOf, type ScenarioTally, type Tally } from './tally.ts';
import type { JobResult } from './types.ts';
import type { SimStore } from '../store/pglite.ts';

/**
 * `leasehold merge DIR...` (issue 20 item 4): the summaries of `leasehold check --shard K/N --out DIR`
 * runs, each made on a CI machine of its own, combined into one verdict with the right exit code, one
 * JUnit report and one catalogue index, as one unsharded run of the same seeds would give them (vitest's
 * --merge-reports is the convention). A shard runs the seed indexes i with i % N == K - 1 of every
 * scenario, so the union of the N shards is exactly the unsharded run's seeds. The merge refuses what
 * would not add up to that: summaries of different commits, root seeds, seed budgets or scenario lists,
 * shards of different counts, a shard given twice, and a missing shard.
 *
 * The unseed check (S6) samples within each shard (every scenario at least once per shard), so the
 * merged count of seeds run twice is the shards' sum, not the unsharded run's.
 */

export const SUMMARY_FORMAT = 'leasehold-check-summary/1';

interface RunRecord {
  scenario: string;
  index: number;
  seed: string;
  verdict: Verdict;
  traceHash: string;
  elapsedMs: number;
  crash?: string;
}

/** One failing seed of a check, as summary.json lists it (leasehold/testing names it CheckFailure). */
export interface FailureRecord {
  scenario: string;
  seed: string;
  verdict: Verdict;
  traceHash: string;
  violations: Pick<Violation, 'invariant' | 'kind' | 'message'>[];
  /** Its counterexample file (the first 20 failing seeds get one), or null. */
  file: string | null;
  /** The line that replays it. */
  replay: string;
}

/** The parts of a check's summary.json the merge reads. */
export interface CheckSummary {
  format: string;
  command: string;
  exitCode: number;
  rootSeed: string;
  git: { commit: string | null; dirty: boolean };
  seedsPerScenario: number;
  /** A --budget check's seeds per scenario (absent or null: seedsPerScenario each). */
  seedsByScenario?: Record<string, number> | null;
  shard: { index: number; count: number } | null;
  /** The store the worlds ran on (absent in summaries written before --store: sqlite). */
  store?: SimStore;
  skipped?: unknown[];
  notApplicable?: { seeds: number; faults: Record<string, number> };
  wallMs: number;
  scenarios: (ScenarioTally & { seedsPerSecond?: number })[];
  unseed: { checked: number; mismatches: { scenario: string; seed: string; hashA: string; hashB: string }[] };
  failures: FailureRecord[];
  harnessCrash: string | null;
  runs?: RunRecord[];
  /** --bail (absent in summaries written before it, null without it). */
  bail?: BailSummary | null;
}

export interface MergedShard {
  dir: string;
  summary: CheckSummary;
}

export interface MergeOutcome {
  shards: MergedShard[];
  store: SimStore;
  /** Drawn faults the store could not run, summed over the shards (sim/store/pglite.ts). */
  notApplicable: { seeds: number; faults: Record<string, number> };
  rows: ScenarioTally[];
  coverage: CoverageOutcome;
  runs: RunRecord[];
  failures: FailureRecord[];
  mismatches: CheckSummary['unseed']['mismatches'];
  unseedChecked: number;
  harnessCrashes: string[];
  exitCode: number;
  /** The slowest shard's wall time: how long the sharded check took. */
  wallMs: number;
  /** When a shard ran with --bail: the shards' seeds not run, summed (stopped when any shard stopped); else null. */
  bail: BailSummary | null;
}

const TRY = 'leasehold merge shard-1 shard-2 shard-3 shard-4';

/** A summary's budget in words: the per-scenario split of a --budget check, or `even`. */
function budgetOf(summary: CheckSummary): string {
  const split = summary.seedsByScenario;
  return split === undefined || split === null ? 'even' : Object.entries(split).map(([scenario, seeds]) => `${scenario} ${seeds}`).join(', ');
}

/** Reads DIR/summary.json of each directory, refusing a missing or unreadable one by name. */
export function readSummaries(dirs: readonly string[]): MergedShard[] {
  if (dirs.length === 0) throw new UsageError('merge needs the --out directories of the shard runs', TRY);
  return dirs.map((dir) => {
    const path = join(dir, 'summary.json');
    if (!existsSync(path)) throw new UsageError(`${path} does not exist: give the --out directory of a \`leasehold check --shard K/N\` run`, TRY);
    let summary: CheckSummary;
    try {
      summary = JSON.parse(readFileSync(path, 'utf8')) as CheckSummary;
    } catch (error) {
      throw new UsageError(`${path} is not JSON (${(error as Error).message})`, TRY);
    }
    if (summary?.format !== SUMMARY_FORMAT) throw new UsageError(`${path} is not a check summary (format ${String(summary?.format)}, expected ${SUMMARY_FORMAT})`, TRY);
    if (!Array.isArray(summary.runs)) throw new UsageError(`${path} lists no runs: it was written by an older leasehold; rerun that shard`, TRY);
    return { dir, summary };
  });
}

/** Checks that the shards are the N parts of one check, and folds them into its verdict. */
export function mergeSummaries(shards: readonly MergedShard[]): MergeOutcome {
  const first = shards[0]!.summary;
  const scenarioList = (summary: CheckSummary) => summary.scenarios.map((row) => row.scenario).join(', ');
  for (const { dir, summary } of shards.slice(1)) {
    const differs = (what: string, a: unknown, b: unknown) => {
      throw new UsageError(`${dir} is a shard of another check: its ${what} is ${String(b)}, the first shard's (${shards[0]!.dir}) is ${String(a)}`, TRY);
    };
    if (summary.git.commit !== first.git.commit) differs('commit', first.git.commit, summary.git.commit);
    if (summary.rootSeed !== first.rootSeed) differs('root seed', first.rootSeed, summary.rootSeed);
    if (summary.seedsPerScenario !== first.seedsPerScenario) differs('seeds per scenario', first.seedsPerScenario, summary.seedsPerScenario);
    if (budgetOf(summary) !== budgetOf(first)) differs('budget split', budgetOf(first), budgetOf(summary));
    if (scenarioList(summary) !== scenarioList(first)) differs('scenario list', scenarioList(first), scenarioList(summary));
    if ((summary.store ?? 'sqlite') !== (first.store ?? 'sqlite')) differs('store', first.store ?? 'sqlite', summary.store ?? 'sqlite');
    if ((summary.shard?.count ?? 1) !== (first.shard?.count ?? 1)) differs('shard count', first.shard?.count ?? 1, summary.shard?.count ?? 1);
  }
  const count = first.shard?.count ?? 1;
  const seen = new Map<number, string>();
  for (const { dir, summary } of shards) {
    const index = summary.shard?.index ?? 1;
    const earlier = seen.get(index);
    if (earlier !== undefined) throw new UsageError(`shard ${index}/${count} is given twice (${earlier} and ${dir})`, TRY);
    seen.set(index, dir);
  }
  const missing = Array.from({ length: count }, (_, i) => i + 1).filter((index) => !seen.has(index));
  if (missing.length > 0) throw new UsageError(`shard${missing.length > 1 ? 's' : ''} ${missing.map((index) => `${index}/${count}`).join(', ')} missing: the merge needs all ${count} shards of the check`, TRY);

  // Shard order, then each shard's own order: the merged lists do not depend on the order of DIR...
  const ordered = [...shards].sort((a, b) => (a.summary.shard?.index ?? 1) - (b.summary.shard?.index ?? 1));
  const rows = first.scenarios.map((row): ScenarioTally => ({ ...totalOf(ordered.map(({ summary }) => summary.scenarios.find((other) => other.scenario === row.scenario)!)), scenario: row.scenario }));
  const order = new Map(rows.map((row, position) => [row.scenario, position]));
  const runs = ordered.flatMap(({ summary }) => summary.runs ?? []).sort((a, b) => a.index - b.index || order.get(a.scenario)! - order.get(b.scenario)!);
  const indexOf = new Map(runs.map((run) => [`${run.scenario}\u0000${run.seed}`, run.index]));
  const byRun = (a: { scenario: string; seed: string }, b: { scenario: string; seed: string }) =>
    order.get(a.scenario)! - order.get(b.scenario)! || (indexOf.get(`${a.scenario}\u0000${a.seed}`) ?? 0) - (indexOf.get(`${b.scenario}\u0000${b.seed}`) ?? 0);
  const failures = ordered.flatMap(({ summary }) => summary.failures).sort(byRun);
  const mismatches = ordered.flatMap(({ summary }) => summary.unseed.mismatches).sort(byRun);
  const harnessCrashes = ordered.map(({ summary }) => summary.harnessCrash).filter((crash): crash is string => crash !== null);
  const store = first.store ?? 'sqlite';
  const total = totalOf(rows);
  const bail = mergedBail(ordered);
  const judged = judgeCoverage(rows, total.marks, store);
  // A shard that stopped after its first failure did not run all its seeds: coverage is not judged (as the shard did not).
  const coverage: CoverageOutcome = bail?.stopped === true ? { enforced: false, required: judged.required, reason: `a shard stopped after its first failure (--bail) with ${bail.seedsNotRun} of ${bail.seedsPlanned} seeds not run` } : judged;
  const exitCode = checkExitCode(total, coverage, harnessCrashes.length > 0);
  const notApplicable = { seeds: 0, faults: {} as Record<string, number> };
  for (const { summary } of ordered) {
    notApplicable.seeds += summary.notApplicable?.seeds ?? 0;
    for (const [kind, n] of Object.entries(summary.notApplicable?.faults ?? {})) notApplicable.faults[kind] = (notApplicable.faults[kind] ?? 0) + n;
  }
  return {
    shards: ordered,
    store,
    notApplicable,
    rows,
    coverage,
    runs,
    failures,
    mismatches,
    unseedChecked: ordered.reduce((sum, { summary }) => sum + summary.unseed.checked, 0),
    harnessCrashes,
    exitCode,
    wallMs: Math.max(...ordered.map(({ summary }) => summary.wallMs)),
    bail,
  };
}

/** The shards' --bail records folded into one: null when no shard ran with --bail; a shard without it planned the seeds it ran. */
function mergedBail(shards: readonly MergedShard[]): BailSummary | null {
  if (shards.every(({ summary }) => summary.bail === undefined || summary.bail === null)) return null;
  const merged: BailSummary = { stopped: false, after: null, seedsPlanned: 0, seedsNotRun: 0, notRunByScenario: {}, repeatsNotRun: 0 };
  for (const { summary } of shards) {
    const bail = summary.bail;
    if (bail === undefined || bail === null) {
      merged.seedsPlanned += totalOf(summary.scenarios).seeds;
      continue;
    }
    merged.stopped ||= bail.stopped;
    merged.after ??= bail.after;
    merged.seedsPlanned += bail.seedsPlanned;
    merged.seedsNotRun += bail.seedsNotRun;
    merged.repeatsNotRun += bail.repeatsNotRun;
    for (const [scenario, seeds] of Object.entries(bail.notRunByScenario)) merged.notRunByScenario[scenario] = (merged.notRunByScenario[scenario] ?? 0) + seeds;
  }
  return merged;
}

/** The merged check as the lines `check` prints at its end. */
export function mergeLines(merged: MergeOutcome): string[] {
  const count = merged.shards[0]!.summary.shard?.count ?? 1;
  const tally: Tally = { scenarios: merged.rows, runs: [], failures: [], mismatches: [], unseedChecked: merged.unseedChecked };
  const lines = [`leasehold merge: ${merged.shards.length} of ${count} shard(s), commit ${merged.shards[0]!.summary.git.commit ?? '(none)'}, root seed ${merged.shards[0]!.summary.rootSeed}, store ${merged.store}`, ''];
  lines.push(...summaryTable(tally, merged.wallMs));
  lines.push(`wall time of the slowest shard ${(merged.wallMs / 1000).toFixed(1)} s; seeds/s per scenario is per thread, the total is over the slowest shard`);
  lines.push(merged.mismatches.length === 0 ? `unseed check (S6): ${merged.unseedChecked} seed(s) run twice, every trace hash equal` : `unseed check (S6): ${merged.mismatches.length} of ${merged.unseedChecked} seed(s) run twice gave two different trace hashes`);
  lines.push(coverageLine(merged.coverage));
  for (const crash of merged.harnessCrashes) lines.push(`HARNESS CRASH: ${crash.split('\n')[0]}`);
  for (const failure of merged.failures.slice(0, 20)) {
    const first = failure.violations[0];
    lines.push(`FAIL ${failure.scenario} seed ${failure.seed}: ${failure.verdict}${first === undefined ? '' : `: ${first.invariant} ${first.message.split('\n')[0]}`}`);
    lines.push(`  replay: ${failure.replay}`);
  }
  if (merged.failures.length > 20) lines.push(`... ${merged.failures.length - 20} more failing seeds in the merged summary.json`);
  const stopped = bailLine(merged.bail);
  if (stopped !== undefined) lines.push(stopped);
  lines.push(`result: ${verdictLine(merged.exitCode, totalOf(merged.rows), merged.coverage, merged.harnessCrashes.length > 0)}${stoppedSuffix(merged.bail)}`);
  return lines;
}

/** The merged summary.json: the first shard's identity, the merged counts, and which shards made it. */
export function mergedSummaryJson(merged: MergeOutcome): unknown {
  const first = merged.shards[0]!.summary;
  const total = totalOf(merged.rows);
  return {
    format: SUMMARY_FORMAT,
    command: `leasehold merge ${merged.shards.map((shard) => shard.dir).join(' ')}`,
    exitCode: merged.exitCode,
    rootSeed: first.rootSeed,
    git: first.git,
    seedsPerScenario: first.seedsPerScenario,
    seedsByScenario: first.seedsByScenario ?? null,
    shard: null,
    store: merged.store,
    // Every shard skips the same scenarios (the skip depends on the scenario and the store only).
    skipped: first.skipped ?? [],
    notApplicable: merged.notApplicable,
    mergedFrom: merged.shards.map(({ dir, summary }) => ({ dir, shard: summary.shard, command: summary.command, exitCode: summary.exitCode })),
    wallMs: merged.wallMs,
    scenarios: merged.rows,
    total,
    coverage: merged.coverage,
    unseed: { checked: merged.unseedChecked, mismatches: merged.mismatches },
    failures: merged.failures,
    harnessCrash: merged.harnessCrashes.length === 0 ? null : merged.harnessCrashes.join('\n'),
    bail: merged.bail,
    runs: merged.runs,
  };
}

/** One JUnit report over every shard's seeds, as the unsharded check would write it. */
export function mergedJunit(merged: MergeOutcome): string {
  const failures = new Map(merged.failures.map((failure) => [`${failure.scenario}\u0000${failure.seed}`, failure]));
  const results: JobResult[] = merged.runs.map((run, id) => ({
    job: { id, scenario: run.scenario, index: run.index, seed: run.seed, repeat: false },
    verdict: run.verdict,
    traceHash: run.traceHash,
    violations: (failures.get(`${run.scenario}\u0000${run.seed}`)?.violations ?? []) as Violation[],
    marks: {},
    metrics: {},
    elapsedMs: run.elapsedMs,
    ...(run.crash === undefined ? {} : { crash: run.crash }),
  }));
  const mismatches = merged.mismatches.map((mismatch) => ({ first: results.find((result) => result.job.scenario === mismatch.scenario && result.job.seed === mismatch.seed)!, hashA: mismatch.hashA, hashB: mismatch.hashB })).filter((mismatch) => mismatch.first !== undefined);
  const replayOf = (result: JobResult) => failures.get(`${result.job.scenario}\u0000${result.job.seed}`)?.replay ?? `leasehold replay --scenario ${result.job.scenario} --seed ${result.job.seed}`;
  return junitXml({ results, mismatches, replayOf, ...(merged.harnessCrashes.length === 0 ? {} : { harnessError: merged.harnessCrashes.join('\n') }), ...(merged.bail === null ? {} : { notRun: merged.bail.notRunByScenario }) });
}

/** The merged catalogue index (index.md): per scenario its counts, and each shard's own report where it wrote one. */
export function mergedCatalogueMarkdown(merged: MergeOutcome): string {
  const total = totalOf(merged.rows);
  const lines = [
    '# leasehold check, merged from shards',
    '',
    `${merged.shards.length} shard(s) of commit ${merged.shards[0]!.summary.git.commit ?? '(none)'}, root seed ${merged.shards[0]!.summary.rootSeed}, ${merged.shards[0]!.summary.seedsByScenario ? `--budget ${merged.shards[0]!.summary.seedsPerScenario}, split by what each scenario finds` : `${merged.shards[0]!.summary.seedsPerScenario} seeds per scenario`}: **${merged.exitCode === EXIT_OK ? 'pass' : `FAIL (exit ${merged.exitCode})`}**, ${total.seeds} seeds.`,
    '',
    '| scenario | seeds | pass | safety | liveness | nondeterminism | shard reports |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const row of merged.rows) {
    const reports = merged.shards.filter(({ dir }) => existsSync(join(dir, row.scenario, 'index.html'))).map(({ dir, summary }) => `[${summary.shard?.index ?? 1}](${join(dir, row.scenario, 'index.html')})`);
    lines.push(`| ${row.scenario} | ${row.seeds} | ${row.pass} | ${row.safety} | ${row.liveness} | ${row.nondeterminism} | ${reports.join(' ') || '-'} |`);
  }
  lines.push('', coverageLine(merged.coverage), '');
  const stopped = bailLine(merged.bail);
  if (stopped !== undefined) lines.push(stopped, '');
  if (merged.failures.length > 0) {
    lines.push('## Failing seeds', '');
    for (const failure of merged.failures) lines.push(`- ${failure.scenario} seed ${failure.seed} (${failure.verdict}): \`${failure.replay}\``);
    lines.push('');
  }
  return `${lines.join('\n')}\n`;
}
