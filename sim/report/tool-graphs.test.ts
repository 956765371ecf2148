import { beforeAll, describe, expect, it } from 'vitest';
import { simulate } from '../run-scenario.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import type { WorldResult } from '../world.ts';
import { toolGraphMarkdown, toolGraphRuns, toolGraphSvg, type GraphRunView } from './tool-graphs.ts';

describe('the report\'s tool-call graphs (A7)', () => {
  let world: WorldResult;
  let runs: GraphRunView[];
  beforeAll(async () => {
    world = (await simulate({ scenario: catalogueScenario('tool-graph'), seed: '1' })).world;
    runs = toolGraphRuns(world);
  });

  it("lays seed 003's T1..T4 out in layers: T1 and T2 at once, T3 after both, T4 after T3", () => {
    const full = runs.find((run) => run.calls.every((call) => call.outcome === 'ok'));
    expect(full, 'a run of the graph in which every call answered ok').toBeDefined();
    const call = (name: string) => full!.calls.find((c) => c.name === name)!;
    expect(['T1', 'T2', 'T3', 'T4'].map((name) => call(name).layer)).toEqual([0, 0, 1, 2]);
    expect(call('T1').fromMs).toBe(0);
    expect(call('T2').fromMs).toBe(0);
    expect(call('T3').fromMs).toBeGreaterThanOrEqual(Math.max(call('T1').toMs!, call('T2').toMs!));
    expect(call('T4').fromMs).toBeGreaterThanOrEqual(call('T3').toMs!);
    expect(call('T3').lane).toBe('ticket');
    expect(call('T1').lane).toBeUndefined();
  });

  it('shows the refused plan and the skipped dependents of a failure', () => {
    expect(runs.find((run) => run.label === 'X1')).toMatchObject({ refused: expect.stringMatching(/cycle/) });
    expect(runs.some((run) => run.calls.some((call) => call.outcome === 'skipped'))).toBe(true);
  });

  it('keeps at most MAX_GRAPH_RUNS runs, ordered by task then generation', () => {
    expect(runs.length).toBeGreaterThan(0);
    expect(runs.length).toBeLessThanOrEqual(12);
    const order = runs.map((run) => [run.taskId, run.generation]);
    expect(order).toEqual([...order].sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!));
  });

  it('renders a table per run in Markdown and a chart per run in SVG', () => {
    const markdown = toolGraphMarkdown(runs);
    expect(markdown).toContain('| layer | call | tool | lane | depends on | called | answered | outcome |');
    expect(markdown).toMatch(/\| 1 \| T3 \| confirm_order \| ticket \| T1, T2 \|/);
    expect(markdown).toMatch(/X1 \(task \d+\), generation 1, step 0\*\*: plan refused/);
    const svg = toolGraphSvg(runs.find((run) => run.refused === undefined)!);
    expect(svg).toMatch(/^<svg [^>]*role="img"/);
    expect(svg).toContain('<rect');
    expect(svg).toContain('L0 T1 lookup_order');
    expect(toolGraphMarkdown([])).toBe('');
  });
});
