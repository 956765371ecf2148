/**
 * What `leasehold/testing` (sim/testing.ts) exports, loaded by it once the harness's packages are known to
 * be installed. Each function takes plain values and checks them: bad input is an InputError naming the
 * field (or, for a scenario's own fields, a ScenarioFileError naming the field path).
 */
import { InputError } from '../src/queue/errors.ts';
import { readScenarioFile, ScenarioFileError, validateScenario } from './check/scenario-file.ts';
import { seedKey } from './random.ts';
import type { RunReport } from './report-types.ts';
import { runScenario as simulateScenario } from './run-scenario.ts';
import { scenarioJsonSchema } from './scenario-schema.ts';
import type { ScenarioSpec } from './scenario.ts';
import { DEFAULT_SCENARIO, findScenario, listScenarios, type CatalogueEntry } from './scenarios/registry.ts';
import { SIM_STORES, simStoreOf, storeSkipReason } from './store/pglite.ts';

export { DEFAULT_SCENARIO, findScenario, listScenarios, readScenarioFile, ScenarioFileError, scenarioJsonSchema, validateScenario, type CatalogueEntry };

/** One simulated run: which scenario, from which root seed, on which store. */
export interface ScenarioRunOptions {
  /** A catalogue scenario's name (see listScenarios), or a scenario (from validateScenario or readScenarioFile). */
  scenario: string | ScenarioSpec;
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
  if (options === null || typeof options !== 'object') throw new InputError('options', 'expected { scenario, seed, store? }');
  const scenario = scenarioOf(options.scenario);
  if (typeof options.seed !== 'string' && typeof options.seed !== 'number') throw new InputError('seed', `expected a string or a non-negative integer, got ${typeof options.seed}`);
  let seed: string;
  try {
    seed = seedKey(options.seed);
  } catch (error) {
    throw new InputError('seed', (error as Error).message);
  }
  const store = options.store === undefined ? 'sqlite' : simStoreOf(String(options.store));
  if (store === undefined) throw new InputError('store', `expected one of ${SIM_STORES.join(', ')}, got ${JSON.stringify(options.store)}`);
  const skip = storeSkipReason(scenario, store);
  if (skip !== undefined) throw new InputError('store', `scenario '${scenario.name}' cannot run on ${store}: ${skip}`);
  return simulateScenario({ scenario, seed, store });
}

function scenarioOf(scenario: unknown): ScenarioSpec {
  if (typeof scenario === 'string') {
    const found = findScenario(scenario);
    if (found === undefined) throw new InputError('scenario', `names no catalogue scenario: '${scenario}' (listScenarios() has ${listScenarios().map((entry) => entry.name).join(', ')})`);
    return found;
  }
  if (typeof scenario !== 'object' || scenario === null) throw new InputError('scenario', 'expected a catalogue name or a scenario (validateScenario)');
  // A scenario built in code is checked as a file would be: the run must not meet a malformed part half-way.
  return validateScenario(scenario);
}
