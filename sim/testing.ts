/**
 * `leasehold/testing`: the deterministic simulation harness as a library, for a test suite or a script
 * that runs the simulator without the CLI.
 *
 * ```ts
 * import { check, run, shrink } from 'leasehold/testing';
 * const one = await run({ scenario: 'mixed', seed: 1 });            // what `leasehold run --json` prints
 * if (one.exitCode !== 0) throw new Error(`${one.violations[0]?.message}\nreplay: ${one.replay}`);
 * const summary = await check({ scenarios: ['mixed'], seeds: 20 }); // what `leasehold check` writes to summary.json
 * for (const failure of summary.failures) console.log(failure.replay, failure.file);
 * if (summary.failures[0]?.file) await shrink({ file: summary.failures[0].file }); // `leasehold shrink FILE.json`
 * ```
 *
 * Nothing here prints unless asked (`progress: 'stderr'`, or a function given each line).
 *
 * The harness needs two packages beyond leasehold's own dependencies, optional peer dependencies a user
 * of the queue alone does not install: `npm install zod seedrandom` (and @electric-sql/pglite for the
 * 'pglite' store). Importing this entry without them throws MissingDependencyError (from 'leasehold')
 * naming the missing ones, before anything that needs them is loaded.
 */
import { requireHarnessPackages } from './harness-packages.ts';
import type * as Harness from './testing-harness.ts';

requireHarnessPackages('leasehold/testing');
const harness: typeof Harness = await import('./testing-harness.ts');

export type {
  ScenarioRunOptions,
  ScenarioInput,
  CatalogueEntry,
  RunOptions,
  RunResult,
  CheckOptions,
  CheckResult,
  CheckSummary,
  CheckFailure,
  CheckBail,
  CheckVerdict,
  ProgressOption,
  ShrinkOptions,
  ShrinkResult,
} from './testing-harness.ts';
export type { ShrinkSize } from './check/shrink.ts';
export type { ExitCode } from './cli/exit-codes.ts';
export type { RunReport, Verdict, Violation } from './report-types.ts';
export type { ScenarioSpec } from './scenario.ts';

/**
 * Runs one seed of one scenario in the simulator (what `leasehold run --scenario NAME --seed S --json`
 * prints) and resolves to its RunReport: `verdict` ('pass', 'safety', 'liveness' or 'nondeterminism'),
 * `violations` (the invariant, its kind and a message), the coverage `marks` reached, `metrics`, and the
 * `traceHash`, which the same scenario, seed and store repeat every time. `scenario` is a catalogue name,
 * a scenario file, or a scenario object (checked as a scenario file is); `seed` a string or a non-negative integer;
 * `store` 'sqlite' (the default) or 'pglite'. Bad options reject with InputError naming the field.
 */
export const runScenario: typeof Harness.runScenario = harness.runScenario;

/**
 * Runs one seed of one scenario and resolves to what `leasehold run --scenario S --seed N --json` prints:
 * the RunReport with `exitCode` (S9: 0 pass, 1 safety, 2 liveness, 3 nondeterminism or a crash) and
 * `replay`, the line that replays a failing run (null when it passed). `scenario` is a catalogue name, a
 * scenario file (a path ending .json) or a scenario object; with `out: DIR` a failing run also writes its
 * counterexample file there (`file`), which `leasehold replay` and `shrink()` read. Bad options reject with
 * InputError (ScenarioFileError for a scenario's own fields) naming the field, before anything runs.
 */
export const run: typeof Harness.run = harness.run;

/**
 * Runs a check, as `leasehold check` does (every scenario of the catalogue, or `scenarios`, over a budget
 * of seeds or `seeds` each, on worker threads; every invariant, the unseed repeats and coverage), and
 * resolves to the summary `leasehold check --out DIR` writes to summary.json, with `verdict` ('pass',
 * 'safety', 'nondeterminism', 'liveness' or 'coverage') beside `exitCode` (S9), and `failures`, each with
 * its `replay` line and counterexample `file`. Prints nothing unless given `progress` or `output`.
 */
export const check: typeof Harness.check = harness.check;

/**
 * Shrinks a counterexample file (`leasehold shrink FILE.json`): a smaller workload, then fewer faults,
 * each kept while the case still fails with the invariant, within `maxRuns` and `maxMs`. Writes the
 * shrunk case (default FILE.shrunk.json) in the counterexample format and resolves to what was removed
 * (`before` and `after`: faults and tasks), the shrunk case's verdict, `exitCode` and `replay` line.
 */
export const shrink: typeof Harness.shrink = harness.shrink;

/** `reports/failures/x.json` -> `reports/failures/x.shrunk.json`: where shrink() writes without `out`. */
export const shrunkPath: typeof Harness.shrunkPath = harness.shrunkPath;

/** The built-in catalogue (`leasehold scenarios`): name, one-line description and source of each, the default ('mixed') first. */
export const listScenarios: typeof Harness.listScenarios = harness.listScenarios;

/** A catalogue scenario by name, or undefined when the catalogue has none of that name. */
export const findScenario: typeof Harness.findScenario = harness.findScenario;

/**
 * Checks a parsed scenario (a JSON value, or an object built in code) against the scenario format and
 * returns it as a ScenarioSpec; the first problem is thrown as a ScenarioFileError naming its field path
 * and what was expected (`file`, when given, is how the error names the source).
 */
export const validateScenario: typeof Harness.validateScenario = harness.validateScenario;

/** Reads and validates a scenario file (JSON); a file that cannot be read, parsed or validated is a ScenarioFileError naming it. */
export const readScenarioFile: typeof Harness.readScenarioFile = harness.readScenarioFile;

/** The JSON Schema of the scenario file format (for editors and validators). */
export const scenarioJsonSchema: typeof Harness.scenarioJsonSchema = harness.scenarioJsonSchema;

/** A scenario that is not in the format: `file` (when known), `field` (the path, e.g. `workload[1].tasks[2].priority`), `problem`, and `more` problems after the first. */
export const ScenarioFileError: typeof Harness.ScenarioFileError = harness.ScenarioFileError;
export type ScenarioFileError = Harness.ScenarioFileError;

/** The catalogue scenario a check runs when none is named. */
export const DEFAULT_SCENARIO: typeof Harness.DEFAULT_SCENARIO = harness.DEFAULT_SCENARIO;
