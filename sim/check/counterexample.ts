import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FaultPlan } from '../faults/plan.ts';
import type { Verdict, Violation } from '../report-types.ts';
import type { ScenarioSpec } from '../scenario.ts';
import { commandLine } from '../cli/shell-quote.ts';
import type { GitState } from './git.ts';
import { ScenarioFileError } from './scenario-file.ts';
import type { RootSeed } from './seeds.ts';
import type { Versions } from './versions.ts';
import { FlatWorkloadError, upgradeRecordedSpec } from '../workloads/legacy.ts';

export const COUNTEREXAMPLE_FORMAT = 'leasehold-counterexample/1';

/**
 * A self-contained counterexample (S9): everything `leasehold replay FILE.json` needs to rerun the
 * failing seed exactly, with no other input than the code at the recorded commit.
 */
export interface Counterexample {
  format: typeof COUNTEREXAMPLE_FORMAT;
  scenario: string;
  /** The scenario file the check read, when the scenario came from one. */
  scenarioFile?: string;
  /** The full scenario as it was run, so a later edit of the catalogue or the file cannot change the replay. */
  scenarioSpec: ScenarioSpec;
  /** T2: the agent module the run ran (its absolute path); replay runs it again. Absent: the built-in scripted agent. */
  agent?: string;
  seed: string;
  /** The fault plan the run used; replay passes it back to the World. Absent when the run crashed before it had one. */
  plan?: FaultPlan;
  verdict: Verdict;
  violations: Violation[];
  traceHash: string;
  /** Set when the seed gave two trace hashes in one check (S6, I14). */
  unseed?: { hashA: string; hashB: string };
  crash?: string;
  marks: Record<string, number>;
  metrics: Record<string, number>;
  check: { rootSeed: string; rootSeedSource: RootSeed['source']; seedIndex: number };
  git: { commit: string | null; dirty: boolean };
  versions: Versions;
  replay: string;
}

export type CounterexampleInput = Omit<Counterexample, 'format' | 'replay' | 'git'> & { git: GitState };

/** `reports/failures/mixed-123.json`: the scenario and the seed, with anything unsafe in a file name replaced. */
export function counterexamplePath(directory: string, scenario: string, seed: string): string {
  const safe = (word: string) => word.replace(/[^A-Za-z0-9_.-]/g, '_');
  return join(directory, `${safe(scenario)}-${safe(seed)}.json`);
}

export function replayFileCommand(path: string): string {
  return `leasehold ${commandLine(['replay', path])}`;
}

export function replaySeedCommand(scenarioArgument: string, seed: string): string {
  return `leasehold ${commandLine(['replay', '--scenario', scenarioArgument, '--seed', seed])}`;
}

export function writeCounterexample(path: string, input: CounterexampleInput): Counterexample {
  const { git, scenarioSpec, plan, marks, metrics, ...rest } = input;
  // The verdict, the replay line and the provenance first, for whoever opens the file; the bulk last.
  const counterexample: Counterexample = {
    format: COUNTEREXAMPLE_FORMAT,
    replay: replayFileCommand(path),
    ...rest,
    git: { commit: git.commit ?? null, dirty: git.dirty },
    ...(plan === undefined ? {} : { plan }),
    marks,
    metrics,
    scenarioSpec,
  };
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, `${JSON.stringify(counterexample, null, 2)}\n`);
  return counterexample;
}

/**
 * Reads a counterexample back and checks the fields replay relies on; a malformed file is a
 * ScenarioFileError naming the field (the command turns it into exit 64).
 */
export function readCounterexample(path: string): Counterexample {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ScenarioFileError('', code === undefined ? `is not valid JSON (${(error as Error).message})` : `cannot be read (${code})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ScenarioFileError('', 'expected a JSON object');
  const file = value as Partial<Counterexample> & Record<string, unknown>;
  if (file.format !== COUNTEREXAMPLE_FORMAT) throw new ScenarioFileError('format', `expected ${JSON.stringify(COUNTEREXAMPLE_FORMAT)}, got ${JSON.stringify(file.format)}`);
  if (typeof file.seed !== 'string' || file.seed === '') throw new ScenarioFileError('seed', 'expected a non-empty string');
  if (typeof file.traceHash !== 'string') throw new ScenarioFileError('traceHash', 'expected a string');
  // The scenario and the plan were written by `leasehold check` from values the World ran, so they are
  // checked for shape only: a strict check would refuse files written before ScenarioSpec last grew.
  const spec = file.scenarioSpec as Partial<ScenarioSpec> | undefined;
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) throw new ScenarioFileError('scenarioSpec', 'expected an object');
  if (typeof spec.name !== 'string' || spec.name === '') throw new ScenarioFileError('scenarioSpec.name', 'expected a non-empty string');
  for (const field of ['queue', 'workers', 'workload', 'faults', 'phases'] as const) {
    if (typeof spec[field] !== 'object' || spec[field] === null) throw new ScenarioFileError(`scenarioSpec.${field}`, 'expected an object');
  }
  // A file written before the workload kept its typed parts records one flat object: read as the parts it stands for.
  try {
    file.scenarioSpec = upgradeRecordedSpec(spec as ScenarioSpec);
  } catch (error) {
    if (error instanceof FlatWorkloadError) throw new ScenarioFileError(`scenarioSpec.workload.${error.field}`, error.problem);
    throw error;
  }
  if (file.plan !== undefined) {
    const plan = file.plan as Partial<FaultPlan> | null;
    if (typeof plan !== 'object' || plan === null) throw new ScenarioFileError('plan', 'expected an object');
    if (!Array.isArray(plan.timed)) throw new ScenarioFileError('plan.timed', 'expected an array');
    if (!Array.isArray(plan.points)) throw new ScenarioFileError('plan.points', 'expected an array');
    if (typeof plan.rates !== 'object' || plan.rates === null) throw new ScenarioFileError('plan.rates', 'expected an object');
  }
  return file as Counterexample;
}
