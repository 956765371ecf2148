import type { FaultPlan } from './faults/plan.ts';
import type { Seed } from './random.ts';
import type { ScenarioSpec } from './scenario.ts';
import { World, type WorldStore } from './world.ts';
import type { SimAgent } from './actors/agent-module.ts';
import { probeInvalidConfigs } from './workloads/config-probe.ts';
import { scenarioForSeed } from './workloads/config-swarm.ts';

/**
 * The World of one seed of a scenario. A scenario with a configSwarm section has its queue and workers
 * drawn for the seed first (workloads/config-swarm.ts), so the World opens the queue with the drawn
 * configuration and `world.scenario`, which the checkers read, is the scenario the run really used;
 * the draw is the history's first entry, a `config-swarm` note, so a replay and a trace show it, and
 * `config-probe` notes follow: each rule of the drawn configuration broken in turn, and what
 * openWorkQueue said of it.
 */
export function worldFor(scenario: ScenarioSpec, seed: Seed, plan?: FaultPlan, store?: WorldStore, agent?: SimAgent): World {
  const { scenario: used, drawn } = scenarioForSeed(scenario, seed);
  const world = new World(used, seed, plan, store, agent);
  if (drawn !== undefined) {
    world.history.note('config-swarm', 'config-swarm', JSON.parse(JSON.stringify(drawn)));
    // Issue 35: each seed also breaks each rule of the drawn configuration in turn and sees it refused
    // (workloads/config-probe.ts); judged by checkers/config-probe.ts.
    for (const probe of probeInvalidConfigs(seed, used.queue)) world.history.note('config-probe', 'config-swarm', { ...probe });
  }
  return world;
}

