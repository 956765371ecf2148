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

  it.each([80, 120])('fits a terminal of %i columns: the seed cut, the description wrapped under its column and whole', async (columns) => {
    const saved = process.env.COLUMNS;
    process.env.COLUMNS = String(columns);
    let result: Awaited<ReturnType<typeof cli>>;
    try {
      result = await cli(['scenarios']);
    } finally {
      if (saved === undefined) delete process.env.COLUMNS;
      else process.env.COLUMNS = saved;
    }
    expect(result.code).toBe(EXIT_OK);
    const lines = result.stdout.split('\n');
    for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(columns);
    const catalogue = listScenarios();
    const nameWidth = Math.max(...catalogue.map((entry) => entry.name.length));
    const start = lines[0]!.indexOf('three tenants');
    expect(start).toBeGreaterThan(nameWidth);
    for (const entry of catalogue) {
      const at = lines.findIndex((line) => line.startsWith(`${entry.name.padEnd(nameWidth)}  `));
      expect(at, entry.name).toBeGreaterThanOrEqual(0);
      const seed = lines[at]!.slice(nameWidth + 2, start).trim();
      expect(seedOf(entry.source).startsWith(seed.replace(/…$/, '')), entry.name).toBe(true);
      const continued = [lines[at]!.slice(start)];
      for (let next = at + 1; next < lines.length && lines[next]!.startsWith(' '.repeat(start)); next++) continued.push(lines[next]!.slice(start));
      expect(continued.join(' '), entry.name).toBe(entry.description);
    }
    expect(lines.some((line) => line.includes('…'))).toBe(true);
    expect(lines.slice(lines.lastIndexOf('') + 1).join(' ')).toBe(`${catalogue.length} scenarios in scenarios/. Run one: leasehold run --scenario mixed --seed 42`);
  });

  it('shortens a source to the seed it cites', () => {
    expect(seedOf('seed 002 (kill -9 any worker)')).toBe('seed 002');
    expect(seedOf('seeds 000 and 002')).toBe('seeds 000 and 002');
    expect(seedOf('seeds 000, 003 and 004: the tables')).toBe('seeds 000, 003 and 004');
    expect(seedOf('a user workload')).toBe('a user workload');
  });
});
