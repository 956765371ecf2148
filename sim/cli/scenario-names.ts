import { existsSync } from 'node:fs';
import type { CommandContext } from './command-context.ts';
import { closestMatch } from './suggest.ts';
import { UsageError } from './usage-error.ts';

export interface ScenarioListing {
  name: string;
  description: string;
}

/** The catalogue from sim/scenarios/registry.ts, or undefined while that module is not in the build. */
export async function loadCatalogue(context: CommandContext): Promise<ScenarioListing[] | undefined> {
  const registry = await context.importSimModule('scenarios/registry.ts');
  if (registry === undefined) return undefined;
  if (typeof registry.listScenarios !== 'function') throw new Error('sim/scenarios/registry.ts does not export listScenarios()');
  return (registry.listScenarios as () => ScenarioListing[])();
}

/** A scenario argument is a file when it looks like a path; otherwise it names a catalogue entry. */
export function looksLikeFile(scenario: string): boolean {
  return /[\\/]/.test(scenario) || /\.(json|ya?ml|toml|js|ts)$/i.test(scenario);
}

/**
 * S9: an unknown scenario name or a missing scenario file is bad usage (64), caught before any run
 * starts. Without a catalogue in the build, names cannot be checked here and are left to the runner.
 */
export function checkScenarioArgument(scenario: string, catalogue: readonly ScenarioListing[] | undefined, tryPrefix: string): void {
  if (looksLikeFile(scenario)) {
    if (!existsSync(scenario)) throw new UsageError(`scenario file not found: ${scenario}`, `${tryPrefix} mixed (or leasehold scenarios for the catalogue)`);
    return;
  }
  if (catalogue === undefined) return;
  const names = catalogue.map((entry) => entry.name);
  if (names.includes(scenario)) return;
  const guess = closestMatch(scenario, names);
  const shown = names.length > 8 ? `${names.slice(0, 8).join(', ')}, ...` : names.join(', ');
  throw new UsageError(`unknown scenario '${scenario}' (catalogue: ${shown})`, `${tryPrefix} ${guess ?? names[0] ?? 'mixed'}`, guess);
}
