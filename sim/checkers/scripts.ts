import type { TaskScript } from '../actors/scripted-model.ts';
import { WRITE_TOOLS } from '../actors/tools.ts';
import type { WorldResult } from '../world.ts';
import { specEffectIdentity, specRequestKey } from './spec-rules.ts';

const WRITES = new Set<string>(WRITE_TOOLS);
const memo = new WeakMap<WorldResult, Map<number, TaskScript>>();

/**
 * The script each task carries in its input (what its scripted model decides), found through the
 * arrival that created the task: one task per (tenant, topic, version), so the key finds it.
 */
export function scriptsByTask(world: WorldResult): Map<number, TaskScript> {
  const cached = memo.get(world);
  if (cached !== undefined) return cached;
  const byKey = new Map<string, TaskScript>();
  for (const arrival of world.arrivals) {
    const script = (arrival.request.input as { script?: TaskScript } | null)?.script;
    const { tenant, topic, version } = arrival.request;
    if (script !== undefined) byKey.set(`${tenant}\u0000${topic}\u0000${version}`, script);
  }
  const scripts = new Map<number, TaskScript>();
  for (const task of world.final.tasks) {
    const script = byKey.get(`${task.tenant}\u0000${task.topic}\u0000${task.version}`);
    if (script !== undefined) scripts.set(task.id, script);
  }
  memo.set(world, scripts);
  return scripts;
}

/** R3: the request keys of the write effects a task's script intends, with their actions. */
/**
 * A7: the writes of steps whose calls form a graph (a call names dependsOn or a resource). Such a write
 * may rightly not run: its own call failed, or a call it depends on did, and the step records partial
 * success. A done run owes each of them at most one execution, not exactly one.
 */
export function optionalEffects(taskId: number, script: TaskScript): Set<string> {
  const keys = new Set<string>();
  for (const step of script.steps) {
    const graph = step.calls.some((call) => (call.dependsOn !== undefined && call.dependsOn.length > 0) || call.resource !== undefined);
    if (!graph) continue;
    for (const call of step.calls) if (WRITES.has(call.tool)) keys.add(specRequestKey(taskId, call.tool, call.args));
  }
  return keys;
}

export function intendedEffects(taskId: number, script: TaskScript): Map<string, string> {
  const keys = new Map<string, string>();
  for (const step of script.steps) {
    for (const call of step.calls) {
      if (WRITES.has(call.tool)) keys.set(specRequestKey(taskId, call.tool, call.args), call.tool);
    }
  }
  return keys;
}

/** One write call a task's script makes: the tool call the scripted model names it by, and the effect it intends. */
export interface IntendedWrite {
  /** As the scripted model names the call (sim/actors/scripted-model.ts): t<task>-s<step>-<id or c<index>>. */
  toolCallId: string;
  step: number;
  tool: string;
  args: unknown;
  /** R3's identity of the effect (action and canonical payload), not its key: calls with equal identity are one effect. */
  effect: string;
  /** A7: a write of a graph step, which may rightly not run. */
  optional: boolean;
}

/**
 * The write calls of a task's script, by tool call id. I8 judges the external system's executions
 * per intended effect through these: an execution names the tool call that made it, so the judgement
 * does not depend on how the worker spells the request key.
 */
export function intendedWrites(taskId: number, script: TaskScript): Map<string, IntendedWrite> {
  const writes = new Map<string, IntendedWrite>();
  for (const [step, { calls }] of script.steps.entries()) {
    const optional = calls.some((call) => (call.dependsOn !== undefined && call.dependsOn.length > 0) || call.resource !== undefined);
    for (const [index, call] of calls.entries()) {
      if (!WRITES.has(call.tool)) continue;
      const toolCallId = `t${taskId}-s${step}-${call.id ?? `c${index}`}`;
      writes.set(toolCallId, { toolCallId, step, tool: call.tool, args: call.args, effect: specEffectIdentity(taskId, call.tool, call.args), optional });
    }
  }
  return writes;
}

/** The tokens of the script's largest single model call: what "one model call" is worth for I7. */
export function largestCallTokens(script: TaskScript): number {
  let largest = script.finalTokens.inputTokens + script.finalTokens.outputTokens;
  for (const step of script.steps) largest = Math.max(largest, step.inputTokens + step.outputTokens);
  return largest;
}
