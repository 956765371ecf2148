/**
 * What `leasehold/testing` (sim/testing.ts) exports, loaded by it once the harness's packages are known to
 * be installed. Each function takes plain values and checks them: bad input is an InputError naming the
 * field (or, for a scenario's own fields, a ScenarioFileError naming the field path).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { InputError } from '../src/queue/errors.ts';
import { requirePackages } from '../src/optional-packages.ts';
import { readYieldCalibration, splitByYield } from './check/budget.ts';
import { counterexamplePath, readCounterexample, replayFileCommand, writeCounterexample, type Counterexample } from './check/counterexample.ts';
import { gitState } from './check/git.ts';
import type { FailureRecord } from './check/merge.ts';
import type { ProgressSink } from './check/progress.ts';
import { runCheck } from './check/run-check.ts';
import { readScenarioFile, ScenarioFileError, validateScenario } from './check/scenario-file.ts';
import { isScenarioFile, type ScenarioSource } from './check/scenario-source.ts';
import { agentSources } from './check/agent-source.ts';
import type { SimAgent } from './actors/agent-module.ts';
import { rootSeed, type RootSeed } from './check/seeds.ts';
import { DEFAULT_SHRINK_MS, DEFAULT_SHRINK_RUNS, defaultInvariant, shrinkCase, type ShrinkOutcome } from './check/shrink.ts';
import type { ScenarioTally } from './check/tally.ts';
import type { CoverageOutcome } from './check/coverage.ts';
import type { BailSummary } from './check/bail.ts';
import { versions, type Versions } from './check/versions.ts';
import { canonicalJson } from './canonical-json.ts';
import { commandLine } from './cli/shell-quote.ts';
import { EXIT_COVERAGE, EXIT_HARNESS, EXIT_LIVENESS, EXIT_OK, EXIT_SAFETY, exitCodeForVerdict, type ExitCode } from './cli/exit-codes.ts';
import type { Verdict } from './report-types.ts';
import { seedKey } from './random.ts';
import type { RunReport } from './report-types.ts';
import { runScenario as simulateScenario, simulate } from './run-scenario.ts';
import { scenarioJsonSchema } from './scenario-schema.ts';
import type { ScenarioSpec } from './scenario.ts';
import { DEFAULT_SCENARIO, findScenario, listScenarios, type CatalogueEntry } from './scenarios/registry.ts';
import { PGLITE_FEATURE, SIM_STORES, simStoreOf, storeSkipReason, type SimStore } from './store/pglite.ts';

export { DEFAULT_SCENARIO, findScenario, listScenarios, readScenarioFile, ScenarioFileError, scenarioJsonSchema, validateScenario, type CatalogueEntry };

/** A scenario as the library takes it: a catalogue name, a scenario file (a path ending .json), or a scenario object. */
export type ScenarioInput = string | ScenarioSpec;

/** One simulated run: which scenario, from which root seed, on which store. */
export interface ScenarioRunOptions {
  /**
   * A catalogue scenario's name (see listScenarios), a scenario file (a path with a directory separator or
   * ending .json, read as `leasehold run --scenario FILE` reads it), or a scenario (from validateScenario,
   * readScenarioFile, or built in code).
   */
  scenario: ScenarioInput;
  /** The root seed (SPEC S2): a non-empty string, or a non-negative safe integer (the same as its decimal string). */
  seed: string | number;
  /**
   * The database of the simulated world: 'sqlite' (the default), or 'pglite', the PostgreSQL store's own SQL
   * in-process (needs the optional @electric-sql/pglite; a scenario whose faults act beneath SQLite is refused).
   */
  store?: 'sqlite' | 'pglite';
}

/**
 * Runs one seed of one scenario in the deterministic simulator (the world, faults, workers and checkers of
 * `leasehold run`) and resolves to its report: the verdict, the violations, the coverage marks, the metrics
 * and the trace hash. The same scenario, seed and store give the same trace hash every time.
 */
