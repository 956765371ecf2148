import type { ToolCall } from '../../src/worker/types.ts';
import type { Waiter } from '../../src/ports.ts';
import type { Model, ModelDecision, ModelRequest } from '../../src/worker/types.ts';
import type { SeededRandom } from '../random.ts';

/** The script a simulated task carries in its input: what the model decides at each step. */
/** A7: a scripted call may be named (`id`) so others of its step depend on it, and may name the resource it writes. */
export interface ScriptedCall {
  tool: string;
  args: unknown;
  id?: string;
  dependsOn?: string[];
  resource?: string;
}

export interface TaskScript {
  steps: { calls: ScriptedCall[]; inputTokens: number; outputTokens: number }[];
  answer: { status: string; summary: string };
  finalTokens: { inputTokens: number; outputTokens: number };
  /** Poison: the worker that runs this task dies at its first model call, every time (R6). */
  poison?: boolean;
}

export function scriptOf(input: unknown): TaskScript {
  const script = (input as { script?: TaskScript } | null)?.script;
  if (script === undefined) throw new Error('simulated task has no script in its input');
  return script;
}

/**
 * A scripted model: at step k it returns the k-th step's tool calls, after the last step the final
 * answer. Decisions and usage depend only on (task, step), so a takeover that asks again gets the same
 * decision and the same bill; latency comes from the seed. Tool-call ids are stable per (task, step, i).
 */
export class ScriptedModel implements Model {
  constructor(
    private readonly waiter: Waiter,
    private readonly latency: SeededRandom,
    private readonly latencyMs: readonly [number, number],
  ) {}

  async decide(request: ModelRequest): Promise<ModelDecision> {
    await this.waiter.sleep(this.latency.int(this.latencyMs[0], this.latencyMs[1]));
    return decisionFor(request.taskId, scriptOf(request.input), request.step);
  }
}

export function decisionFor(taskId: number, script: TaskScript, step: number): ModelDecision {
  const planned = script.steps[step];
  if (planned === undefined) return { toolCalls: [], final: script.answer, usage: script.finalTokens };
  return {
    toolCalls: planned.calls.map((call, index) => scriptedCall(taskId, step, index, call)),
    usage: { inputTokens: planned.inputTokens, outputTokens: planned.outputTokens },
  };
}

/** Usage of the fault-free run of a script: what I7 compares a faulty run's charge with. */
export function faultFreeUsage(script: TaskScript): { inputTokens: number; outputTokens: number; modelCalls: number } {
  const steps = script.steps.reduce(
    (sum, step) => ({ inputTokens: sum.inputTokens + step.inputTokens, outputTokens: sum.outputTokens + step.outputTokens }),
    { inputTokens: 0, outputTokens: 0 },
  );
  return {
    inputTokens: steps.inputTokens + script.finalTokens.inputTokens,
    outputTokens: steps.outputTokens + script.finalTokens.outputTokens,
    modelCalls: script.steps.length + 1,
  };
}

/** The run's call: ids stable within the run (t<task>-s<step>-c<index>, or -<name> for a named call); a graph's fields only when scripted. */
function scriptedCall(taskId: number, step: number, index: number, call: ScriptedCall): ToolCall {
  const idOf = (name: string) => `t${taskId}-s${step}-${name}`;
  const made: ToolCall = { id: idOf(call.id ?? `c${index}`), tool: call.tool, args: call.args };
  if (call.dependsOn !== undefined) made.dependsOn = call.dependsOn.map(idOf);
  if (call.resource !== undefined) made.resource = call.resource;
  return made;
}
