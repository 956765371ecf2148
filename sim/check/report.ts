import { EXIT_COVERAGE, EXIT_HARNESS, EXIT_LIVENESS, EXIT_OK, EXIT_SAFETY } from '../cli/exit-codes.ts';
import { replayFileCommand, replaySeedCommand } from './counterexample.ts';
import { coverageLine, perThreadRate, summaryTable } from './summary.ts';
import type { CoverageOutcome } from './coverage.ts';
import { pairCoverageLine, type ExploreOutcome, type PairCoverage } from './explore.ts';
import type { ThreadDeath } from './pool.ts';
import { duration } from './progress.ts';
import { totalOf, type ScenarioTally, type Tally } from './tally.ts';
import type { CheckRequest, JobResult, WrittenFailure } from './types.ts';
import { versions } from './versions.ts';
import type { SimStore } from '../store/pglite.ts';
import { bailLine, bailSummary, type BailOutcome } from './bail.ts';

/** Everything a finished check knows, for the printed summary and summary.json. */
export interface CheckOutcome {
  request: CheckRequest;
  counted: Tally;
  coverage: CoverageOutcome;
  written: WrittenFailure[];
  death?: ThreadDeath;
  wallMs: number;
  threadsUsed: number;
  exitCode: number;
  /** Marks and (mark, fault kind) pairs reached by the first runs (explore.ts). */
  pairs?: PairCoverage;
  /** --explore: the picks and what they added. */
  explore?: ExploreOutcome;
  /** The database the worlds ran on, the scenarios it could not run, and the drawn faults it left out (sim/store/pglite.ts). */
  store?: SimStore;
  skipped?: { scenario: string; reason: string }[];
  notApplicable?: { seeds: number; faults: Record<string, number> };
  /** --bail: whether the check stopped after a failure, and what it left unrun (absent without --bail). */
  bail?: BailOutcome;
}

/** The end of a check's output: the table, the unseed and coverage lines, failures with their replay line, the result. */
export function printSummary(outcome: CheckOutcome, out: (text: string) => void): void {
  const { request, counted, coverage, written, death, wallMs } = outcome;
  out('');
  for (const line of summaryTable(counted, wallMs)) out(line);
  out(`wall time ${duration(wallMs / 1000)} on ${outcome.threadsUsed} thread(s); seeds/s per scenario is per thread, the total is wall-clock`);
  for (const line of storeLines(outcome)) out(line);
  out(unseedLine(request, counted, death !== undefined, outcome.bail));
  out(coverageLine(coverage));
  if (outcome.pairs !== undefined) out(pairCoverageLine('marks and pairs', outcome.pairs));
  if (outcome.explore !== undefined) for (const line of exploreLines(outcome.explore)) out(line);
  reportFailures(request, counted, written, death, out);
  const stopped = bailLine(outcome.bail);
  if (stopped !== undefined) out(stopped);
  out(`result: ${verdictLine(outcome.exitCode, totalOf(counted.scenarios), coverage, death !== undefined)}${stoppedSuffix(outcome.bail)}`);
}

/** The end of the result line of a check that stopped early: it names what it did not run. */
export function stoppedSuffix(bail: { seedsNotRun: number; seedsPlanned: number; after?: unknown } | null | undefined): string {
  if (bail === undefined || bail === null || bail.after === undefined || bail.after === null) return '';
  return `; stopped after the first failure: ${bail.seedsNotRun} of ${bail.seedsPlanned} seeds not run`;
}

/** Per scenario: what the plain part reached, and with the children; then the first picks (all are in summary.json). */
function exploreLines(explore: ExploreOutcome): string[] {
  const lines = [`explore (--explore ${explore.fraction}): ${explore.plainSeedsPerScenario} plain + ${explore.exploreSeedsPerScenario} guided seeds per scenario, ${explore.picks.length} picks`];
  for (const row of explore.scenarios) {
    lines.push(`  ${row.scenario}: pairs ${row.plain.pairs.reached} after the plain seeds, ${row.withExplore.pairs.reached} with the guided ones (+${row.newPairs.length} new); marks ${row.plain.marks.reached} -> ${row.withExplore.marks.reached}`);
  }
  for (const pick of explore.picks.slice(0, EXPLORE_PICKS_PRINTED)) {
    lines.push(`  pick ${pick.scenario} seed ${pick.childSeed} <- parent ${pick.parentSeed}${pick.donorSeed === undefined ? '' : ` + donor ${pick.donorSeed}`}: ${pick.kind} ${pick.target} (${pick.reachedBy} runs)`);
  }
  if (explore.picks.length > EXPLORE_PICKS_PRINTED) lines.push(`  ... ${explore.picks.length - EXPLORE_PICKS_PRINTED} more picks in summary.json`);
  return lines;
}