export async function runScenario(options: ScenarioRunOptions): Promise<RunReport> {
  const { source, seed, store } = runInputs(options);
  return simulateScenario({ scenario: source.spec, seed, store });
}

// ------------------------------------------------------------------------------------------------ run

/** `run(options)`: one seed, as `leasehold run --json`. */
export interface RunOptions extends Omit<ScenarioRunOptions, 'scenario'> {
  /** As runScenario's; may be left out with `agent`, whose module's own `scenario` export (else the catalogue's default) then runs. */
  scenario?: ScenarioInput;
  /**
   * A team's agent module (`.ts`, `.mts` or `.mjs`; default export `defineAgent(...)`, as `leasehold work
   * --agent` runs) to run instead of the built-in scripted model and tools (`leasehold run --agent FILE`).
   * A module that cannot be loaded rejects with AgentModuleError (from 'leasehold'), before anything runs.
   */
  agent?: string;
  /**
   * A directory: when the run fails, its counterexample file is written there (`DIR/<scenario>-<seed>.json`,
   * the format `leasehold replay FILE.json` and `leasehold shrink FILE.json` read), and `replay` names it.
   * Without it nothing is written. A scenario object has no name the CLI can find, so give `out` to replay one.
   */
  out?: string;
}

/** What `run()` resolves to, and `leasehold run --json` prints: the run's report, its S9 exit code and how to replay it. */
export interface RunResult extends RunReport {
  /** S9: 0 pass, 1 safety, 2 liveness, 3 nondeterminism or a harness crash. */
  exitCode: ExitCode;
  /** The line that replays this run (the counterexample file's, when one was written); null when it passed. */
  replay: string | null;
  /** The counterexample file written (only with `out`, for a failing run). */
  file?: string;
}

/**
 * Runs one seed of one scenario and resolves to what `leasehold run --scenario S --seed N --json` prints:
 * the report (verdict, violations, marks, metrics, trace hash), the exit code of S9 and, for a failing
 * run, the replay line (and with `out`, the counterexample file). Bad options reject with InputError (or
 * ScenarioFileError for a scenario's own fields) naming the field, before anything runs. Prints nothing.
 */
export async function run(options: RunOptions): Promise<RunResult> {
  if (options === null || typeof options !== 'object') throw new InputError('options', 'expected { scenario, seed, store?, agent?, out? }');
  const agent = await agentOf(options.agent);
  if (options.scenario === undefined && agent === undefined) throw new InputError('scenario', 'is required (a catalogue name, a scenario file or a scenario), unless an agent module gives its own');
  const defaulted = options.scenario === undefined ? (agentSources(agent as SimAgent)[0] as ScenarioSource) : undefined;
  const { source, seed, store } = runInputs({ ...options, scenario: defaulted?.spec ?? (options.scenario as ScenarioInput) });
  const out = optionalString(options.out, 'out');
  const { world, report } = await simulate({ scenario: source.spec, seed, store, ...(agent === undefined ? {} : { agent }) });
  const exitCode = exitCodeForVerdict(report.verdict);
  if (report.verdict === 'pass') return { ...report, exitCode, replay: null };
  const storeFlag = store === 'sqlite' ? [] : ['--store', store];
  if (out === undefined) {
    const agentFlag = agent === undefined ? [] : ['--agent', options.agent as string];
    // The module's own scenario is found again by --agent alone.
    const scenarioFlag = defaulted === undefined ? ['--scenario', source.file ?? source.name] : [];
    return { ...report, exitCode, replay: `leasehold ${commandLine(['replay', ...scenarioFlag, '--seed', report.seed, ...storeFlag, ...agentFlag])}` };
  }
  const file = counterexamplePath(out, source.name, report.seed);
  writeCounterexample(file, {
    scenario: source.name,
    ...(source.file === undefined ? {} : { scenarioFile: source.file }),
    scenarioSpec: source.spec,
    ...(agent === undefined ? {} : { agent: agent.path }),
    seed: report.seed,
    plan: world.plan,
    verdict: report.verdict,
    violations: report.violations,
    traceHash: report.traceHash,
    marks: report.marks,
    metrics: report.metrics,
    // A run's seed is given, not derived from a root: it is its own root, at index 0.
    check: { rootSeed: report.seed, rootSeedSource: 'flag', seedIndex: 0 },
    git: gitState(),
    versions: versions(),
  });
  return { ...report, exitCode, replay: `${replayFileCommand(file)}${storeFlag.length === 0 ? '' : ` ${commandLine(storeFlag)}`}`, file };
}

