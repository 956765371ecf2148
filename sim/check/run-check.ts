import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { EXIT_COVERAGE, EXIT_HARNESS, EXIT_LIVENESS, EXIT_OK, EXIT_SAFETY } from '../cli/exit-codes.ts';
import { counterexamplePath, replayFileCommand, replaySeedCommand, writeCounterexample } from './counterexample.ts';
import { judgeCoverage, type CoverageOutcome } from './coverage.ts';
import type { GitState } from './git.ts';
import { junitXml } from './junit.ts';
import { runPool, type ThreadDeath } from './pool.ts';
import { Progress, duration, type ProgressSink } from './progress.ts';
import type { ScenarioSource } from './scenario-source.ts';
import { planJobs, withRepeats, type RootSeed, type Shard } from './seeds.ts';
import { coverageLine, perThreadRate, summaryTable } from './summary.ts';
import { tally, totalOf, type Tally } from './tally.ts';
import type { JobResult, TestHook } from './types.ts';
import { versions } from './versions.ts';
import { wallClockMs } from './wall-clock.ts';

/** Counterexample files written per check; past this, failures are only counted. */
export const FAILURE_FILES_MAX = 20;
/** Failure lines printed while the check runs; the summary has the rest. */
const FAILURE_LINES_MAX = 10;

export interface CheckRequest {
  sources: ScenarioSource[];
  seedsPerScenario: number;
  root: RootSeed;
  git: GitState;
  threads: number;
  shard?: Shard;
  unseedRate: number;
  failuresDir: string;
  junitPath?: string;
  outDir?: string;
  testHook?: TestHook;
  /** The command line that reruns exactly this check. */
  reproduce: string;
}

export interface CheckIo {
  out(text: string): void;
  err(text: string): void;
  progress: ProgressSink;
}

interface Written {
  result: JobResult;
  file: string;
  unseed?: { hashA: string; hashB: string };
}

/** `leasehold check` once its arguments are resolved: run, judge, report, and return the exit code (S9). */
export async function runCheck(request: CheckRequest, io: CheckIo): Promise<number> {
  const scenarios = Object.fromEntries(request.sources.map((source) => [source.name, source.spec]));
  const names = request.sources.map((source) => source.name);
  const firstRuns = planJobs(request.root.seed, names, request.seedsPerScenario, request.shard);
  const jobs = withRepeats(firstRuns, request.unseedRate);
  header(request, firstRuns.length, jobs.length - firstRuns.length, io);

  const started = wallClockMs();
  const progress = new Progress(jobs.length, io.progress);
  let failureLines = 0;
  const outcome = await runPool(jobs, {
    threads: request.threads,
    scenarios,
    ...(request.testHook === undefined ? {} : { testHook: request.testHook }),
    onResult: (result) => {
      const failed = !result.job.repeat && result.verdict !== 'pass';
      progress.advance(failed);
      if (failed && failureLines++ < FAILURE_LINES_MAX) progress.note(`FAIL ${result.job.scenario} seed ${result.job.seed}: ${shortReason(result)}`);
    },
  });
  progress.finish();
  const wallMs = wallClockMs() - started;

  const counted = tally(names, outcome.results);
  const total = totalOf(counted.scenarios);
  const coverage = judgeCoverage(counted.scenarios, total.marks);
  const written = writeFailures(request, counted);
  const code = exitCode(counted, coverage, outcome.death);

  io.out('');
  for (const line of summaryTable(counted, wallMs)) io.out(line);
  io.out(`wall time ${duration(wallMs / 1000)} on ${Math.min(request.threads, Math.max(1, jobs.length))} thread(s); seeds/s per scenario is per thread, the total is wall-clock`);
  io.out(unseedLine(request, counted, outcome.death !== undefined));
  io.out(coverageLine(coverage));
  reportFailures(request, counted, written, outcome.death, io);
  io.out(`result: ${verdictLine(code, counted, coverage, outcome.death)}`);

  const replayOf = (result: JobResult) => replayCommand(request, written, result);
  if (request.junitPath !== undefined) {
    const xml = junitXml({
      results: outcome.results,
      mismatches: counted.mismatches,
      replayOf,
      ...(outcome.death === undefined ? {} : { harnessError: deathLine(outcome.death) }),
    });
    writeFile(request.junitPath, xml);
    io.out(`junit: ${request.junitPath}`);
  }
  if (request.outDir !== undefined) {
    const summary = summaryJson(request, counted, coverage, written, outcome.death, wallMs, code, replayOf);
    const path = join(request.outDir, 'summary.json');
    writeFile(path, `${JSON.stringify(summary, null, 2)}\n`);
    io.out(`summary: ${path}`);
  }
  return code;
}

