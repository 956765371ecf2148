import { describe, expect, it } from 'vitest';
import { scenarioJsonSchema } from '../../scenario-schema.ts';
import { listScenarios } from '../../scenarios/registry.ts';
import { runCli } from '../dispatch.ts';
import { EXIT_OK } from '../exit-codes.ts';
import { seedOf } from './scenarios.ts';

async function cli(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

describe('leasehold scenarios', () => {
  it('lists the whole catalogue, one line each: name, the seed it reproduces, what it does', async () => {
    const result = await cli(['scenarios']);
    expect(result.code).toBe(EXIT_OK);
    const lines = result.stdout.split('\n');
    const catalogue = listScenarios();
    expect(lines[0]).toMatch(/^mixed\s+seeds 000 and 002\s+three tenants/);
    const quote = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    for (const entry of catalogue) {
      expect(lines, entry.name).toContainEqual(expect.stringMatching(new RegExp(`^${quote(entry.name)} +${quote(seedOf(entry.source))} +${quote(entry.description)}$`)));
    }
    expect(result.stdout).toContain(`${catalogue.length} scenarios in scenarios/.`);
    const json = await cli(['scenarios', '--json']);
    expect(JSON.parse(json.stdout)).toEqual(catalogue);
  });

  it('prints the scenario file format as a JSON Schema with --schema', async () => {
    const result = await cli(['scenarios', '--schema']);
    expect(result.code).toBe(EXIT_OK);
    const schema = JSON.parse(result.stdout) as { properties: Record<string, unknown>; additionalProperties: boolean };
    expect(schema).toEqual(scenarioJsonSchema());
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['name', 'source', 'workload', 'faults', 'expect']));
    expect(schema.additionalProperties).toBe(false);
  });

  it('shortens a source to the seed it cites', () => {
    expect(seedOf('seed 002 (kill -9 any worker)')).toBe('seed 002');
    expect(seedOf('seeds 000 and 002')).toBe('seeds 000 and 002');
    expect(seedOf('seeds 000, 003 and 004: the tables')).toBe('seeds 000, 003 and 004');
    expect(seedOf('a user workload')).toBe('a user workload');
  });
});
