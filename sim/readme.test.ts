import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { validateScenario } from './check/scenario-file.ts';
import { runScenario } from './run-scenario.ts';
import { listScenarios } from './scenarios/registry.ts';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('README', () => {
  it('shows a scenario file that validates and passes', async () => {
    const block = /```json\n(\{\n {2}"\$schema"[\s\S]*?)```/.exec(README)?.[1];
    expect(block, 'the README has a scenario file example').toBeDefined();
    const spec = validateScenario(JSON.parse(block!));
    const report = await runScenario({ scenario: spec, seed: '1' });
    expect(report.violations).toEqual([]);
  });

  it('lists every catalogue scenario', () => {
    for (const { name } of listScenarios()) expect(README).toContain(`| \`${name}\` |`);
  });
});