function runInputs(options: ScenarioRunOptions): { source: ScenarioSource; seed: string; store: SimStore } {
  if (options === null || typeof options !== 'object') throw new InputError('options', 'expected { scenario, seed, store? }');
  const source = scenarioSource(options.scenario, 'scenario');
  const seed = seedOf(options.seed, 'seed');
  if (seed === undefined) throw new InputError('seed', 'is required (a string or a non-negative integer)');
  const store = storeOf(options.store);
  const skip = storeSkipReason(source.spec, store);
  if (skip !== undefined) throw new InputError('store', `scenario '${source.name}' cannot run on ${store}: ${skip}`);
  return { source, seed, store };
}

// ---------------------------------------------------------------------------------------------- check

/** Where a check's progress goes: 'stderr' (a bar on a terminal, a line now and then otherwise), or a function given each line. */
export type ProgressOption = 'stderr' | ((line: string) => void);

/** `check(options)`: many seeds of many scenarios, as `leasehold check`. Every field is optional. */
export interface CheckOptions {
  /** The scenarios (catalogue names, scenario files or objects); default the whole catalogue. Two of one name must be the same scenario. */
  scenarios?: readonly ScenarioInput[];
  /** Seeds per scenario, the same for each (`--seeds N`). Not with `budget`. */
  seeds?: number;
  /** The thread time of N seeds of every scenario, split by what each one finds (`--budget N`, the default, 100). Not with `seeds`. */
  budget?: number;
  /** The root seed the run seeds derive from (`--seed S`); default the git commit's first 12 hex digits. */
  seed?: string | number;
  /** Worker threads (`--jobs J`); default the number of cores. */
  jobs?: number;
  /** Only the K-th of N equal parts (`--shard K/N`): `{ index: K, count: N }` or `'K/N'`. */
  shard?: { index: number; count: number } | string;
  /** 'sqlite' (default) or 'pglite'. */
  store?: 'sqlite' | 'pglite';
  /** Write summary.json and the counterexample files (DIR/failures) there (`--out DIR`); default: counterexamples under reports/failures, no summary file. */
  out?: string;
  /** Also write a JUnit XML report (`--junit FILE`). */
  junit?: string;
  /** Also write a report per scenario and a catalogue index under `out` (`--report`; needs `out`). */
  report?: boolean;
  /** Share of seeds run twice to compare trace hashes (S6), from 0 to 1 (default 0.05). */
  unseedRate?: number;
  /** Share of each scenario's seeds spent on guided children (`--explore`), above 0 and below 1; not with `budget`. */
  explore?: number;
  /**
   * Stop handing out seeds after the first failing one (`--bail`): the seeds already running finish, the
   * rest are not run, and `bail` in the result counts them; coverage is not judged on a check that stopped.
   */
  bail?: boolean;
  /**
   * A team's agent module (`.ts`, `.mts` or `.mjs`; default export `defineAgent(...)`) every world runs
   * instead of the built-in scripted model and tools (`leasehold check --agent FILE`); without `scenarios`,
   * the module's own `scenario` export runs (else the catalogue's default). A module that cannot be loaded
   * rejects with AgentModuleError (from 'leasehold'), before any seed runs.
   */
  agent?: string;
  /** Progress while it runs; default none. */
  progress?: ProgressOption;
  /** The lines `leasehold check` prints (the header, the summary table, the failures, the result), given to `out` (and warnings to `err`); default none. */
  output?: { out(text: string): void; err(text: string): void };
}