const EXPLORE_PICKS_PRINTED = 10;

/** Which store the check ran on, what it skipped and which drawn faults it could not run: never a silent pass. */
function storeLines(outcome: CheckOutcome): string[] {
  const store = outcome.store ?? 'sqlite';
  if (store === 'sqlite') return [];
  const lines = [`store: ${store}`];
  for (const skip of outcome.skipped ?? []) lines.push(`  skipped: ${skip.scenario}: ${skip.reason}`);
  const left = outcome.notApplicable;
  if (left !== undefined && left.seeds > 0) {
    const kinds = Object.entries(left.faults).map(([kind, count]) => `${kind} x${count}`).join(', ');
    lines.push(`  not applicable to ${store}: ${kinds} drawn in ${left.seeds} seed(s), left out of their plans (they act beneath SQLite)`);
  }
  return lines;
}

export function shortReason(result: JobResult): string {
  if (result.crash !== undefined) return `harness crash: ${result.crash.split('\n')[0]}`;
  const first = result.violations[0];
  const more = result.violations.length > 1 ? ` (+${result.violations.length - 1} more)` : '';
  if (first === undefined) return result.verdict;
  const message = first.message.split('\n')[0] as string;
  return `${result.verdict}: ${message.startsWith(first.invariant) ? message : `${first.invariant} ${message}`}${more}`;
}

function reportFailures(request: CheckRequest, counted: Tally, written: readonly WrittenFailure[], death: ThreadDeath | undefined, out: (text: string) => void): void {
  for (const mismatch of counted.mismatches) {
    out(`NONDETERMINISM ${mismatch.first.job.scenario} seed ${mismatch.first.job.seed}: two runs gave trace hashes ${mismatch.hashA || '(crash)'} and ${mismatch.hashB || '(crash)'}`);
  }
  if (death !== undefined) {
    out(`HARNESS CRASH: ${deathLine(death).split('\n')[0]}`);
    if (death.job !== undefined) out(`replay: ${replaySeedCommand(scenarioArgument(request, death.job.scenario), death.job.seed)}`);
  }
  const failing = counted.failures.length + counted.mismatches.length;
  if (written.length === 0) return;
  const first = written[0] as WrittenFailure;
  if (failing > written.length) out(`${failing} failing seeds; counterexamples written for the first ${written.length} in ${request.failuresDir}`);
  else out(`${written.length} counterexample file(s) in ${request.failuresDir}`);
  out(`first failure: ${first.result.job.scenario} seed ${first.result.job.seed}: ${first.unseed === undefined ? shortReason(first.result) : 'nondeterminism: two trace hashes'}`);
  const seedReplay = replaySeedCommand(scenarioArgument(request, first.result.job.scenario), first.result.job.seed);
  // A guided child runs a plan its seed alone does not draw, and a run of an agent module (T2) needs the
  // module the file records: only the file replays them.
  out(first.result.job.plan === undefined && request.agent === undefined ? `replay: ${replayFileCommand(first.file)}   (or: ${seedReplay})` : `replay: ${replayFileCommand(first.file)}`);
}

export function deathLine(death: ThreadDeath): string {
  const job = death.job === undefined ? 'between jobs' : `while running ${death.job.scenario} seed ${death.job.seed}`;
  return `worker thread ${death.threadIndex} died ${job}: ${death.error}`;
}

function unseedLine(request: CheckRequest, counted: Tally, cutShort: boolean, bail: BailOutcome | undefined): string {
  if (request.unseedRate <= 0) return 'unseed check: off (--unseed-rate 0)';
  if (cutShort && counted.mismatches.length === 0) return `unseed check (S6): cut short by the harness crash (${counted.unseedChecked} seed(s) compared)`;
  if (bail !== undefined && bail.repeatsNotRun > 0 && counted.mismatches.length === 0) {
    return `unseed check (S6): cut short by --bail (${counted.unseedChecked} seed(s) run twice, every trace hash equal; ${bail.repeatsNotRun} repeat(s) not run)`;
  }
  if (counted.mismatches.length === 0) return `unseed check (S6): ${counted.unseedChecked} seed(s) run twice, every trace hash equal`;
  return `unseed check (S6): ${counted.mismatches.length} of ${counted.unseedChecked} seed(s) run twice gave two different trace hashes`;
}

/** S9: the exit code of a check from its totals (a merge of shards computes it the same way). */
export function checkExitCode(total: ScenarioTally, coverage: CoverageOutcome, harnessDied: boolean): number {
  if (total.safety > 0) return EXIT_SAFETY;
  if (harnessDied || total.nondeterminism > 0) return EXIT_HARNESS;
  if (total.liveness > 0) return EXIT_LIVENESS;
  if (coverage.enforced && coverage.missing.length > 0) return EXIT_COVERAGE;
  return EXIT_OK;
}

