/**
 * SPEC P6: the simulator on the PostgreSQL store's own SQL, in-process on PGlite (sim/store/pglite.ts).
 * One PGlite database per process, reused by every world (emptied per seed), so these tests share it.
 */
import { describe, expect, it } from 'vitest';
import { simulate } from '../run-scenario.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import { applicablePlan, inapplicableFaults, storeSkipReason, simStoreOf } from './pglite.ts';
import { NO_RATES, type FaultPlan } from '../faults/plan.ts';

describe('the simulator on pglite (P6)', () => {
  it('runs a seed of mixed on pglite twice with equal trace hashes, a pass, and the same hash after another seed ran in between', async () => {
    const scenario = catalogueScenario('mixed');
    const first = await simulate({ scenario, seed: '3', store: 'pglite' });
    const between = await simulate({ scenario, seed: '4', store: 'pglite' });
    const second = await simulate({ scenario, seed: '3', store: 'pglite' });
    expect(first.report.violations).toEqual([]);
    expect(first.report.verdict).toBe('pass');
    expect(second.report.traceHash).toBe(first.report.traceHash);
    expect(between.report.traceHash).not.toBe(first.report.traceHash);
    expect(first.world.store).toBe('pglite');
    // The run is the PostgreSQL store's: the history says so, and which drawn faults it left out.
    const note = first.world.history.entries().find((entry) => entry.type === 'note' && entry.kind === 'store');
    expect(note).toBeDefined();
    // The drawn plan kept nothing that acts beneath SQLite.
    expect(first.world.plan.timed.filter((fault) => ['busy', 'power-loss', 'disk-full', 'io-error'].includes(fault.kind))).toEqual([]);
  });

  it('runs a seed of tool-graph on pglite twice with equal trace hashes and a pass', async () => {
    const scenario = catalogueScenario('tool-graph');
    const first = await simulate({ scenario, seed: '1', store: 'pglite' });
    const second = await simulate({ scenario, seed: '1', store: 'pglite' });
    expect(first.report.violations).toEqual([]);
    expect(first.report.verdict).toBe('pass');
    expect(second.report.traceHash).toBe(first.report.traceHash);
  });

  it('restarts the scheduler on pglite: the reopened store keeps what was committed', async () => {
    const scenario = catalogueScenario('scheduler-restart');
    const { world, report } = await simulate({ scenario, seed: '1', store: 'pglite' });
    expect(world.history.entries().filter((entry) => entry.type === 'note' && entry.kind === 'restart').length).toBeGreaterThanOrEqual(5);
    expect(report.violations).toEqual([]);
    expect(report.verdict).toBe('pass');
  });

  it('skips a scenario whose explicit plan needs a fault beneath SQLite, and leaves drawn ones out of the plan', () => {
    expect(storeSkipReason(catalogueScenario('io-errors'), 'pglite')).toMatch(/needs io-error.*does not apply to pglite/);
    expect(storeSkipReason(catalogueScenario('io-errors'), 'sqlite')).toBeUndefined();
    expect(storeSkipReason(catalogueScenario('mixed'), 'pglite')).toBeUndefined();
    const plan: FaultPlan = {
      timed: [
        { kind: 'busy', atMs: 1_000 } as FaultPlan['timed'][number],
        { kind: 'restart', atMs: 2_000, downMs: 500 } as FaultPlan['timed'][number],
        { kind: 'busy', atMs: 3_000 } as FaultPlan['timed'][number],
      ],
      points: [],
      rates: { ...NO_RATES },
    };
    expect(inapplicableFaults(plan, 'pglite')).toEqual({ busy: 2 });
    expect(inapplicableFaults(plan, 'sqlite')).toEqual({});
    expect(applicablePlan(plan, 'pglite').timed.map((fault) => fault.kind)).toEqual(['restart']);
    expect(applicablePlan(plan, 'sqlite')).toBe(plan);
    expect(simStoreOf('foo')).toBeUndefined();
  });
});
