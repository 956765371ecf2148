import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { counterexamplePath, writeCounterexample } from './counterexample.ts';
import { judgeCoverage, type CoverageOutcome } from './coverage.ts';
import { junitXml } from './junit.ts';
import { runPool } from './pool.ts';
import { Progress, type ProgressSink } from './progress.ts';
import { checkExitCode, deathLine, printSummary, replayCommand, shortReason, summaryJson, type CheckOutcome } from './report.ts';
import type { ScenarioSource } from './scenario-source.ts';
import { exploreOutcome, pairCoverage, planExplore, splitBudget, type ExploreOutcome, type ExplorePick } from './explore.ts';
import { planJobs, withRepeats, type Job } from './seeds.ts';
import { tally, totalOf, type Tally } from './tally.ts';
import { seedsOf, type CheckRequest, type JobResult, type WrittenFailure } from './types.ts';
import { budgetPhrase, YIELD_FILE } from './budget.ts';
import { bailedCoverage, countNotRun, failureDetector, type BailOutcome } from './bail.ts';
import { versions } from './versions.ts';
import { wallClockMs } from './wall-clock.ts';
import { storeSkipReason } from '../store/pglite.ts';
import { ReportAggregator } from '../report/aggregate.ts';
import { writeCatalogueReport } from '../report/catalogue.ts';
import { digestRequest, foldResult } from '../report/run-report.ts';
import type { SimAgent } from '../actors/agent-module.ts';

/** Counterexample files written per check; past this, failures are only counted. */
export const FAILURE_FILES_MAX = 20;
/** Failure lines printed while the check runs; the summary has the rest. */
const FAILURE_LINES_MAX = 10;

export interface CheckIo {
  out(text: string): void;
  err(text: string): void;
  progress: ProgressSink;
}

