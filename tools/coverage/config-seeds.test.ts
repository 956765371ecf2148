import { describe, expect, it } from 'vitest';
import { catalogueConfigCoverage, configCoverage } from './config-seeds.ts';

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

  it('has one row per QueueConfig option over the real catalogue', () => {
    const options = catalogueConfigCoverage().map((row) => row.option);
    expect(options).toContain('holdTtlMs');
    expect(options).toHaveLength(24);
  });
});
