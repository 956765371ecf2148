import { describe, expect, it } from 'vitest';
import { planProblem } from '../../src/worker/tool-graph.ts';
import type { ToolCall } from '../../src/worker/types.ts';
import type { ScriptedCall } from '../actors/scripted-model.ts';
import { READ_ONLY_TOOLS, WRITE_TOOLS } from '../actors/tools.ts';
import { SeededRandom } from '../random.ts';
import type { ScriptDrawing } from '../scenario.ts';
import { drawScript } from './draw.ts';
import { validateScenario } from '../check/scenario-file.ts';
import { drawGraphCalls, GRAPH_DEFAULTS, type GraphDrawing } from './graph-draw.ts';

const GRAPHS: GraphDrawing = { probability: 1, calls: [3, 7], writeProbability: 0.5, resources: 3, ownLaneProbability: 0.1, cycleProbability: 0.1 };
const SEEDS = 2_000;

const draw = (seed: number, graphs: GraphDrawing = GRAPHS) => drawGraphCalls(new SeededRandom(`graph-${seed}`), graphs, `acme/topic-${seed}/v1`, seed % 4);
const index = (id: string) => Number(id.slice(1));
const isWrite = (call: ScriptedCall) => (WRITE_TOOLS as readonly string[]).includes(call.tool);

/** A layer for each call from its dependencies, or undefined when they form a cycle. */
function layersOf(calls: ScriptedCall[]): number[] | undefined {
  const layer = new Map<string, number>();
  for (let pass = 0; pass <= calls.length; pass++) {
    for (const call of calls) {
      const deps = call.dependsOn ?? [];
      if (deps.every((dependency) => layer.has(dependency))) layer.set(call.id!, deps.length === 0 ? 0 : Math.max(...deps.map((dependency) => layer.get(dependency)!)) + 1);
    }
  }
  return layer.size === calls.length ? calls.map((call) => layer.get(call.id!)!) : undefined;
}

/** The call Y of layer 0 that names a dependency: the cycle's way back (only a cyclic step has one). */
const backEdges = (calls: ScriptedCall[]) => calls.filter((call) => (call.dependsOn ?? []).some((dependency) => index(dependency) > index(call.id!)));

const asToolCalls = (calls: ScriptedCall[]): ToolCall[] => calls.map((call) => ({ id: call.id!, tool: call.tool, args: call.args, ...(call.dependsOn ? { dependsOn: call.dependsOn } : {}), ...(call.resource ? { resource: call.resource } : {}) }));

describe('drawGraphCalls', () => {
  const graphs = Array.from({ length: SEEDS }, (_, seed) => draw(seed));
  const cyclic = graphs.filter((calls) => backEdges(calls).length > 0);
  const acyclic = graphs.filter((calls) => backEdges(calls).length === 0);

  it('names the calls g0..g(n-1), n within calls, with reads and writes of the simulated tools', () => {
    for (const calls of graphs) {
      expect(calls.length).toBeGreaterThanOrEqual(3);
      expect(calls.length).toBeLessThanOrEqual(7);
      expect(calls.map((call) => call.id)).toEqual(calls.map((_, at) => `g${at}`));
      for (const call of calls) expect([...READ_ONLY_TOOLS, ...WRITE_TOOLS]).toContain(call.tool);
    }
    const all = graphs.flat();
    expect(all.some(isWrite)).toBe(true);
    expect(all.some((call) => !isWrite(call))).toBe(true);
  });

  it('keeps the layers: a call depends on 1..3 calls of earlier layers, one of them in the layer just before (fan-in)', () => {
    let fanIn = 0;
    for (const calls of acyclic) {
      const layers = layersOf(calls)!;
      expect(layers, JSON.stringify(calls)).toBeDefined();
      calls.forEach((call, at) => {
        const deps = (call.dependsOn ?? []).map(index);
        expect(new Set(deps).size).toBe(deps.length);
        for (const dependency of deps) expect(dependency).toBeLessThan(at);
        if (deps.length === 0) return;
        expect(deps.length).toBeLessThanOrEqual(3);
        // Its layer is one past its deepest dependency: one of them is in the layer just before.
        expect(layers[at]).toBe(Math.max(...deps.map((dependency) => layers[dependency]!)) + 1);
        if (deps.length > 1) fanIn++;
      });
      // Layers never go back: each next call in the same layer or the next.
      for (let at = 1; at < calls.length; at++) expect(layers[at]! - layers[at - 1]!).toBeLessThanOrEqual(1);
    }
    expect(fanIn).toBeGreaterThan(SEEDS / 10);
  });

  it('puts writes on shared and on distinct resources, now and then on none, and reads on none', () => {
    let shared = 0;
    let distinct = 0;
    let none = 0;
    for (const calls of graphs) {
      for (const call of calls) if (!isWrite(call)) expect(call.resource).toBeUndefined();
      const resources = calls.filter(isWrite).map((call) => call.resource);
      none += resources.filter((resource) => resource === undefined).length;
      const named = resources.filter((resource): resource is string => resource !== undefined);
      for (const resource of named) expect(['res-0', 'res-1', 'res-2']).toContain(resource);
      if (new Set(named).size < named.length) shared++;
      if (new Set(named).size > 1) distinct++;
    }
    expect(shared).toBeGreaterThan(SEEDS / 10);
    expect(distinct).toBeGreaterThan(SEEDS / 10);
    expect(none).toBeGreaterThan(0);
  });

  it('gives every call args of its own, so every write has a request key of its own', () => {
    for (const calls of graphs) {
      const args = calls.map((call) => JSON.stringify([call.tool, call.args]));
      expect(new Set(args).size).toBe(calls.length);
    }
    // Across the steps of a task too: the step is in the args.
    const label = 'acme/topic-1/v1';
    const steps = [0, 1, 2].flatMap((step) => drawGraphCalls(new SeededRandom('steps'), { ...GRAPHS, writeProbability: 1 }, label, step));
    expect(new Set(steps.map((call) => JSON.stringify(call.args))).size).toBe(steps.length);
  });

  it('draws a cycle at about cycleProbability, and a cyclic step is refused by the runtime while the others are not', () => {
    expect(cyclic.length / SEEDS).toBeGreaterThan(0.07);
    expect(cyclic.length / SEEDS).toBeLessThan(0.13);
    for (const calls of cyclic) {
      expect(layersOf(calls)).toBeUndefined();
      expect(planProblem(asToolCalls(calls))).toMatch(/cycle/);
      // The way back goes into a call of layer 0 (which otherwise depends on nothing).
      const [back] = backEdges(calls);
      expect(back!.dependsOn).toHaveLength(1);
    }
    for (const calls of acyclic) expect(planProblem(asToolCalls(calls))).toBeUndefined();
    expect(Array.from({ length: 200 }, (_, seed) => draw(seed, { ...GRAPHS, cycleProbability: 0 })).every((calls) => layersOf(calls) !== undefined)).toBe(true);
    expect(Array.from({ length: 200 }, (_, seed) => draw(seed, { ...GRAPHS, cycleProbability: 1, calls: [2, 2] })).every((calls) => layersOf(calls) === undefined)).toBe(true);
  });

  it('draws the same graph from the same seed', () => {
    for (let seed = 0; seed < 50; seed++) expect(draw(seed)).toEqual(draw(seed));
  });
});