/** `leasehold check` once its arguments are resolved: run, judge, report, and return the exit code (S9). */
export async function runCheck(request: CheckRequest, io: CheckIo): Promise<number> {
  const store = request.store ?? 'sqlite';
  // T2: the agent module is loaded here first, so a module that is missing, not defineAgent, or whose
  // scenario does not validate is refused with its typed error before any thread starts.
  // Imported only then: a check of the built-in agent never loads src/worker/agent.ts.
  const agent = request.agent === undefined ? undefined : await (await import('../actors/agent-module.ts')).loadSimAgent(request.agent);
  // A scenario whose plan needs a fault the store cannot run is skipped, with its reason (sim/store/pglite.ts).
  const skipped = request.sources.flatMap((source) => {
    const reason = storeSkipReason(source.spec, store);
    return reason === undefined ? [] : [{ scenario: source.name, reason }];
  });
  const runnable = request.sources.filter((source) => !skipped.some((skip) => skip.scenario === source.name));
  const scenarios = Object.fromEntries(runnable.map((source) => [source.name, source.spec]));
  const names = runnable.map((source) => source.name);
  const split = request.explore === undefined ? undefined : splitBudget(request.seedsPerScenario, request.explore);
  const firstRuns = planJobs(request.root.seed, names, split?.plain ?? Object.fromEntries(names.map((name) => [name, seedsOf(request, name)])), request.shard);
  const jobs = withRepeats(firstRuns, request.unseedRate);
  header({ ...request, sources: runnable }, firstRuns.length, jobs.length - firstRuns.length, io);
  for (const skip of skipped) io.out(`skipped on ${store}: ${skip.scenario}: ${skip.reason}`);
  if (split !== undefined) io.out(`explore: ${split.plain} plain seed(s) per scenario first, then ${split.explore} guided child run(s) per scenario steered at the rarest marks and (mark, fault) pairs`);

  const started = wallClockMs();
  let failureLines = 0;
  // --bail: one detector over both phases (a repeat of a plain seed may arrive after its first run).
  const stopWhen = request.bail === true ? failureDetector() : undefined;
  const bail: BailOutcome | undefined = request.bail === true ? { seedsPlanned: firstRuns.length, seedsNotRun: 0, notRunByScenario: {}, repeatsNotRun: 0 } : undefined;
  // --report: the threads digest every first run, folded here per scenario as results arrive.
  const aggregators = request.report === true ? new Map(names.map((name) => [name, new ReportAggregator()])) : undefined;
  const runPhase = async (phaseJobs: readonly Job[]) => {
    const progress = new Progress(phaseJobs.length, io.progress);
    const outcome = await runPool(phaseJobs, {
      threads: request.threads,
      scenarios,
      ...(store === 'sqlite' ? {} : { store }),
      ...(agent === undefined ? {} : { agent: agent.path }),
      ...(aggregators === undefined ? {} : { digest: digestRequest([(request.shard?.index ?? 1) - 1]) }),
      ...(stopWhen === undefined ? {} : { stopWhen }),
      onResult: (result) => {
        const aggregator = aggregators?.get(result.job.scenario);
        if (aggregator !== undefined) foldResult(aggregator, result);
        const failed = !result.job.repeat && result.verdict !== 'pass';
        progress.advance(failed);
        if (failed && failureLines++ < FAILURE_LINES_MAX) progress.note(`FAIL ${result.job.scenario} seed ${result.job.seed}: ${shortReason(result)}`);
      },
    });
    if (outcome.stopped !== undefined && bail !== undefined) {
      bail.after = outcome.stopped.by;
      countNotRun(bail, outcome.stopped.notRun);
      progress.note(`stopping after the first failure (--bail): ${outcome.stopped.notRun.filter((job) => !job.repeat).length} seed(s) not run`);
    }
    progress.finish();
    return outcome;
  };
  const pooled = await runPhase(jobs);
  let explored: ExploreOutcome | undefined;
  if (split !== undefined) {
    if (pooled.death === undefined && pooled.stopped === undefined) {
      const children = exploreJobs(request, names, split, pooled.results, jobs.length);
      if (bail !== undefined) bail.seedsPlanned += children.jobs.length;
      const second = await runPhase(withRepeats(children.jobs, request.unseedRate).map((job, offset) => ({ ...job, id: jobs.length + offset })));
      pooled.results.push(...second.results);
      if (second.death !== undefined) pooled.death = second.death;
      if (second.stopped !== undefined) pooled.stopped = second.stopped;
      explored = exploreOutcome(request.explore as number, split, children.picks, names, pooled.results);
    } else if (bail !== undefined && pooled.stopped !== undefined) {
      // Stopped among the plain seeds: the guided children were never planned; each scenario's share of them is not run.
      const childrenPerScenario = ownedExploreIndexes(request, split).length;
      bail.seedsPlanned += childrenPerScenario * names.length;
      for (const name of names) {
        bail.seedsNotRun += childrenPerScenario;
        if (childrenPerScenario > 0) bail.notRunByScenario[name] = (bail.notRunByScenario[name] ?? 0) + childrenPerScenario;
      }
    }
  }

  const counted = tally(names, pooled.results);
  // The required marks were measured with the built-in scripted agent; a team's agent is not held to them.
  // A check that stopped early (--bail) did not run the seeds the marks are measured over: not judged, and it says so.
  const coverage = bailedCoverage(agent === undefined ? judgeCoverage(counted.scenarios, totalOf(counted.scenarios).marks, store) : agentCoverage(), bail);
  const outcome: CheckOutcome = {
    request,
    counted,
    coverage,
    written: writeFailures(request, counted, agent),
    ...(pooled.death === undefined ? {} : { death: pooled.death }),
    wallMs: wallClockMs() - started,
    threadsUsed: Math.min(request.threads, Math.max(1, jobs.length)),
    exitCode: checkExitCode(totalOf(counted.scenarios), coverage, pooled.death !== undefined),
    pairs: pairCoverage(pooled.results),
    ...(explored === undefined ? {} : { explore: explored }),
    store,
    skipped,
    notApplicable: notApplicableOf(pooled.results),
    ...(bail === undefined ? {} : { bail }),
  };
  printSummary(outcome, (text) => io.out(text));
  if (request.junitPath !== undefined) {
    const replayOf = (result: JobResult) => replayCommand(request, outcome.written, result);
    const harness = pooled.death === undefined ? {} : { harnessError: deathLine(pooled.death) };
    const notRun = bail === undefined ? {} : { notRun: bail.notRunByScenario };
    writeFile(request.junitPath, junitXml({ results: pooled.results, mismatches: counted.mismatches, replayOf, ...harness, store, skipped, ...notRun }));
    io.out(`junit: ${request.junitPath}`);
  }
  if (request.outDir !== undefined) {
    const path = join(request.outDir, 'summary.json');
    writeFile(path, `${JSON.stringify(summaryJson(outcome), null, 2)}\n`);
    io.out(`summary: ${path}`);
    if (aggregators !== undefined) io.out(`reports: ${writeCatalogueReport(request.outDir, outcome, aggregators).html}`);
  }
  return outcome.exitCode;
}