function header(request: CheckRequest, runs: number, repeats: number, io: CheckIo): void {
  const { root, git } = request;
  const from =
    root.source === 'flag'
      ? 'from --seed'
      : root.source === 'git'
        ? `from git commit ${git.commit}${git.dirty ? ', with uncommitted changes' : ''}`
        : 'no git commit found';
  if (root.source === 'no-git') io.err(`leasehold: warning: no git commit found; checking the fixed root seed '${root.seed}', so every run of this tree checks the same seeds`);
  const shard = request.shard === undefined ? '' : `, shard ${request.shard.index}/${request.shard.count}`;
  io.out(`leasehold check: ${request.sources.length} scenario(s) x ${request.seedsPerScenario} seeds${shard} = ${runs} runs, +${repeats} unseed repeat(s), on ${request.threads} thread(s)`);
  io.out(`root seed: ${root.seed} (${from}); seed i of scenario X = first 48 bits of sha256(["leasehold-check/1", root, X, i]), in decimal`);
  io.out(`rerun: ${request.reproduce}`);
}

function shortReason(result: JobResult): string {
  if (result.crash !== undefined) return `harness crash: ${result.crash.split('\n')[0]}`;
  const first = result.violations[0];
  const more = result.violations.length > 1 ? ` (+${result.violations.length - 1} more)` : '';
  if (first === undefined) return result.verdict;
  const message = first.message.split('\n')[0] as string;
  return `${result.verdict}: ${message.startsWith(first.invariant) ? message : `${first.invariant} ${message}`}${more}`;
}

/**
 * S9 when several things went wrong at once: a safety violation is the finding that matters most and
 * comes with its counterexample, so it wins (1); then a broken harness (3: nondeterminism, a crash, a
 * dead thread), whose other verdicts cannot be trusted; then liveness (2); then missing coverage (4).
 */
function exitCode(counted: Tally, coverage: CoverageOutcome, death: ThreadDeath | undefined): number {
  const total = totalOf(counted.scenarios);
  if (total.safety > 0) return EXIT_SAFETY;
  if (death !== undefined || total.nondeterminism > 0) return EXIT_HARNESS;
  if (total.liveness > 0) return EXIT_LIVENESS;
  if (coverage.enforced && coverage.missing.length > 0) return EXIT_COVERAGE;
  return EXIT_OK;
}

/** Writes counterexample files for the first FAILURE_FILES_MAX failing seeds in job order. */
function writeFailures(request: CheckRequest, counted: Tally): Written[] {
  const mismatchOf = new Map(counted.mismatches.map((mismatch) => [mismatch.first, mismatch]));
  const failing = [...new Set([...counted.failures, ...counted.mismatches.map((mismatch) => mismatch.first)])].sort((a, b) => a.job.id - b.job.id);
  if (failing.length === 0) return [];
  const versionInfo = versions();
  return failing.slice(0, FAILURE_FILES_MAX).map((result) => {
    const source = request.sources.find((candidate) => candidate.name === result.job.scenario) as ScenarioSource;
    const mismatch = mismatchOf.get(result);
    const file = counterexamplePath(request.failuresDir, result.job.scenario, result.job.seed);
    writeCounterexample(file, {
      scenario: source.name,
      ...(source.file === undefined ? {} : { scenarioFile: source.file }),
      scenarioSpec: source.spec,
      seed: result.job.seed,
      ...(result.plan === undefined ? {} : { plan: result.plan }),
      verdict: mismatch === undefined ? result.verdict : 'nondeterminism',
      violations: result.violations,
      traceHash: result.traceHash,
      ...(mismatch === undefined ? {} : { unseed: { hashA: mismatch.hashA, hashB: mismatch.hashB } }),
      ...(result.crash === undefined ? {} : { crash: result.crash }),
      marks: result.marks,
      metrics: result.metrics,
      check: { rootSeed: request.root.seed, rootSeedSource: request.root.source, seedIndex: result.job.index },
      git: request.git,
      versions: versionInfo,
    });
    return mismatch === undefined ? { result, file } : { result, file, unseed: { hashA: mismatch.hashA, hashB: mismatch.hashB } };
  });
}

