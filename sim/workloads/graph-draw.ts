import { z } from 'zod';
import type { ScriptedCall } from '../actors/scripted-model.ts';
import { READ_ONLY_TOOLS, WRITE_TOOLS } from '../actors/tools.ts';
import type { SeededRandom } from '../random.ts';
import { positive, probability, range, strict, withDefaults } from '../schema-kit.ts';

/**
 * A7 (seed 003, section 3): drawn tool-call graphs. With a model's `graphs` option a drawn script's
 * step is, with `probability`, a graph step instead of plain reads: `calls` calls g0..g(n-1) in
 * topological layers (each next call in the same layer as the one before or in the next, at random),
 * reads and writes mixed; every call past layer 0 depends on 1 to 3 calls of earlier layers, one of
 * them in the layer just before (fan-in); a write names a resource res-0..res-(resources-1), so some
 * writes share a lane and some do not, or now and then none (its tool's own lane). With
 * `cycleProbability` the step gets a cycle (a call of the last layer made a dependency of the layer-0
 * call its chain of dependencies goes back to), which the worker runtime refuses: the run fails
 * invalid_plan (src/worker/tool-graph.ts planProblem).
 */
export interface GraphDrawing {
  /** Probability that a drawn step is a graph step. */
  probability: number;
  /** Calls of a graph step, [min, max]. */
  calls: [number, number];
  /** Probability that a graph call is a write (confirm_order, issue_refund) rather than a read. */
  writeProbability: number;
  /** Resources the writes of a step draw theirs from (res-0, res-1, ...). */
  resources: number;
  /** Probability that a write names no resource (the runtime then runs it in its tool's own lane). */
  ownLaneProbability: number;
  /** Probability that a graph step has a cycle (the run fails invalid_plan). */
  cycleProbability: number;
}

export const graphFields = {
  probability: probability().meta({ description: 'Probability that a drawn step is a tool-call graph instead of plain reads (callsPerStep).' }),
  calls: range(2).meta({ description: 'Calls g0..g(n-1) of a graph step, [min, max], at least 2.' }),
  writeProbability: probability().meta({ description: 'Probability that a graph call is a write (confirm_order, issue_refund, each with a request key of its own) rather than a read.' }),
  resources: positive().meta({ description: 'Writes draw their resource from res-0..res-(resources-1): some share a lane, some do not.' }),
  ownLaneProbability: probability().meta({ description: "Probability that a write names no resource, so the runtime runs it in its tool's own lane." }),
  cycleProbability: probability().meta({ description: 'Probability that a graph step has a dependency cycle: the worker runtime refuses the plan and the run fails invalid_plan (not retried).' }),
};

export const GRAPH_DEFAULTS = { probability: 0.5, calls: [3, 6] as [number, number], writeProbability: 0.4, resources: 2, ownLaneProbability: 0.1, cycleProbability: 0 };

const GRAPHS_DESCRIPTION = 'A7: drawn scripts whose steps are tool-call graphs (topological layers, fan-in, writes on shared and distinct resources, now and then a cycle). Absent: no step is (and nothing is drawn for it).';

/** The explicit form's `workload.graphs`: every field stated. */
export const graphDrawingSchema = strict(graphFields, GRAPHS_DESCRIPTION);

/** The parts form's `model.graphs`: a file states what differs from GRAPH_DEFAULTS. */
export const graphDrawingPartSchema = strict(withDefaults(graphFields, GRAPH_DEFAULTS), GRAPHS_DESCRIPTION);

export const GRAPH_DRAWING_MATCHES_TYPE: z.output<typeof graphDrawingSchema> extends GraphDrawing ? (GraphDrawing extends z.output<typeof graphDrawingSchema> ? true : false) : false = true;

/**
 * One graph step's calls, drawn from `random`. `label` and `step` make each read's args and each
 * write's args (hence its request key, src/worker/fingerprint.ts) unique within the task.
 */
export function drawGraphCalls(random: SeededRandom, graphs: GraphDrawing, label: string, step: number): ScriptedCall[] {
  const count = random.int(graphs.calls[0], graphs.calls[1]);
  const cyclic = random.chance(graphs.cycleProbability);
  const layers: number[] = [0];
  for (let index = 1; index < count; index++) layers.push(layers[index - 1]! + (random.chance(0.5) ? 1 : 0));
  // A cycle needs a call past layer 0: the last call moves to layer 1 if every call sits in layer 0.
  if (cyclic && layers[count - 1] === 0) layers[count - 1] = 1;
  const calls: ScriptedCall[] = [];
  for (let index = 0; index < count; index++) {
    const id = `g${index}`;
    const layer = layers[index]!;
    const write = random.chance(graphs.writeProbability);
    const call: ScriptedCall = write
      ? { id, tool: random.pick(WRITE_TOOLS), args: { order: label, call: `s${step}/${id}` } }
      : { id, tool: random.pick(READ_ONLY_TOOLS), args: { ref: `${label}/s${step}/${id}` } };
    if (layer > 0) {
      const before = layers.flatMap((other, at) => (other === layer - 1 ? [at] : []));
      const earlier = layers.flatMap((other, at) => (other < layer ? [at] : []));
      const first = random.pick(before);
      const more = random.shuffle(earlier.filter((at) => at !== first)).slice(0, random.int(0, Math.min(2, earlier.length - 1)));
      call.dependsOn = [first, ...more].sort((a, b) => a - b).map((at) => `g${at}`);
    }
    if (write && !random.chance(graphs.ownLaneProbability)) call.resource = `res-${random.int(0, graphs.resources - 1)}`;
    calls.push(call);
  }
  if (cyclic) {
    const last = layers[count - 1]!;
    const candidates = layers.flatMap((layer, at) => (layer === last ? [at] : []));
    const from = random.pick(candidates);
    // Back down the chain, one dependency in the layer just before at each step, to a call of layer 0.
    let at = from;
    while (layers[at]! > 0) at = Number(calls[at]!.dependsOn!.find((dependency) => layers[Number(dependency.slice(1))] === layers[at]! - 1)!.slice(1));
    calls[at]!.dependsOn = [...(calls[at]!.dependsOn ?? []), `g${from}`];
  }
  return calls;
}