/**
 * The guided children of every scenario: in this shard, the seed indexes plain..seeds-1 that the shard
 * owns (the same partition as planJobs), planned from the scenario's plain runs.
 */
function exploreJobs(request: CheckRequest, names: readonly string[], split: { plain: number; explore: number }, results: readonly JobResult[], firstId: number): { jobs: Job[]; picks: ExplorePick[] } {
  const owned = ownedExploreIndexes(request, split);
  const jobs: Job[] = [];
  const picks: ExplorePick[] = [];
  for (const scenario of names) {
    const planned = planExplore(request.root.seed, scenario, results.filter((result) => result.job.scenario === scenario), owned, firstId + jobs.length);
    jobs.push(...planned.jobs);
    picks.push(...planned.picks);
  }
  return { jobs, picks };
}

/** The seed indexes of the guided children this shard owns (the same partition as planJobs). */
function ownedExploreIndexes(request: CheckRequest, split: { plain: number; explore: number }): number[] {
  const shard = request.shard ?? { index: 1, count: 1 };
  return Array.from({ length: split.explore }, (_, k) => split.plain + k).filter((index) => index % shard.count === shard.index - 1);
}

/** The faults the store could not run, summed over the first runs: how many seeds drew any, and how many of each kind. */
function notApplicableOf(results: readonly JobResult[]): { seeds: number; faults: Record<string, number> } {
  const faults: Record<string, number> = {};
  let seeds = 0;
  for (const result of results) {
    if (result.job.repeat || result.notApplicable === undefined || Object.keys(result.notApplicable).length === 0) continue;
    seeds++;
    for (const [kind, count] of Object.entries(result.notApplicable)) faults[kind] = (faults[kind] ?? 0) + count;
  }
  return { seeds, faults: Object.fromEntries(Object.entries(faults).sort(([a], [b]) => (a < b ? -1 : 1))) };
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
  io.out(`leasehold check: ${request.sources.length} scenario(s), ${budgetPhrase(request.seedsPerScenario, request.split)}${shard} = ${runs} runs, +${repeats} unseed repeat(s), on ${request.threads} thread(s)`);
  if (request.split !== undefined) {
    const seeds = request.sources.map((source) => `${source.name} ${seedsOf(request, source.name)}`);
    io.out(`seeds per scenario (${YIELD_FILE}): ${seeds.join(', ')}`);
    if (request.split.uncalibrated.length > 0) io.out(`even share, not calibrated (a scenario file, or changed since npm run calibrate): ${request.split.uncalibrated.join(', ')}`);
  }
  io.out(`root seed: ${root.seed} (${from}); seed i of scenario X = first 48 bits of sha256(["leasehold-check/1", root, X, i]), in decimal`);
  io.out(`store: ${request.store === 'pglite' ? "pglite (the PostgreSQL store's own SQL, in-process on PGlite)" : 'sqlite'}`);
  if (request.agent !== undefined) io.out(`agent: ${request.agent} (the team's model and tools, against twins of its external systems)`);
  if (request.bail === true) io.out('bail: stops handing out seeds after the first failing one (--bail); the seeds already running finish, the rest are not run and are counted');
  io.out(`rerun: ${request.reproduce}`);
}

/**
 * S9 when several things went wrong at once: a safety violation is the finding that matters most and
 * comes with its counterexample, so it wins (1); then a broken harness (3: nondeterminism, a crash, a
 * dead thread), whose other verdicts cannot be trusted; then liveness (2); then missing coverage (4).
 */

/** Writes counterexample files for the first FAILURE_FILES_MAX failing seeds in job order. */
function writeFailures(request: CheckRequest, counted: Tally, agent: SimAgent | undefined): WrittenFailure[] {
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
      ...(agent === undefined ? {} : { agent: agent.path }),
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

/** T2: the coverage rule of a check of a team's agent: not applied (its marks were measured on the built-in scripted agent). */
function agentCoverage(): CoverageOutcome {
  return { enforced: false, required: [], reason: "required marks are measured on the built-in scripted agent; a team's agent module is not held to them" };
}

function writeFile(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}