/** The `result:` line of a check (or a merge of its shards). */
export function verdictLine(code: number, total: ScenarioTally, coverage: CoverageOutcome, harnessDied: boolean): string {
  if (code === EXIT_OK) return `pass (exit 0): ${total.seeds} seeds, every invariant held`;
  const parts = [
    total.safety > 0 ? `${total.safety} safety` : '',
    total.liveness > 0 ? `${total.liveness} liveness` : '',
    total.nondeterminism > 0 ? `${total.nondeterminism} nondeterministic or crashed` : '',
    harnessDied ? 'a worker thread died' : '',
    coverage.enforced && coverage.missing.length > 0 ? `${coverage.missing.length} required marks never reached` : '',
  ].filter(Boolean);
  return `FAIL (exit ${code}): ${parts.join(', ')}`;
}

/** The counterexample file's replay line when one was written, else the seed's. */
export function replayCommand(request: CheckRequest, written: readonly WrittenFailure[], result: JobResult): string {
  const file = written.find((entry) => entry.result === result)?.file;
  if (file !== undefined) return replayFileCommand(file);
  if (result.job.plan !== undefined) return `(a guided child of seed ${result.job.explore?.parentSeed ?? '?'}: its plan is not its seed's; rerun the check to write its counterexample file)`;
  return replaySeedCommand(scenarioArgument(request, result.job.scenario), result.job.seed);
}

/** How a replay names a scenario: its catalogue name, or the file it came from. */
function scenarioArgument(request: CheckRequest, scenario: string): string {
  const source = request.sources.find((candidate) => candidate.name === scenario);
  return source?.file ?? scenario;
}

export function summaryJson(outcome: CheckOutcome): unknown {
  const { request, counted, coverage, written, death, wallMs } = outcome;
  const replayOf = (result: JobResult) => replayCommand(request, written, result);
  const total = totalOf(counted.scenarios);
  const row = (r: ReturnType<typeof totalOf>, seedsPerSecond: number) => ({ ...r, seedsPerSecond: Number(seedsPerSecond.toFixed(2)) });
  return {
    format: 'leasehold-check-summary/1',
    command: request.reproduce,
    exitCode: outcome.exitCode,
    rootSeed: request.root.seed,
    rootSeedSource: request.root.source,
    git: { commit: request.git.commit ?? null, dirty: request.git.dirty },
    versions: versions(),
    seedsPerScenario: request.seedsPerScenario,
    // --budget (the default): each scenario's own seeds; null when every scenario ran seedsPerScenario.
    seedsByScenario: request.split?.seeds ?? null,
    shard: request.shard ?? null,
    threads: request.threads,
    unseedRate: request.unseedRate,
    store: outcome.store ?? 'sqlite',
    skipped: outcome.skipped ?? [],
    notApplicable: outcome.notApplicable ?? { seeds: 0, faults: {} },
    wallMs: Math.round(wallMs),
    scenarios: counted.scenarios.map((r) => row(r, perThreadRate(r))),
    total: row(total, wallMs > 0 ? total.seeds / (wallMs / 1000) : 0),
    coverage,
    unseed: {
      checked: counted.unseedChecked,
      mismatches: counted.mismatches.map((m) => ({ scenario: m.first.job.scenario, seed: m.first.job.seed, hashA: m.hashA, hashB: m.hashB })),
    },
    failures: [...counted.failures].map((result) => ({
      scenario: result.job.scenario,
      seed: result.job.seed,
      verdict: result.verdict,
      traceHash: result.traceHash,
      violations: result.violations.map((v) => ({ invariant: v.invariant, kind: v.kind, message: v.message })),
      file: written.find((entry) => entry.result === result)?.file ?? null,
      replay: replayOf(result),
    })),
    harnessCrash: death === undefined ? null : deathLine(death),
    // --bail: null without it; else whether the check stopped, after which seed, and how many seeds it did not run.
    bail: bailSummary(outcome.bail),
    // Every first run, so `leasehold merge` can rebuild one JUnit report and one verdict from shards.
    runs: counted.runs.map((result) => ({ scenario: result.job.scenario, index: result.job.index, seed: result.job.seed, verdict: result.verdict, traceHash: result.traceHash, elapsedMs: Math.round(result.elapsedMs), ...(result.crash === undefined ? {} : { crash: result.crash.split('\n')[0] }) })),
    ...(outcome.pairs === undefined ? {} : { pairs: outcome.pairs }),
    ...(outcome.explore === undefined ? {} : { explore: outcome.explore }),
  };
}
