import { describe, expect, it } from 'vitest';
import { InputError } from '../src/queue/errors.ts';
import { HARNESS_PACKAGES, requireHarnessPackages } from './harness-packages.ts';
import { runScenario as simulate } from './run-scenario.ts';
import { catalogueScenario } from './scenarios/registry.ts';
import { DEFAULT_SCENARIO, findScenario, listScenarios, readScenarioFile, runScenario, ScenarioFileError, scenarioJsonSchema, validateScenario } from './testing.ts';
import { PACKAGE_ROOT } from './package-root.ts';
import { join } from 'node:path';

describe('leasehold/testing', () => {
  it('runs a catalogue scenario by name and seed, as the simulator does (the same trace hash)', async () => {
    const report = await runScenario({ scenario: 'mixed', seed: 7 });
    expect(report).toMatchObject({ scenario: 'mixed', seed: '7', verdict: 'pass', violations: [] });
    const direct = await simulate({ scenario: catalogueScenario('mixed'), seed: '7' });
    expect(report.traceHash).toBe(direct.traceHash);
    // A scenario object (here the catalogue's own, checked as a file is) runs the same.
    const spec = findScenario('mixed');
    expect(spec).toBeDefined();
    expect((await runScenario({ scenario: spec!, seed: '7', store: 'sqlite' })).traceHash).toBe(report.traceHash);
  });

  it('refuses bad options with an InputError naming the field, before anything runs', async () => {
    const refused = async (options: unknown) => {
      const error = await runScenario(options as Parameters<typeof runScenario>[0]).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(InputError);
      return (error as InputError).field;
    };
    expect(await refused(null)).toBe('options');
    expect(await refused({ scenario: 'no-such-scenario', seed: 1 })).toBe('scenario');
    expect(await refused({ scenario: 42, seed: 1 })).toBe('scenario');
    expect(await refused({ scenario: 'mixed', seed: -1 })).toBe('seed');
    expect(await refused({ scenario: 'mixed', seed: '' })).toBe('seed');
    expect(await refused({ scenario: 'mixed', seed: { n: 1 } })).toBe('seed');
    expect(await refused({ scenario: 'mixed', seed: 1, store: 'mysql' })).toBe('store');
    expect(await refused({ scenario: 'io-errors', seed: 1, store: 'pglite' })).toBe('store');
    await expect(runScenario({ scenario: 'no-such-scenario', seed: 1 })).rejects.toThrow(/names no catalogue scenario: 'no-such-scenario' \(listScenarios\(\) has mixed, /);
    // A scenario object that is not in the format is the scenario file error, naming the field.
    await expect(runScenario({ scenario: { name: 'x' } as never, seed: 1 })).rejects.toBeInstanceOf(ScenarioFileError);
  });

  it('lists, finds, reads and validates scenarios', () => {
    const entries = listScenarios();
    expect(entries[0]).toMatchObject({ name: DEFAULT_SCENARIO });
    expect(entries.map((entry) => entry.name)).toContain('kill-takeover');
    expect(findScenario('no-such-scenario')).toBeUndefined();
    const file = readScenarioFile(join(PACKAGE_ROOT, 'scenarios', 'mixed.json'));
    expect(file).toEqual(findScenario('mixed'));
    expect(validateScenario(JSON.parse(JSON.stringify(file)))).toEqual(file);
    expect(() => validateScenario({ name: 'x' }, 'mine.json')).toThrow(ScenarioFileError);
    expect(() => validateScenario({ name: 'x' }, 'mine.json')).toThrow(/^mine\.json: /);
    expect(scenarioJsonSchema()).toMatchObject({ type: 'object' });
  });

  it("names every harness package that is missing, in one error (what importing it without them throws)", () => {
    expect(HARNESS_PACKAGES).toEqual(['zod', 'seedrandom']);
    const nothing = (name: string): string => {
      throw Object.assign(new Error(`Cannot find module '${name}'`), { code: 'MODULE_NOT_FOUND' });
    };
    expect(() => requireHarnessPackages('leasehold/testing', nothing)).toThrow('leasehold: leasehold/testing needs the "zod" and "seedrandom" packages: npm install zod seedrandom');
    expect(() => requireHarnessPackages('leasehold/testing')).not.toThrow();
  });
});
