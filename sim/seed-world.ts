import type { FaultPlan } from './faults/plan.ts';
import type { Seed } from './random.ts';
import type { ScenarioSpec } from './scenario.ts';
import { World, type WorldStore } from './world.ts';
import { scenarioForSeed } from './workloads/config-swarm.ts';

/**
 * The World of one seed of a scenario. A scenario with a configSwarm section has its queue and workers
 * drawn for the seed first (workloads/config-swarm.ts), so the World opens the queue with the drawn
 * configuration and `world.scenario`, which the checkers read, is the scenario the run really used;
 * the draw is the history's first entry, a `config-swarm` note, so a replay and a trace show it.
 */
export function worldFor(scenario: ScenarioSpec, seed: Seed, plan?: FaultPlan, store?: WorldStore): World {
  const { scenario: used, drawn } = scenarioForSeed(scenario, seed);
  const world = new World(used, seed, plan, store);
  if (drawn !== undefined) world.history.note('config-swarm', 'config-swarm', JSON.parse(JSON.stringify(drawn)));
  return world;
}

