import type { SimAgent } from '../actors/agent-module.ts';
import { catalogueScenario, DEFAULT_SCENARIO } from '../scenarios/registry.ts';
import type { ScenarioSource } from './scenario-source.ts';

/**
 * T2: what a check of an agent module runs when no scenario is named (`--scenario`, `check({ scenarios })`):
 * the module's own `scenario` export, validated when the module loaded (actors/agent-module.ts), else the
 * catalogue's default scenario. A named scenario always wins over the module's.
 */
export function agentSources(agent: SimAgent): ScenarioSource[] {
  if (agent.scenario !== undefined) return [{ name: agent.scenario.name, spec: agent.scenario }];
  return [{ name: DEFAULT_SCENARIO, spec: catalogueScenario(DEFAULT_SCENARIO) }];
}
