import { existsSync } from 'node:fs';
import type { ScenarioSpec } from '../scenario.ts';
import { catalogueScenario, DEFAULT_SCENARIO, findScenario, listScenarios } from '../scenarios/registry.ts';
import { closestMatch } from '../cli/suggest.ts';
import { UsageError } from '../cli/usage-error.ts';
import { readScenarioFile, ScenarioFileError } from './scenario-file.ts';

/**
 * The one way a --scenario value becomes a scenario, for every command that takes one (check, replay,
 * run, report; start runs check). A value is either a catalogue name (sim/scenarios/registry.ts) or a
 * scenario file (read by scenario-file.ts); whatever is wrong with it is a UsageError (S9: exit 64),
 * raised before any seed runs, with a hint that completes `tryPrefix` (the command line so far).
 */

/** A scenario as a command resolved it: from the catalogue by name, or from a JSON file. */
export interface ScenarioSource {
  /** The scenario's name: the catalogue name, or the `name` field of the file. */
  name: string;
  spec: ScenarioSpec;
  /** The file it was read from, or undefined for a catalogue scenario. */
  file?: string;
}

/**
 * The one rule for "is this a file": a value with a directory separator, or with the extension of a
 * format a scenario might be written in, names a file; anything else names a catalogue entry. Only
 * .json files are read; the other extensions are recognised so that the error says so.
 */
export function isScenarioFile(argument: string): boolean {
  return /[\\/]/.test(argument) || /\.(json|ya?ml|toml|js|ts)$/i.test(argument);
}

export function resolveScenarioArgument(argument: string, tryPrefix: string): ScenarioSource {
  return isScenarioFile(argument) ? fileSource(argument, tryPrefix) : catalogueSource(argument, tryPrefix);
}

/** The whole catalogue, in its listed order: what check runs without --scenario. */
export function catalogueSources(): ScenarioSource[] {
  return listScenarios().map(({ name }) => ({ name, spec: catalogueScenario(name) }));
}

function catalogueSource(name: string, tryPrefix: string): ScenarioSource {
  const spec = findScenario(name);
  if (spec !== undefined) return { name, spec };
  const names = listScenarios().map((entry) => entry.name);
  const guess = closestMatch(name, names);
  throw new UsageError(`unknown scenario '${name}' (catalogue: ${names.join(', ')})`, `${tryPrefix} ${guess ?? DEFAULT_SCENARIO}`, guess);
}

function fileSource(file: string, tryPrefix: string): ScenarioSource {
  const fix = `${tryPrefix} ${DEFAULT_SCENARIO}`;
  if (!/\.json$/i.test(file)) throw new UsageError(`scenario files are JSON (a .json file), got ${file}`, fix);
  if (!existsSync(file)) throw new UsageError(`scenario file not found: ${file}`, `${fix} (or leasehold scenarios for the catalogue)`);
  try {
    const spec = readScenarioFile(file);
    return { name: spec.name, spec, file };
  } catch (error) {
    if (!(error instanceof ScenarioFileError)) throw error;
    // The error names the file, the field path and what was expected.
    throw new UsageError(`bad scenario file ${error.message}`, fix);
  }
}
