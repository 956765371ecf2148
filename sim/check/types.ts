import type { WindowTally } from '../checkers/windows.ts';
import type { FaultPlan } from '../faults/plan.ts';
import type { Verdict, Violation } from '../report-types.ts';
import type { RunDigest } from '../report/digest.ts';
import type { ScenarioSpec } from '../scenario.ts';
import type { GitState } from './git.ts';
import type { ScenarioSource } from './scenario-source.ts';
import type { Job, RootSeed, Shard } from './seeds.ts';
import type { SimStore } from '../store/pglite.ts';
import type { SeedSplit } from './budget.ts';

/** What a worker thread sends back for one job. */
export interface JobResult {
  job: Job;
  verdict: Verdict;
  traceHash: string;
  violations: Violation[];
  marks: Record<string, number>;
  /** The windows its point faults hit and the pairs of SPEC moves its tasks combined (checkers/windows.ts). Absent after a crash. */
  windows?: WindowTally;
  metrics: Record<string, number>;
  /** The run's fault plan (drawn or explicit); a counterexample records it. Absent after a crash. */
  plan?: FaultPlan;
  /** Wall time the thread spent on this run, for seeds per second. */
  elapsedMs: number;
  /** Set when simulate() itself threw: a harness crash (exit 3), not a verdict of the core. */
  crash?: string;
  /** What a report keeps of this run (sim/report/digest.ts), when the check was asked for reports. */
  digest?: RunDigest;
  /** Faults of the seed's plan the store could not run (sim/store/pglite.ts), by kind; absent on SQLite. */
  notApplicable?: Record<string, number>;
}

/** Asks the threads for a report digest of every first run; the timeline only for these seed indexes and failing seeds. */
export interface DigestRequest {
  timelineIndexes: number[];
}

/** workerData of a check thread. */
export interface WorkerSetup {
  scenarios: Record<string, ScenarioSpec>;
  digest?: DigestRequest;
  /** The database every world of the thread runs on (default sqlite). */
  store?: SimStore;
  /** T2: the agent module (an absolute path) every world of the thread runs instead of the built-in scripted model and tools. */
  agent?: string;
}

export type ToWorker = { type: 'job'; job: Job };
export type FromWorker = { type: 'result'; result: JobResult };

/** A check with its arguments resolved (sim/cli/commands/check.ts builds it). */
export interface CheckRequest {
  sources: ScenarioSource[];
  /** Seeds per scenario (--seeds N), or the even share a --budget is measured in (budget.ts). */
  seedsPerScenario: number;
  /** --budget (the default): seeds per scenario split by what each finds (budget.ts); absent: seedsPerScenario each. */
  split?: SeedSplit;
  root: RootSeed;
  git: GitState;
  threads: number;
  shard?: Shard;
  unseedRate: number;
  failuresDir: string;
  junitPath?: string;
  outDir?: string;
  /** Also write a report per scenario (outDir/<scenario>/) and a catalogue index (outDir/index.html). */
  report?: boolean;
  /** --explore: the share of each scenario's seeds spent on guided children (sim/check/explore.ts). */
  explore?: number;
  /**
   * --bail: stop handing out seeds after the first failing one (a violation, a failed expectation, a
   * crash or two trace hashes for one seed); the seeds already running finish, the rest are not run.
   */
  bail?: boolean;
  /** The command line that reruns exactly this check. */
  reproduce: string;
  /** --store: the database the worlds run on (default sqlite; pglite: the PostgreSQL store's SQL on PGlite). */
  store?: SimStore;
  /**
   * T2 (`--agent FILE`, `check({ agent })`): the path of a team's agent module (default export
   * `defineAgent(...)`); each world then runs its model and tools, against twins of its external
   * systems, instead of the built-in scripted ones. The threads import it by this path.
   */
  agent?: string;
}

/** A counterexample file written for a failing seed. */
export interface WrittenFailure {
  result: JobResult;
  file: string;
  unseed?: { hashA: string; hashB: string };
}

/** How many seeds of `scenario` the check runs (before sharding). */
export function seedsOf(request: Pick<CheckRequest, 'seedsPerScenario' | 'split'>, scenario: string): number {
  return request.split?.seeds[scenario] ?? request.seedsPerScenario;
}
