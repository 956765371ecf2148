import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/queue/config.ts';
import { expectClean, expectViolation } from '../checkers/__test-helpers__/expect-checker.ts';
import { realRun } from '../checkers/__test-helpers__/real-run.ts';
import { configRefused } from '../checkers/config-probe.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import { SeededRandom } from '../random.ts';
import { worldFor } from '../seed-world.ts';
import { BREAKAGES, probeInvalidConfigs, type ConfigProbe } from './config-probe.ts';

describe('invalid configurations drawn by the configuration swarm (issue 35)', () => {
  it('breaks each rule of a valid configuration so that resolveConfig refuses it naming the option', () => {
    const random = new SeededRandom('probe-test');
    for (const breakage of BREAKAGES) {
      for (let i = 0; i < 8; i++) {
        const broken = breakage.broken(resolveConfig({}), random);
        let named: string | undefined;
        try {
          resolveConfig(broken as never);
        } catch (error) {
          named = (error as { field?: string }).field;
        }
        expect(named, breakage.rule).toBeDefined();
        if (breakage.field !== '(the option drawn)') expect(named, breakage.rule).toBe(breakage.field);
      }
    }
  });

  it('probes every rule in every seed, each refused by openWorkQueue naming the option, with nothing created', () => {
    const drawn = new Set<string>();
    for (let seed = 0; seed < 30; seed++) {
      const probes = probeInvalidConfigs(seed, { leaseMs: 15_000, heartbeatMs: 5_000, globalLimit: 3, perTenantLimit: 2 });
      expect(probes.map((probe) => probe.rule)).toEqual(BREAKAGES.map((breakage) => breakage.rule));
      for (const probe of probes) {
        expect(probe).toMatchObject({ outcome: 'refused', tables: 0 });
        expect(probe.named).toBe(probe.expected);
        drawn.add(probe.expected);
      }
    }
    // The positive-integer rule draws its option per seed: over 30 seeds, several options.
    expect(drawn.size).toBeGreaterThan(BREAKAGES.length + 3);
  });

  it('notes the probes in the history of a configuration-swarm seed, and only there', () => {
    const notes = worldFor(catalogueScenario('config-swarm'), 1).history.entries().filter((entry) => entry.type === 'note' && entry.kind === 'config-probe');
    expect(notes).toHaveLength(BREAKAGES.length);
    expect(worldFor(catalogueScenario('mixed'), 1).history.entries().some((entry) => entry.type === 'note' && entry.kind === 'config-probe')).toBe(false);
  });
});

describe('the config checker', () => {
  const probe: ConfigProbe = { rule: 'Q9: a lease holds at least three heartbeats', expected: 'leaseMs', outcome: 'refused', named: 'leaseMs', message: 'invalid config field', tables: 0 };
  async function withProbe(data: ConfigProbe) {
    const run = realRun();
    run.note('config-probe', 'config-swarm', { ...data });
    return await run.build();
  }

  it('passes a refusal naming the option with nothing created', async () => {
    expectClean(configRefused, await withProbe(probe));
  });

  it('fails a configuration that was accepted (a validation rule lost)', async () => {
    expectViolation(configRefused, await withProbe({ ...probe, outcome: 'accepted', tables: 12 }), /config refused: a configuration breaking "Q9: a lease holds at least three heartbeats" was accepted/);
    expectViolation(configRefused, await withProbe({ ...probe, outcome: 'accepted', tables: 12 }), /config nothing-created: .* left 12 table\(s\)/);
  });

  it('fails a refusal that is not a ConfigError, or names another option', async () => {
    expectViolation(configRefused, await withProbe({ ...probe, outcome: 'error', named: 'TypeError' }), /refused with TypeError, not a ConfigError/);
    expectViolation(configRefused, await withProbe({ ...probe, named: 'heartbeatMs' }), /refused naming 'heartbeatMs', expected 'leaseMs'/);
  });
});
