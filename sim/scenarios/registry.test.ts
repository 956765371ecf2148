import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runScenario } from '../run-scenario.ts';
import { scenarioJsonSchema } from '../scenario-schema.ts';
import { UsageError } from '../cli/usage-error.ts';
import { Catalogue, CATALOGUE_DIR, catalogueScenario, DEFAULT_SCENARIO, findScenario, listScenarios } from './registry.ts';

const scratch = mkdtempSync(join(tmpdir(), 'leasehold-catalogue-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('the catalogue (scenarios/*.json)', () => {
  it('validates every file, the default first, each citing the seed it reproduces', () => {
    const entries = listScenarios();
    expect(entries[0]?.name).toBe(DEFAULT_SCENARIO);
    expect(entries.map((entry) => entry.name)).toEqual(expect.arrayContaining(['mixed', 'kill-takeover', 'zombie-pause', 'poison-task']));
    for (const entry of entries) {
      expect(entry.source, entry.name).toMatch(/seeds? \d{3}/);
      expect(entry.description, entry.name).not.toBe('');
      expect(findScenario(entry.name)?.name).toBe(entry.name);
    }
    expect(findScenario('schema')).toBeUndefined();
    expect(findScenario('no-such-scenario')).toBeUndefined();
    expect(() => catalogueScenario('no-such-scenario')).toThrow(/no scenario 'no-such-scenario' in the catalogue \(mixed, /);
  });

  // Computed with `leasehold run --scenario NAME --seed S --json` from the TypeScript definitions,
  // before they became JSON: the JSON files hold exactly the same scenarios.
  it.each([
    ['mixed', '1', 'a49a8fb7e637d368b0d459aeb2f71becd789fc120df55756804a1ea8ed6e5d5b'],
    ['mixed', '2', '8d9855e43605f0fad654e434257a4929a066a7c77c0a2a2c31656262c253a9ac'],
    ['mixed', '7', '773204f220e8db8efaaa43346c70b3367e38dc3db6b652b9c13ad16efacf4881'],
    ['kill-takeover', '1', 'ad798f2d7323c1f8537a5bbd1ca67b5e9c2d3a77833484ee2aae521ecde4afb9'],
    ['zombie-pause', '1', '2c1ea597ddd4cf46401ca9941d78ad33c5282da2187245c15e15456eab615934'],
    ['zombie-pause', '2', 'abf76c98cf84132761ab34ddd45faab85e7bd8adf8b2851826328a9146a04d78'],
    ['poison-task', '1', '0f01e6550f6a30d0e8db01ee3c583a7daa05fafeab211df33a6fc555a7133ed3'],
    ['poison-task', '3', 'b73dee0f317e3eb841efff5bbe11e1e2f93f695475e574f3aaaec82b9c84db33'],
  ])('%s seed %s keeps the trace hash it had as TypeScript', async (scenario, seed, traceHash) => {
    const report = await runScenario({ scenario, seed });
    expect(report.verdict).toBe('pass');
    expect(report.traceHash).toBe(traceHash);
  });

  it('ships the JSON Schema of the format as scenarios/schema.json, up to date', () => {
    const shipped = JSON.parse(readFileSync(join(CATALOGUE_DIR, 'schema.json'), 'utf8'));
    expect(shipped, 'scenarios/schema.json is out of date; regenerate it: npx tsx sim/cli/main.ts scenarios --schema > scenarios/schema.json').toEqual(scenarioJsonSchema());
  });
});

describe('a catalogue directory', () => {
  const scenario = (name: string) => ({ ...structuredClone(catalogueScenario('mixed')), name });
  const directory = (files: Record<string, unknown>) => {
    const path = mkdtempSync(join(scratch, 'dir-'));
    for (const [file, content] of Object.entries(files)) writeFileSync(join(path, file), typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  };

  it('picks up every JSON file but schema.json, in a stable order with the default first', () => {
    const path = directory({ 'zeta.json': scenario('zeta'), 'alpha.json': scenario('alpha'), 'mixed.json': scenario('mixed'), 'schema.json': scenarioJsonSchema(), 'README.md': '# not a scenario' });
    const catalogue = new Catalogue(path, 'cat');
    expect(catalogue.names()).toEqual(['mixed', 'alpha', 'zeta']);
    expect(catalogue.all().map((spec) => spec.name)).toEqual(['mixed', 'alpha', 'zeta']);
  });

  it('refuses a bad file with a usage error naming the file, the field path and what was expected', () => {
    const bad = scenario('bad');
    bad.workers.count = 0;
    const catalogue = new Catalogue(directory({ 'mixed.json': scenario('mixed'), 'bad.json': bad }), 'cat');
    // Naming a sound scenario does not read the others.
    expect(catalogue.find('mixed')?.name).toBe('mixed');
    expect(() => catalogue.all()).toThrow(UsageError);
    expect(() => catalogue.all()).toThrow('bad scenario file in the catalogue: cat/bad.json: workers.count: expected an integer >= 1, got 0');
  });

  it('wants the name to match the file, a source and a description, and the default scenario', () => {
    const misnamed = new Catalogue(directory({ 'mixed.json': scenario('mixed'), 'other.json': scenario('different') }), 'cat');
    expect(() => misnamed.find('other')).toThrow('cat/other.json: name: must match the file name in the catalogue: expected "other", got "different"');
    const unsourced = new Catalogue(directory({ 'mixed.json': { ...scenario('mixed'), source: '' } }), 'cat');
    expect(() => unsourced.find('mixed')).toThrow(/cat\/mixed\.json: source: is required in the catalogue/);
    const noDefault = new Catalogue(directory({ 'alpha.json': scenario('alpha') }), 'cat');
    expect(() => noDefault.names()).toThrow(/has no mixed\.json/);
  });
});