/** What a check found, from 0 (pass) down S9's precedence: safety, then nondeterminism or a harness crash, then liveness, then missing coverage. */
export type CheckVerdict = 'pass' | 'safety' | 'nondeterminism' | 'liveness' | 'coverage';

/** One failing seed of a check, as summary.json lists it (the record `leasehold merge` reads too). */
export type CheckFailure = FailureRecord;

/** What a check with `bail` did, as summary.json's `bail` says it: whether it stopped, after which seed, and how many seeds it did not run. */
export type CheckBail = BailSummary;

/** summary.json of `leasehold check --out DIR` (format leasehold-check-summary/1). */
export interface CheckSummary {
  format: 'leasehold-check-summary/1';
  /** The command line that reruns exactly this check. */
  command: string;
  exitCode: ExitCode;
  rootSeed: string;
  rootSeedSource: RootSeed['source'];
  git: { commit: string | null; dirty: boolean };
  versions: Versions;
  seedsPerScenario: number;
  seedsByScenario: Record<string, number> | null;
  shard: { index: number; count: number } | null;
  threads: number;
  unseedRate: number;
  store: SimStore;
  skipped: { scenario: string; reason: string }[];
  notApplicable: { seeds: number; faults: Record<string, number> };
  wallMs: number;
  scenarios: (ScenarioTally & { seedsPerSecond: number })[];
  total: ScenarioTally & { seedsPerSecond: number };
  coverage: CoverageOutcome;
  unseed: { checked: number; mismatches: { scenario: string; seed: string; hashA: string; hashB: string }[] };
  failures: CheckFailure[];
  harnessCrash: string | null;
  runs: { scenario: string; index: number; seed: string; verdict: Verdict; traceHash: string; elapsedMs: number; crash?: string }[];
  pairs?: unknown;
  explore?: unknown;
  /** Without `bail`: null. With it: whether the check stopped after a failure, after which seed, and the seeds it did not run. */
  bail: CheckBail | null;
}

/** What `check()` resolves to: summary.json's content, the verdict its exit code means, and where summary.json was written (with `out`). */
export interface CheckResult extends CheckSummary {
  verdict: CheckVerdict;
  summaryFile: string | null;
}

/** The default budget: seeds per scenario, split by yield (`leasehold check` without --seeds). */
export const DEFAULT_SEEDS = 100;
/** Share of seeds run twice for the unseed check (S6) without `unseedRate`. */
export const DEFAULT_UNSEED_RATE = 0.05;
/** Where counterexamples go without `out`. */
export const DEFAULT_FAILURES_DIR = join('reports', 'failures');

const VERDICT_OF_EXIT: Readonly<Record<number, CheckVerdict>> = { [EXIT_OK]: 'pass', [EXIT_SAFETY]: 'safety', [EXIT_LIVENESS]: 'liveness', [EXIT_HARNESS]: 'nondeterminism', [EXIT_COVERAGE]: 'coverage' };

/**
 * Runs a check (what `leasehold check` runs: seeds of every scenario on worker threads, every invariant,
 * the unseed repeats, coverage) and resolves to its summary: what `leasehold check --out DIR` writes to
 * DIR/summary.json, with `verdict` and `summaryFile`. Each failing seed is in `failures` with its replay
 * line and counterexample file. Bad options reject with InputError (or ScenarioFileError) naming the
 * field, before any seed runs. It prints nothing unless given `output` or `progress`.
 */
