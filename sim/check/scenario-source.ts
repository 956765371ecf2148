import type { ScenarioSpec } from '../scenario.ts';
import { DEFAULT_SCENARIO, findScenario, listScenarios } from '../scenarios/registry.ts';
import { closestMatch } from '../cli/suggest.ts';
import { looksLikeFile } from '../cli/scenario-names.ts';
import { UsageError } from '../cli/usage-error.ts';
import { readScenarioFile, ScenarioFileError } from './scenario-file.ts';

/** A scenario as a command resolved it: from the catalogue by name, or from a JSON file. */
export interface ScenarioSource {
  /** The scenario's name: the catalogue name, or the `name` field of the file. */
  name: string;
  spec: ScenarioSpec;
  /** The file it was read from, or undefined for a catalogue scenario. */
  file?: string;
}

/** A --scenario value ending in .json is a scenario file; anything else names a catalogue entry. */
export function isScenarioFile(argument: string): boolean {
  return /\.json$/i.test(argument);
}

/**
 * Resolves one --scenario value, or throws a UsageError (exit 64) that says what was wrong: an unknown
 * name (with the catalogue and the nearest name), a missing file, or the first bad field of a file.
 * `tryPrefix` is the command line a hint completes with a scenario name.
 */
export function resolveScenarioArgument(argument: string, tryPrefix: string): ScenarioSource {
  if (isScenarioFile(argument)) {
    try {
      const spec = readScenarioFile(argument);
      return { name: spec.name, spec, file: argument };
    } catch (error) {
      if (!(error instanceof ScenarioFileError)) throw error;
      // The error names the file, the field path and what was expected.
      throw new UsageError(`bad scenario file ${error.message}`, `${tryPrefix} ${DEFAULT_SCENARIO}`);
    }
  }
  if (looksLikeFile(argument)) throw new UsageError(`scenario files are JSON (a .json file), got ${argument}`, `${tryPrefix} ${DEFAULT_SCENARIO}`);
  const spec = findScenario(argument);
  if (spec !== undefined) return { name: spec.name, spec };
  const names = listScenarios().map((entry) => entry.name);
  const guess = closestMatch(argument, names);
  throw new UsageError(`unknown scenario '${argument}' (catalogue: ${names.join(', ')})`, `${tryPrefix} ${guess ?? DEFAULT_SCENARIO}`, guess);
}

/** The whole catalogue, in its listed order. */
export function catalogueSources(): ScenarioSource[] {
  return listScenarios().map(({ name }) => ({ name, spec: findScenario(name) as ScenarioSpec }));
}