describe('drawScript with graphs', () => {
  const spec: ScriptDrawing = { writeProbability: 0.8, steps: [1, 4], callsPerStep: [1, 3], tokensPerCall: [200, 2_000] };

  // That a script drawn without graphs costs exactly the draws it did before they existed is pinned by
  // the catalogue's trace hashes (sim/scenarios/registry.test.ts).
  it('without graphs draws plain steps only', () => {
    for (let seed = 0; seed < 50; seed++) {
      const script = drawScript(new SeededRandom(`script-${seed}`), spec, 'acme/topic-1/v1');
      for (const step of script.steps) for (const call of step.calls) expect(call.id ?? call.dependsOn ?? call.resource).toBeUndefined();
    }
  });

  it('with graphs makes graph steps, the same ones for the same seed', () => {
    const withGraphs = { ...spec, graphs: { ...GRAPHS, probability: 0.8 } };
    const scripts = Array.from({ length: 100 }, (_, seed) => drawScript(new SeededRandom(`script-${seed}`), withGraphs, `acme/topic-${seed}/v1`));
    const steps = scripts.flatMap((script) => script.steps);
    const graphSteps = steps.filter((step) => step.calls.some((call) => call.id !== undefined));
    expect(graphSteps.length / steps.length).toBeGreaterThan(0.6);
    expect(graphSteps.length).toBeLessThan(steps.length);
    expect(drawScript(new SeededRandom('script-7'), withGraphs, 'acme/topic-7/v1')).toEqual(scripts[7]);
  });
});

describe('model.graphs in a scenario file', () => {
  const file = (graphs: unknown) => ({ name: 'g', workload: [{ kind: 'topics', count: 2 }], model: { graphs } });

  it('resolves to workload.scripts.graphs with the defaults filled in, and reads back in the explicit form', () => {
    const spec = validateScenario(file({ probability: 0.9, cycleProbability: 0.1 }));
    expect(spec.workload.scripts.graphs).toEqual({ ...GRAPH_DEFAULTS, probability: 0.9, cycleProbability: 0.1 });
    expect(validateScenario(JSON.parse(JSON.stringify(spec))).workload.scripts.graphs).toEqual(spec.workload.scripts.graphs);
    expect(validateScenario({ name: 'g', workload: [{ kind: 'topics', count: 2 }] }).workload.scripts.graphs).toBeUndefined();
  });

  it('refuses a graph of fewer than 2 calls and an unknown field', () => {
    expect(() => validateScenario(file({ calls: [1, 3] }))).toThrow(/calls/);
    expect(() => validateScenario(file({ cycles: 0.1 }))).toThrow(/cycles/);
  });
});