export async function check(options: CheckOptions = {}): Promise<CheckResult> {
  if (options === null || typeof options !== 'object') throw new InputError('options', 'expected an object (every field optional)');
  const given = options.scenarios === undefined ? undefined : scenarioList(options.scenarios);
  const seeds = positiveInteger(options.seeds, 'seeds');
  const budget = positiveInteger(options.budget, 'budget');
  if (seeds !== undefined && budget !== undefined) throw new InputError('budget', 'and seeds both given: seeds gives every scenario the same seeds, budget splits them by what each finds; give one');
  const explore = share(options.explore, 'explore', { open: true });
  if (explore !== undefined && budget !== undefined) throw new InputError('explore', "spends each scenario's even share (seeds); it does not combine with budget");
  const unseedRate = share(options.unseedRate, 'unseedRate', { open: false }) ?? DEFAULT_UNSEED_RATE;
  const seedFlag = seedOf(options.seed, 'seed');
  const jobs = positiveInteger(options.jobs, 'jobs') ?? availableParallelism();
  const shard = shardOf(options.shard);
  const store = storeOf(options.store);
  const out = optionalString(options.out, 'out');
  const junit = optionalString(options.junit, 'junit');
  if (options.report !== undefined && typeof options.report !== 'boolean') throw new InputError('report', `expected a boolean, got ${typeof options.report}`);
  const report = options.report === true;
  if (options.bail !== undefined && typeof options.bail !== 'boolean') throw new InputError('bail', `expected a boolean, got ${typeof options.bail}`);
  const bail = options.bail === true;
  if (report && out === undefined) throw new InputError('report', 'writes its reports under out, and no out was given');
  const progress = progressSink(options.progress);
  const output = outputOf(options.output);
  // Loaded last of the options (it runs the module's code) and before any seed.
  const agent = await agentOf(options.agent);
  const sources = given ?? (agent === undefined ? listScenarios().map((entry) => ({ name: entry.name, spec: findScenario(entry.name) as ScenarioSpec })) : agentSources(agent));

  const seedsPerScenario = seeds ?? budget ?? DEFAULT_SEEDS;
  const split = seeds === undefined && explore === undefined ? splitByYield(sources.map((source) => source.name), Object.fromEntries(sources.map((source) => [source.name, source.spec])), seedsPerScenario, readYieldCalibration()) : undefined;
  const git = gitState();
  const root = rootSeed(seedFlag, git);
  const reproduce = commandLine([
    'leasehold',
    'check',
    ...(given ?? []).flatMap((source) => ['--scenario', source.file ?? source.name]),
    split === undefined ? '--seeds' : '--budget',
    String(seedsPerScenario),
    '--seed',
    root.seed,
    ...(shard === undefined ? [] : ['--shard', `${shard.index}/${shard.count}`]),
    ...(explore === undefined ? [] : ['--explore', String(explore)]),
    ...(bail ? ['--bail'] : []),
    ...(store === 'sqlite' ? [] : ['--store', store]),
    ...(agent === undefined ? [] : ['--agent', options.agent as string]),
  ]);
  // summary.json is the result: without `out` it is written to a directory of our own, read and removed.
  const scratch = out === undefined ? mkdtempSync(join(tmpdir(), 'leasehold-check-')) : undefined;
  const summaryDir = out ?? (scratch as string);
  const summaryFile = join(summaryDir, 'summary.json');
  try {
    const exitCode = await runCheck(
      {
        sources,
        seedsPerScenario,
        ...(split === undefined ? {} : { split }),
        root,
        git,
        threads: jobs,
        ...(shard === undefined ? {} : { shard }),
        unseedRate,
        failuresDir: out === undefined ? DEFAULT_FAILURES_DIR : join(out, 'failures'),
        ...(junit === undefined ? {} : { junitPath: junit }),
        outDir: summaryDir,
        ...(report ? { report } : {}),
        ...(explore === undefined ? {} : { explore }),
        ...(bail ? { bail } : {}),
        reproduce,
        ...(store === 'sqlite' ? {} : { store }),
        ...(agent === undefined ? {} : { agent: agent.path }),
      },
      {
        // The scratch directory is ours, not the caller's: its `summary:` line is not theirs to see.
        out: (text) => (scratch !== undefined && text === `summary: ${summaryFile}` ? undefined : output.out(text)),
        err: (text) => output.err(text),
        progress,
      },
    );
    const summary = JSON.parse(readFileSync(summaryFile, 'utf8')) as CheckSummary;
    if (summary.exitCode !== exitCode) throw new Error(`check: summary.json says exit ${summary.exitCode}, the runner returned ${exitCode}`);
    return { ...summary, verdict: VERDICT_OF_EXIT[exitCode] ?? 'nondeterminism', summaryFile: scratch === undefined ? summaryFile : null };
  } finally {
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  }
}

