import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/queue/config.ts';
import type { QueueConfig } from '../../src/queue/types.ts';
import { planJobs } from '../../sim/check/seeds.ts';
import { catalogueScenario } from '../../sim/scenarios/registry.ts';
import { scenarioForSeed } from '../../sim/workloads/config-swarm.ts';
import { catalogueConfigCoverage, catalogueQueues, configCoverage, renderConfigCoverage } from './config-seeds.ts';

const DRAW = { seeds: 40, root: 'config-seeds-test' };

describe('which scenario runs each config option with another value', () => {
  it('lists the scenarios whose effective config differs from the default, and each policy value', () => {
    const rows = configCoverage([
      { name: 'a', queue: { capacity: 4, reconciliation: 'auto' } },
      { name: 'b', queue: { tenantLimits: { t: 0 } } },
    ]);
    const row = (option: string) => rows.find((candidate) => candidate.option === option)!.runs.map((run) => run.scenario);
    expect(row('capacity')).toEqual(['a']);
    expect(row("reconciliation = 'auto'")).toEqual(['a']);
    expect(row("reconciliation = 'hold' (default)")).toEqual(['b']);
    expect(row('tenantLimits (a tenant paused: limit 0, A2)')).toEqual(['b']);
    expect(row('graceMs')).toEqual([]);
  });

  it('counts, for a scenario that draws its config per seed, how many of its seeds drew each value', () => {
    const rows = configCoverage([{ name: 's', perSeed: [{ capacity: 4 }, {}, { capacity: 7, reconciliation: 'auto' }, { capacity: 100 }] }]);
    const runs = (option: string) => rows.find((candidate) => candidate.option === option)!.runs;
    // capacity 100 is the default: two of the four seeds run another value.
    expect(runs('capacity')).toEqual([{ scenario: 's', value: '4, 7', seeds: { drew: 2, of: 4 } }]);
    expect(runs("reconciliation = 'auto'")).toEqual([{ scenario: 's', value: '"auto"', seeds: { drew: 1, of: 4 } }]);
    expect(runs("reconciliation = 'hold' (default)")).toEqual([{ scenario: 's', value: '"hold"', seeds: { drew: 3, of: 4 } }]);
    expect(runs('graceMs')).toEqual([]);
    expect(renderConfigCoverage(rows, { seeds: 4, root: 'r' }).join('\n')).toContain('| capacity | `100` | s: 2 of 4 seeds (`4, 7`) |');
  });

  it('has one row per QueueConfig option over the real catalogue', () => {
    const options = catalogueConfigCoverage(DRAW).map((row) => row.option);
    expect(options).toContain('holdTtlMs');
    expect(options).toContain('budgets');
    expect(options).toHaveLength(30);
  });

  it("draws config-swarm's configs as the check's seeds of it would, and counts them", () => {
    const swarm = catalogueQueues(DRAW).find((entry) => entry.name === 'config-swarm');
    expect(swarm !== undefined && 'perSeed' in swarm).toBe(true);
    const perSeed = (swarm as { perSeed: Partial<QueueConfig>[] }).perSeed;
    expect(perSeed).toHaveLength(DRAW.seeds);
    // The seeds are the check's own (planJobs), each drawn as worldFor draws it (scenarioForSeed).
    const spec = catalogueScenario('config-swarm');
    const seeds = planJobs(DRAW.root, ['config-swarm'], DRAW.seeds).map((job) => job.seed);
    expect(perSeed).toEqual(seeds.map((seed) => scenarioForSeed(spec, seed).scenario.queue));
    // Deterministic: the same root and count give the same table.
    expect(catalogueConfigCoverage(DRAW)).toEqual(catalogueConfigCoverage(DRAW));
    // Every count is over the seeds drawn, and matches the draws themselves.
    const rows = catalogueConfigCoverage(DRAW);
    const auto = rows.find((row) => row.option === "reconciliation = 'auto'")!.runs.find((run) => run.scenario === 'config-swarm');
    const drewAuto = perSeed.filter((queue) => resolveConfig(queue).reconciliation === 'auto').length;
    expect(drewAuto).toBeGreaterThan(0);
    expect(auto?.seeds).toEqual({ drew: drewAuto, of: DRAW.seeds });
    for (const row of rows) for (const run of row.runs) if (run.scenario === 'config-swarm') expect(run.seeds?.of).toBe(DRAW.seeds);
  });
});
