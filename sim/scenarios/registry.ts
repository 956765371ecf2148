import type { ScenarioSpec } from '../scenario.ts';
import { killTakeover } from './kill-takeover.ts';
import { mixed } from './mixed.ts';
import { poisonTask } from './poison-task.ts';
import { zombiePause } from './zombie-pause.ts';

/** The built-in catalogue, by name. */
const BUILT_IN: ReadonlyMap<string, ScenarioSpec> = new Map([mixed, killTakeover, zombiePause, poisonTask].map((scenario) => [scenario.name, scenario]));

export const DEFAULT_SCENARIO = 'mixed';

export function listScenarios(): { name: string; description: string; source: string }[] {
  return [...BUILT_IN.values()].map(({ name, description, source }) => ({ name, description, source }));
}

export function findScenario(name: string): ScenarioSpec | undefined {
  return BUILT_IN.get(name);
}