// --------------------------------------------------------------------------------------------- shrink

/** `shrink(options)`: a counterexample reduced to a smaller workload and fault plan that still fails (`leasehold shrink FILE.json`). */
export interface ShrinkOptions {
  /** The counterexample file to shrink (written by `leasehold check`, `run({ out })` or a shrink). */
  file: string;
  /** Where the shrunk counterexample is written; default FILE with `.shrunk.json` for `.json`. */
  out?: string;
  /** The invariant the shrunk case must still violate; default the file's first violation's ('harness' for a crash). */
  invariant?: string;
  /** Candidate runs at most (default 100). */
  maxRuns?: number;
  /** Wall time at most, in milliseconds (default 120000). */
  maxMs?: number;
  /** The store the counterexample ran on: 'sqlite' (default) or 'pglite'. */
  store?: 'sqlite' | 'pglite';
  /** One line per step; default none. */
  progress?: ProgressOption;
}

/** What `shrink()` resolves to, and `leasehold shrink --json` prints. */
export interface ShrinkResult extends ShrinkOutcome {
  /** S9: the shrunk case's verdict's (1 safety, 2 liveness, 3 a crash), or 3 when the file no longer fails as it recorded. */
  exitCode: ExitCode;
  /** The counterexample file shrunk. */
  from: string;
  /** Why nothing was shrunk, when the case did not fail again. */
  note?: string;
}

/** `reports/failures/mixed-1.json` -> `reports/failures/mixed-1.shrunk.json`. */
export function shrunkPath(file: string): string {
  return /\.json$/i.test(file) ? file.replace(/\.json$/i, '.shrunk.json') : `${file}.shrunk.json`;
}

/**
 * Shrinks a counterexample: fewer topics or rounds, then fewer faults, each candidate kept while it still
 * fails with the invariant, within the budget (runs and wall time); writes the smallest failing case to
 * `out` in the counterexample format (`leasehold replay OUT.json` reruns it) and resolves to what was
 * removed: faults and tasks before and after, the workload knobs lowered, the replay line. A file that
 * cannot be read is a ScenarioFileError naming it; a bad option an InputError naming the field.
 */
