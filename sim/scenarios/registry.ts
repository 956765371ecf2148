import { readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readScenarioFile, ScenarioFileError } from '../check/scenario-file.ts';
import { UsageError } from '../cli/usage-error.ts';
import type { ScenarioSpec } from '../scenario.ts';

/**
 * The built-in catalogue: every scenarios/*.json of the repository (but schema.json, the format's
 * JSON Schema), each validated by sim/scenario-schema.ts. A file dropped there is in the catalogue
 * with no code change. Read once, synchronously, on first use, from the repository root (found from
 * this module, not the working directory).
 */
export const CATALOGUE_DIR = fileURLToPath(new URL('../../scenarios/', import.meta.url));

export const DEFAULT_SCENARIO = 'mixed';

/** Files of the catalogue directory that are not scenarios. */
const NOT_SCENARIOS = new Set(['schema.json']);

export interface CatalogueEntry {
  name: string;
  description: string;
  /** The seed article the scenario reproduces. */
  source: string;
}

let catalogue: ReadonlyMap<string, ScenarioSpec> | undefined;

function loaded(): ReadonlyMap<string, ScenarioSpec> {
  catalogue ??= loadCatalogueDirectory(CATALOGUE_DIR, 'scenarios');
  return catalogue;
}

/**
 * Reads and validates every scenario file of a directory, in a stable order: the default scenario
 * first, then by name. A bad file is a UsageError (exit 64) naming it, its field and what was expected.
 * `shownAs` is how the directory is named in errors.
 */
export function loadCatalogueDirectory(directory: string, shownAs: string = directory): ReadonlyMap<string, ScenarioSpec> {
  const files = readdirSync(directory)
    .filter((file) => file.endsWith('.json') && !NOT_SCENARIOS.has(file))
    .sort();
  const scenarios = new Map<string, ScenarioSpec>();
  for (const file of files) {
    const shown = `${shownAs}/${file}`;
    try {
      const spec = readScenarioFile(join(directory, file), shown);
      const expectedName = basename(file, '.json');
      if (spec.name !== expectedName) throw new ScenarioFileError('name', `must match the file name in the catalogue: expected ${JSON.stringify(expectedName)}, got ${JSON.stringify(spec.name)}`, shown);
      for (const field of ['description', 'source'] as const) {
        if (spec[field].trim() === '') throw new ScenarioFileError(field, `is required in the catalogue (${field === 'source' ? 'the seed article it reproduces' : 'one line for leasehold scenarios'})`, shown);
      }
      scenarios.set(spec.name, spec);
    } catch (error) {
      if (!(error instanceof ScenarioFileError)) throw error;
      throw new UsageError(`bad scenario file in the catalogue: ${error.message}`, `fix or move ${shown}, then: leasehold scenarios`);
    }
  }
  const first = scenarios.get(DEFAULT_SCENARIO);
  if (first === undefined) throw new UsageError(`the catalogue ${shownAs}/ has no ${DEFAULT_SCENARIO}.json, the default scenario`, `git checkout ${shownAs}/${DEFAULT_SCENARIO}.json`);
  return new Map([[DEFAULT_SCENARIO, first], ...[...scenarios].filter(([name]) => name !== DEFAULT_SCENARIO)]);
}

/** The catalogue in its listed order: the default first, then by name. */
export function listScenarios(): CatalogueEntry[] {
  return [...loaded().values()].map(({ name, description, source }) => ({ name, description, source }));
}

export function findScenario(name: string): ScenarioSpec | undefined {
  return loaded().get(name);
}

/** A catalogue scenario that must exist (tests and tools that name one): throws naming the catalogue otherwise. */
export function catalogueScenario(name: string): ScenarioSpec {
  const spec = findScenario(name);
  if (spec === undefined) throw new RangeError(`no scenario '${name}' in the catalogue (${[...loaded().keys()].join(', ')})`);
  return spec;
}
