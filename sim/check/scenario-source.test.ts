import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { UsageError } from '../cli/usage-error.ts';
import { catalogueScenario, listScenarios } from '../scenarios/registry.ts';
import { catalogueSources, isScenarioFile, resolveScenarioArgument } from './scenario-source.ts';

const scratch = mkdtempSync(join(tmpdir(), 'leasehold-scenario-source-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The one line a UsageError prints, or a failure when resolving did not throw one. */
function refusal(argument: string): string {
  try {
    resolveScenarioArgument(argument, 'leasehold run --seed 1 --scenario');
  } catch (error) {
    if (error instanceof UsageError) return error.line();
    throw error;
  }
  throw new Error(`expected ${argument} to be refused`);
}

describe('resolving a --scenario value', () => {
  it.each([
    ['mixed', false],
    ['lease-expiry-uncertain', false],
    ['refund-desk.json', true],
    ['./refund-desk', true],
    ['scenarios/mixed.json', true],
    ['C:\\work\\desk.JSON', true],
    ['desk.yaml', true],
    ['desk.ts', true],
  ])('%s is a file: %s', (argument, file) => {
    expect(isScenarioFile(argument)).toBe(file);
  });

  it('gives a catalogue name its catalogue scenario, and a file its own name and path', () => {
    expect(resolveScenarioArgument('queue-full', 'x')).toEqual({ name: 'queue-full', spec: catalogueScenario('queue-full') });
    const path = join(scratch, 'desk.json');
    writeFileSync(path, JSON.stringify({ ...catalogueScenario('mixed'), name: 'desk' }));
    expect(resolveScenarioArgument(path, 'x')).toEqual({ name: 'desk', spec: { ...catalogueScenario('mixed'), name: 'desk' }, file: path });
    expect(catalogueSources().map((source) => source.name)).toEqual(listScenarios().map((entry) => entry.name));
  });

  it('refuses an unknown name with the catalogue and the nearest name', () => {
    const names = listScenarios().map((entry) => entry.name).join(', ');
    expect(refusal('queue-ful')).toBe(`leasehold: unknown scenario 'queue-ful' (catalogue: ${names}). Did you mean queue-full? Try: leasehold run --seed 1 --scenario queue-full`);
    expect(refusal('zzzzzz')).toBe(`leasehold: unknown scenario 'zzzzzz' (catalogue: ${names}). Try: leasehold run --seed 1 --scenario mixed`);
  });

  it('refuses a missing file, a file that is not JSON, and a bad file naming its field', () => {
    expect(refusal(join(scratch, 'nope.json'))).toBe(`leasehold: scenario file not found: ${join(scratch, 'nope.json')}. Try: leasehold run --seed 1 --scenario mixed (or leasehold scenarios for the catalogue)`);
    const yaml = join(scratch, 'desk.yaml');
    writeFileSync(yaml, 'name: desk\n');
    expect(refusal(yaml)).toBe(`leasehold: scenario files are JSON (a .json file), got ${yaml}. Try: leasehold run --seed 1 --scenario mixed`);
    const bad = join(scratch, 'bad.json');
    writeFileSync(bad, JSON.stringify({ ...catalogueScenario('mixed'), name: 'bad', workerz: 2 }));
    expect(refusal(bad)).toMatch(new RegExp(`^leasehold: bad scenario file ${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: workerz: unknown field .*\\. Try: leasehold run --seed 1 --scenario mixed$`));
  });
});
