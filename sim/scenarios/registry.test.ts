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

  // First computed from the TypeScript definitions before they became JSON (the files hold exactly the
  // same scenarios), then recomputed once when the world's clients began reading their tenant's list
  // (I13), which adds history entries, and for mixed seed 7 when mixed's swarm gained stale writes
  // (seed 7 draws them). A change here means the simulation changed: say why in the commit.
  it.each([
    ['mixed', '1', '31ea7b3310828f0541a3eb49c56a54aeb4c7c61223dcdcb193e5a6809ecfc427'],
    ['mixed', '2', '32cb9ea2fb1e17d0af0054be4998e2af4c34eeb6fe622f94bd8e63182c6435e9'],
    ['mixed', '7', '7ade7af5fd2bfd13ea3cfd20299d93cbeb5a5d3922795a67d6ac82e8856cb8dd'],
    ['kill-takeover', '1', '036f419beb781e49b4114dc97cc909748b8892ed906efc857e92f6ff421b8688'],
    ['zombie-pause', '1', '91600f8b947aa18aba9cb23a601cb801007c8c3050dec379e94c3544f8eb62e8'],
    ['zombie-pause', '2', 'b262d68ba8b805c50cb2763ee041d5d95c6ef87a4ff8629b855bc66c2ecbe89b'],
    ['poison-task', '1', '3c678c28b458f8432f8b44c9171def402227fa122f146ca882944701315f97ba'],
    ['poison-task', '3', 'ff40d8e3453d5f4d6f808ce3ca7bfe19f74ffc051bb47deb886d917ca264bd95'],
  ])('%s seed %s keeps its pinned trace hash', async (scenario, seed, traceHash) => {
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
