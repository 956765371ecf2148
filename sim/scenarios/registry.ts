import type { ScenarioSpec } from '../scenario.ts';
import { mixed } from './mixed.ts';

/** The built-in catalogue, by name. */
const BUILT_IN: ReadonlyMap<string, ScenarioSpec> = new Map([[mixed.name, mixed]]);

export const DEFAULT_SCENARIO = 'mixed';

export function listScenarios(): { name: string; description: string; source: string }[] {
  return [...BUILT_IN.values()].map(({ name, description, source }) => ({ name, description, source }));
}

export function findScenario(name: string): ScenarioSpec | undefined {
  return BUILT_IN.get(name);
}
