import type { CommandContext } from './command-context.ts';

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