export async function shrink(options: ShrinkOptions): Promise<ShrinkResult> {
  if (options === null || typeof options !== 'object') throw new InputError('options', 'expected { file, out?, invariant?, maxRuns?, maxMs?, store? }');
  const file = optionalString(options.file, 'file');
  if (file === undefined) throw new InputError('file', 'is required: the counterexample file to shrink');
  const out = optionalString(options.out, 'out') ?? shrunkPath(file);
  if (out === file) throw new InputError('out', `is the counterexample being shrunk (${file}); give another file`);
  const maxRuns = positiveInteger(options.maxRuns, 'maxRuns') ?? DEFAULT_SHRINK_RUNS;
  const maxMs = positiveInteger(options.maxMs, 'maxMs') ?? DEFAULT_SHRINK_MS;
  const store = storeOf(options.store);
  const progress = options.progress === undefined ? undefined : progressLine(options.progress, 'progress');
  let recorded: Counterexample;
  try {
    recorded = readCounterexample(file);
  } catch (error) {
    if (!(error instanceof ScenarioFileError)) throw error;
    throw new ScenarioFileError(error.field, error.problem, file, error.more);
  }
  const invariants = [...new Set((recorded.violations ?? []).map((violation) => violation.invariant))];
  const invariant = optionalString(options.invariant, 'invariant') ?? defaultInvariant(recorded);
  if (invariant === undefined) throw new InputError('file', `${file} records no violation and no crash: nothing to shrink`);
  if (options.invariant !== undefined && !invariants.includes(invariant) && !(invariant === 'harness' && recorded.crash !== undefined)) {
    throw new InputError('invariant', `'${invariant}' is not among the file's violations (${invariants.join(', ') || 'none'})`);
  }
  const skip = storeSkipReason(recorded.scenarioSpec, store);
  if (skip !== undefined) throw new InputError('store', `scenario '${recorded.scenario}' cannot run on ${store}: ${skip}`);
  const outcome = await shrinkCase({ case: recorded, invariant, out, maxRuns, maxMs, ...(store === 'sqlite' ? {} : { store }), from: file, ...(progress === undefined ? {} : { onProgress: progress }) });
  if (outcome.reproduced) return { ...outcome, exitCode: exitCodeForVerdict(outcome.verdict), from: file };
  const hashNote = recorded.traceHash !== '' && recorded.traceHash !== outcome.traceHash ? `its trace hash is ${outcome.traceHash}, the file recorded ${recorded.traceHash}: the code changed since (see git.commit in the file) or the run is nondeterministic (I14)` : `it ended ${outcome.verdict}`;
  return { ...outcome, exitCode: EXIT_HARNESS, from: file, note: `the case no longer fails with ${invariant} when run again: ${hashNote}` };
}

// ---------------------------------------------------------------------------------------- the options

/** A scenario input as a source: the catalogue's by name, a file's (with its path), or an object's (checked as a file is). */
function scenarioSource(scenario: unknown, field: string): ScenarioSource {
  if (typeof scenario === 'string') {
    if (isScenarioFile(scenario)) {
      if (!/\.json$/i.test(scenario)) throw new InputError(field, `scenario files are JSON (a .json file), got ${scenario}`);
      if (!existsSync(scenario)) throw new InputError(field, `scenario file not found: ${scenario}`);
      const spec = readScenarioFile(scenario);
      return { name: spec.name, spec, file: scenario };
    }
    const found = findScenario(scenario);
    if (found === undefined) throw new InputError(field, `names no catalogue scenario: '${scenario}' (listScenarios() has ${listScenarios().map((entry) => entry.name).join(', ')})`);
    return { name: scenario, spec: found };
  }
  if (typeof scenario !== 'object' || scenario === null) throw new InputError(field, 'expected a catalogue name, a scenario file or a scenario (validateScenario)');
  // A scenario built in code is checked as a file would be: the run must not meet a malformed part half-way.
  const spec = validateScenario(scenario);
  return { name: spec.name, spec };
}

/** Each scenario once, in the order given; two of one name must be the same scenario (they would share seeds and files). */
function scenarioList(value: unknown): ScenarioSource[] {
  if (!Array.isArray(value)) throw new InputError('scenarios', 'expected an array of catalogue names, scenario files or scenarios');
  if (value.length === 0) throw new InputError('scenarios', 'is empty: leave it out to check the whole catalogue');
  const sources: ScenarioSource[] = [];
  value.forEach((entry, index) => {
    const source = scenarioSource(entry, `scenarios[${index}]`);
    const clash = sources.find((known) => known.name === source.name);
    if (clash === undefined) sources.push(source);
    else if (clash.file !== source.file || canonicalJson(clash.spec as never) !== canonicalJson(source.spec as never)) {
      throw new InputError(`scenarios[${index}]`, `two different scenarios are named '${source.name}' (${clash.file ?? 'the catalogue or an object'} and ${source.file ?? 'the catalogue or an object'})`);
    }
  });
  return sources;
}

