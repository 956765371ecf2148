/**
 * `leasehold/testing`: the deterministic simulation harness as a library, for a test suite or a script
 * that runs the simulator without the CLI.
 *
 * ```ts
 * import { listScenarios, runScenario } from 'leasehold/testing';
 * const report = await runScenario({ scenario: 'mixed', seed: 1 });
 * if (report.verdict !== 'pass') throw new Error(report.violations.map((v) => `${v.invariant}: ${v.message}`).join('\n'));
 * ```
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

export type { ScenarioRunOptions, CatalogueEntry } from './testing-harness.ts';
export type { RunReport, Verdict, Violation } from './report-types.ts';
export type { ScenarioSpec } from './scenario.ts';

/**
 * Runs one seed of one scenario in the simulator (what `leasehold run --scenario NAME --seed S --json`
 * prints) and resolves to its RunReport: `verdict` ('pass', 'safety', 'liveness' or 'nondeterminism'),
 * `violations` (the invariant, its kind and a message), the coverage `marks` reached, `metrics`, and the
 * `traceHash`, which the same scenario, seed and store repeat every time. `scenario` is a catalogue name
 * or a scenario object (checked as a scenario file is); `seed` a string or a non-negative integer;
 * `store` 'sqlite' (the default) or 'pglite'. Bad options reject with InputError naming the field.
 */
export const runScenario: typeof Harness.runScenario = harness.runScenario;

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

/** A scenario that is not in the format: `file` (when known), `field` (the path, e.g. `workload.tasks[2].priority`), `problem`, and `more` problems after the first. */
export const ScenarioFileError: typeof Harness.ScenarioFileError = harness.ScenarioFileError;
export type ScenarioFileError = Harness.ScenarioFileError;

/** The catalogue scenario a check runs when none is named. */
export const DEFAULT_SCENARIO: typeof Harness.DEFAULT_SCENARIO = harness.DEFAULT_SCENARIO;
