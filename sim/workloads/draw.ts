import type { EnqueueRequest, Tier } from '../../src/queue/types.ts';
import type { TaskScript } from '../actors/scripted-model.ts';
import { READ_ONLY_TOOLS, WRITE_TOOLS } from '../actors/tools.ts';
import type { SeededRandom } from '../random.ts';
import { drawGraphCalls, type GraphDrawing } from './graph-draw.ts';

/**
 * How the model draws each task's script: a scenario file's `model` section without its latency, and
 * the runner's `workload.scripts`. Every part that draws tasks draws their scripts from this.
 */
export interface ScriptDrawing {
  writeProbability: number;
  steps: [number, number];
  callsPerStep: [number, number];
  tokensPerCall: [number, number];
  /** Probability that a task is poison: its worker dies at its first model call, every time (R6). Absent: nothing is drawn for it. */
  poisonProbability?: number | undefined;
  /** A7: drawn steps as tool-call graphs (graph-draw.ts); absent: every drawn step is plain reads and nothing is drawn for graphs. */
  graphs?: GraphDrawing | undefined;
  /** A stub model (seed 002): every task without a script of its own runs this one; the ranges above are then not used. */
  script?: TaskScript | undefined;
}

/** What a drawn request takes from the part that draws it: the range of its priority, the tiers it picks from, and how its script is drawn. */
export interface RequestDrawing {
  priorities: readonly [number, number];
  tiers: readonly Tier[];
  scripts: ScriptDrawing;
}

/** One enqueue the client sends during a run. */
export interface Arrival {
  atMs: number;
  request: EnqueueRequest;
  /** The name expectations and reports use for the task: an explicit task's label, or its topic. */
  label?: string;
  /** Q14: the deadline, in ms from the start of the run; the world adds its start time. */
  deadlineMs?: number;
  /** Q13: once accepted, the client cancels the task at this time (ms from the start of the run). */
  cancelAtMs?: number;
}

/** A drawn request: its priority and tier from the part's ranges, its script drawn (or the stub model's). */
export function drawRequest(random: SeededRandom, drawing: RequestDrawing, tenant: string, topic: string, version: number): EnqueueRequest {
  const { scripts } = drawing;
  return {
    tenant,
    topic,
    version,
    priority: random.int(drawing.priorities[0], drawing.priorities[1]),
    tier: random.pick(drawing.tiers),
    input: { script: scripts.script === undefined ? drawScript(random, scripts, `${tenant}/${topic}/v${version}`) : structuredClone(scripts.script) },
  };
}

export function drawScript(random: SeededRandom, spec: ScriptDrawing, label: string): TaskScript {
  const stepCount = random.int(spec.steps[0], spec.steps[1]);
  const writeStep = random.chance(spec.writeProbability) ? random.int(0, stepCount - 1) : -1;
  const tokens = () => random.int(spec.tokensPerCall[0], spec.tokensPerCall[1]);
  const steps: TaskScript['steps'] = [];
  for (let step = 0; step < stepCount; step++) {
    const calls: TaskScript['steps'][number]['calls'] = [];
    // A7: a graph step instead of plain reads; without spec.graphs nothing is drawn for it (every seed's draws as before).
    if (spec.graphs !== undefined && random.chance(spec.graphs.probability)) calls.push(...drawGraphCalls(random, spec.graphs, label, step));
    else {
      for (let n = random.int(spec.callsPerStep[0], spec.callsPerStep[1]); n > 0; n--) {
        calls.push({ tool: random.pick(READ_ONLY_TOOLS), args: { ref: `${label}/s${step}`, n } });
      }
    }
    if (step === writeStep) {
      const items = [{ id: 'item-b', qty: random.int(1, 3) }, { id: 'item-a', qty: 1 }];
      calls.push({ tool: random.pick(WRITE_TOOLS), args: { order: label, items } });
    }
    steps.push({ calls, inputTokens: tokens(), outputTokens: Math.ceil(tokens() / 4) });
  }
  const script: TaskScript = {
    steps,
    answer: { status: 'needs_human', summary: `investigated ${label}` },
    finalTokens: { inputTokens: tokens(), outputTokens: Math.ceil(tokens() / 4) },
  };
  if (spec.poisonProbability !== undefined && random.chance(spec.poisonProbability)) script.poison = true;
  return script;
}