/** A team's agent module, loaded (and so checked: found, defineAgent, a scenario export that validates) before anything runs. */
async function agentOf(value: unknown): Promise<SimAgent | undefined> {
  const path = optionalString(value, 'agent');
  if (path === undefined) return undefined;
  // Imported only for an agent: a run of the built-in agent never loads src/worker/agent.ts.
  const { loadSimAgent } = await import('./actors/agent-module.ts');
  return loadSimAgent(path);
}

function seedOf(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' && typeof value !== 'number') throw new InputError(field, `expected a string or a non-negative integer, got ${typeof value}`);
  try {
    return seedKey(value);
  } catch (error) {
    throw new InputError(field, (error as Error).message);
  }
}

function storeOf(value: unknown): SimStore {
  if (value === undefined) return 'sqlite';
  const store = simStoreOf(String(value));
  if (store === undefined || typeof value !== 'string') throw new InputError('store', `expected one of ${SIM_STORES.join(', ')}, got ${JSON.stringify(value)}`);
  if (store === 'pglite') requirePackages(PGLITE_FEATURE, ['@electric-sql/pglite']);
  return store;
}

function positiveInteger(value: unknown, field: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) throw new InputError(field, `expected an integer >= 1, got ${JSON.stringify(value)}`);
  return value;
}

function share(value: unknown, field: string, { open }: { open: boolean }): number | undefined {
  if (value === undefined) return undefined;
  const ok = typeof value === 'number' && Number.isFinite(value) && (open ? value > 0 && value < 1 : value >= 0 && value <= 1);
  if (!ok) throw new InputError(field, `expected a share ${open ? 'above 0 and below 1' : 'from 0 to 1'}, got ${JSON.stringify(value)}`);
  return value;
}

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw new InputError(field, `expected a non-empty string, got ${JSON.stringify(value)}`);
  return value;
}

function shardOf(value: unknown): { index: number; count: number } | undefined {
  if (value === undefined) return undefined;
  let index: unknown;
  let count: unknown;
  if (typeof value === 'string') {
    const match = /^(\d+)\/(\d+)$/.exec(value);
    if (match === null) throw new InputError('shard', `expected 'K/N' or { index: K, count: N }, got ${JSON.stringify(value)}`);
    [index, count] = [Number(match[1]), Number(match[2])];
  } else if (typeof value === 'object' && value !== null) {
    ({ index, count } = value as { index?: unknown; count?: unknown });
  } else throw new InputError('shard', `expected 'K/N' or { index: K, count: N }, got ${JSON.stringify(value)}`);
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(count) || (count as number) < 1 || (index as number) < 1 || (index as number) > (count as number)) {
    throw new InputError('shard', `expected 1 <= K <= N, got ${String(index)}/${String(count)}`);
  }
  return { index: index as number, count: count as number };
}

function progressLine(value: unknown, field: string): (line: string) => void {
  if (value === 'stderr') return (line) => void process.stderr.write(`${line}\n`);
  if (typeof value === 'function') return value as (line: string) => void;
  throw new InputError(field, `expected 'stderr' or a function of one line, got ${JSON.stringify(value)}`);
}

function progressSink(value: unknown): ProgressSink {
  if (value === undefined) return { tty: false, line: () => {} };
  if (value === 'stderr' && process.stderr.isTTY) return { tty: true, columns: process.stderr.columns ?? 80, write: (text) => void process.stderr.write(text) };
  return { tty: false, line: progressLine(value, 'progress') };
}

function outputOf(value: unknown): { out(text: string): void; err(text: string): void } {
  if (value === undefined) return { out: () => {}, err: () => {} };
  const output = value as { out?: unknown; err?: unknown };
  if (typeof value !== 'object' || value === null || typeof output.out !== 'function' || typeof output.err !== 'function') throw new InputError('output', 'expected { out(text), err(text) }');
  return value as { out(text: string): void; err(text: string): void };
}