function reportFailures(request: CheckRequest, counted: Tally, written: readonly Written[], death: ThreadDeath | undefined, io: CheckIo): void {
  for (const mismatch of counted.mismatches) {
    io.out(`NONDETERMINISM ${mismatch.first.job.scenario} seed ${mismatch.first.job.seed}: two runs gave trace hashes ${mismatch.hashA || '(crash)'} and ${mismatch.hashB || '(crash)'}`);
  }
  if (death !== undefined) {
    io.out(`HARNESS CRASH: ${deathLine(death).split('\n')[0]}`);
    if (death.job !== undefined) io.out(`replay: ${replaySeedCommand(scenarioArgument(request, death.job.scenario), death.job.seed)}`);
  }
  const failing = counted.failures.length + counted.mismatches.length;
  if (written.length === 0) return;
  const first = written[0] as Written;
  if (failing > written.length) io.out(`${failing} failing seeds; counterexamples written for the first ${written.length} in ${request.failuresDir}`);
  else io.out(`${written.length} counterexample file(s) in ${request.failuresDir}`);
  io.out(`first failure: ${first.result.job.scenario} seed ${first.result.job.seed}: ${first.unseed === undefined ? shortReason(first.result) : 'nondeterminism: two trace hashes'}`);
  const seedReplay = replaySeedCommand(scenarioArgument(request, first.result.job.scenario), first.result.job.seed);
  io.out(`replay: ${replayFileCommand(first.file)}   (or: ${seedReplay})`);
}

function deathLine(death: ThreadDeath): string {
  const job = death.job === undefined ? 'between jobs' : `while running ${death.job.scenario} seed ${death.job.seed}`;
  return `worker thread ${death.threadIndex} died ${job}: ${death.error}`;
}

function unseedLine(request: CheckRequest, counted: Tally, cutShort: boolean): string {
  if (request.unseedRate <= 0) return 'unseed check: off (--unseed-rate 0)';
  if (cutShort && counted.mismatches.length === 0) return `unseed check (S6): cut short by the harness crash (${counted.unseedChecked} seed(s) compared)`;
  if (counted.mismatches.length === 0) return `unseed check (S6): ${counted.unseedChecked} seed(s) run twice, every trace hash equal`;
  return `unseed check (S6): ${counted.mismatches.length} of ${counted.unseedChecked} seed(s) run twice gave two different trace hashes`;
}

function verdictLine(code: number, counted: Tally, coverage: CoverageOutcome, death: ThreadDeath | undefined): string {
  const total = totalOf(counted.scenarios);
  if (code === EXIT_OK) return `pass (exit 0): ${total.seeds} seeds, every invariant held`;
  const parts = [
    total.safety > 0 ? `${total.safety} safety` : '',
    total.liveness > 0 ? `${total.liveness} liveness` : '',
    total.nondeterminism > 0 ? `${total.nondeterminism} nondeterministic or crashed` : '',
    death !== undefined ? 'a worker thread died' : '',
    coverage.enforced && coverage.missing.length > 0 ? `${coverage.missing.length} required marks never reached` : '',
  ].filter(Boolean);
  return `FAIL (exit ${code}): ${parts.join(', ')}`;
}

/** The counterexample file's replay line when one was written, else the seed's. */
function replayCommand(request: CheckRequest, written: readonly Written[], result: JobResult): string {
  const file = written.find((entry) => entry.result === result)?.file;
  return file === undefined ? replaySeedCommand(scenarioArgument(request, result.job.scenario), result.job.seed) : replayFileCommand(file);
}

/** How a replay names a scenario: its catalogue name, or the file it came from. */
function scenarioArgument(request: CheckRequest, scenario: string): string {
  const source = request.sources.find((candidate) => candidate.name === scenario);
  return source?.file ?? scenario;
}

function summaryJson(
  request: CheckRequest,
  counted: Tally,
  coverage: CoverageOutcome,
  written: readonly Written[],
  death: ThreadDeath | undefined,
  wallMs: number,
  exit: number,
  replayOf: (result: JobResult) => string,
): unknown {
  const total = totalOf(counted.scenarios);
  const row = (r: ReturnType<typeof totalOf>, seedsPerSecond: number) => ({ ...r, seedsPerSecond: Number(seedsPerSecond.toFixed(2)) });
  return {
    format: 'leasehold-check-summary/1',
    command: request.reproduce,
    exitCode: exit,
    rootSeed: request.root.seed,
    rootSeedSource: request.root.source,
    git: { commit: request.git.commit ?? null, dirty: request.git.dirty },
    versions: versions(),
    seedsPerScenario: request.seedsPerScenario,
    shard: request.shard ?? null,
    threads: request.threads,
    unseedRate: request.unseedRate,
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
  };
}

function writeFile(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}
