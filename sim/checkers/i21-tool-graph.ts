import { READ_ONLY_TOOLS } from '../actors/tools.ts';
import type { ScriptedCall } from '../actors/scripted-model.ts';
import type { HistoryEntry } from '../history.ts';
import type { WorldResult } from '../world.ts';
import { scriptsByTask } from './scripts.ts';
import { SPEC_NON_RETRYABLE_ERROR_CLASSES, specRequestKey } from './spec-rules.ts';
import { analyse, ViolationList } from './timeline.ts';
import type { Checker } from './types.ts';

/**
 * I21 (SPEC A7, seed 003 section 3): the tool graph is respected. The graph's truth is the task's
 * script (what its scripted model decides at each step), restated here from the script, never taken
 * from src/worker/tool-graph.ts; for a team's agent module (T2) it is what the module's model decided,
 * as the harness noted it when the decision left the model (`model-decision`, sim/actors/agent-world.ts),
 * before the worker ran any of it, with the call ids the model gave and the module tools' readOnly flags: each call's id (`t<task>-s<step>-<id>`, or
 * `-c<index>` for an unnamed call), its dependencies, whether it writes, its lane (resource, or
 * `tool:<tool>` for a write that names none), and whether the plan is refused (a repeated id, an
 * unknown dependency, a call depending on itself, an empty resource, a cycle).
 *
 * The history records each call of a graph step as a `tool` operation (sim/actors/sim-worker.ts): an
 * invoke when the tool is called, an ok or a fail (its error class) when it answers; a call that never
 * answers stays open. A write the effect ledger already held is answered without calling the tool.
 *
 * Rules:
 * - early-start: per (task, generation), a call starts only after each of its dependencies succeeded in
 *   that generation (a `tool` ok of it before the start), or, for a write, after the ledger recorded it
 *   (a recordEffect ok, or its effect_recorded event committed, before the start: the ledger answers it);
 * - dependent-ran: a call never starts in a generation in which a call it depends on, directly or not,
 *   failed with a non-retryable class (it is skipped), unless the chain passes through a write the ledger
 *   answered without a call in that generation (on a re-run the recorded write stands: R2);
 * - overlap: two writes of one lane in one (task, generation) made by one incarnation are never in
 *   flight at once (an open call is in flight to the end of the history). Two incarnations share a
 *   generation only when a power loss rolled back the first one's claim: that one is dead, its open call
 *   beyond any worker's coordination, and the claim that follows is another run of the same generation;
 * - cycle-ran: a refused plan calls nothing, in any generation (no `tool` invoke, no tool_result event,
 *   no provider request of its writes); a task that reached it and ended failed ended invalid_plan, and
 *   no invalid_plan failure is retried; a task whose script holds a refused step never ends done, and a
 *   task whose reached steps are all valid never ends invalid_plan;
 * - unrecorded: every tool_result event of a graph call in generation g has a `tool` ok of that call in
 *   g, or its write was answered by the ledger (recorded before the event): no call escapes the record;
 * - outcome: in the task's last checkpoint, each graph step's results agree with the graph: one result
 *   per call; ok only if every dependency is ok (or, for a write the ledger recorded in an earlier
 *   generation than the checkpoint's, whatever they did: a re-run settles it first, R2); skipped for
 *   dependency_failed only if a dependency
 *   failed or was skipped; failed only with a non-retryable error class.
 */

const READS = new Set<string>(READ_ONLY_TOOLS);
const NON_RETRYABLE = new Set<string>(SPEC_NON_RETRYABLE_ERROR_CLASSES);

export interface GraphCallSpec {
  callId: string;
  /** The script's name of the call (`id`, or `c<index>`). */
  name: string;
  tool: string;
  readOnly: boolean;
  /** A write's lane: its resource, or `tool:<tool>`. */
  lane?: string;
  /** Call ids of the dependencies (the same step's). */
  dependsOn: string[];
  /** A write's request key (R3), computed by the judge. */
  requestKey?: string;
}

export interface GraphStepSpec {
  taskId: number;
  step: number;
  calls: GraphCallSpec[];
  byId: Map<string, GraphCallSpec>;
  /** Why the plan is refused, or undefined for a valid plan. */
  refused?: string;
}

export interface GraphRunCall {
  callId: string;
  step: number;
  name: string;
  lane?: string;
  readOnly: boolean;
  invokeIndex: number;
  endIndex?: number;
  /** The incarnation that made the call (two share a generation when a power loss rolled back the first's claim). */
  actor: string;
  outcome: 'ok' | 'failed' | 'open';
  /** A failure's error class. */
  reason?: string;
}

export interface GraphRun {
  taskId: number;
  generation: number;
  calls: GraphRunCall[];
}

/** Whether a step's calls form a graph (SPEC A7): some call names a non-empty dependsOn or a resource. */
export function isGraphStep(calls: readonly ScriptedCall[]): boolean {
  return calls.some((call) => (call.dependsOn !== undefined && call.dependsOn.length > 0) || call.resource !== undefined);
}

/** The plan's problem, computed here: a repeated id, an unknown or self dependency, an empty resource, a cycle (DFS). */
export function planRefusal(calls: readonly GraphCallSpec[]): string | undefined {
  const ids = new Set<string>();
  for (const call of calls) {
    if (ids.has(call.callId)) return `call id ${call.callId} appears twice`;
    ids.add(call.callId);
  }
  for (const call of calls) {
    for (const dependency of call.dependsOn) {
      if (dependency === call.callId) return `call ${call.callId} depends on itself`;
      if (!ids.has(dependency)) return `call ${call.callId} depends on unknown call ${dependency}`;
    }
    if (call.lane === '') return `call ${call.callId} names an empty resource`;
  }
  const deps = new Map(calls.map((call) => [call.callId, call.dependsOn]));
  const colour = new Map<string, 'grey' | 'black'>();
  const visit = (id: string, path: string[]): string[] | undefined => {
    const seen = colour.get(id);
    if (seen === 'black') return undefined;
    if (seen === 'grey') return [...path.slice(path.indexOf(id)), id];
    colour.set(id, 'grey');
    for (const next of deps.get(id) ?? []) {
      const cycle = visit(next, [...path, id]);
      if (cycle !== undefined) return cycle;
    }
    colour.set(id, 'black');
    return undefined;
  };
  for (const call of calls) {
    const cycle = visit(call.callId, []);
    if (cycle !== undefined) return `a cycle ${cycle.join(' -> ')}`;
  }
  return undefined;
}

/**
 * One call of a step as planned: the script's (a built-in task's; reads are the built-in read tools) or
 * the agent model's decision as the harness noted it (T2: the call's own id, and the module tool's
 * readOnly flag).
 */
export interface PlannedCall extends ScriptedCall {
  readOnly: boolean;
}

/** Per task, its steps' planned calls, by step index (a step an agent's model never decided is absent). */
type TaskPlan = { steps: (readonly PlannedCall[] | undefined)[]; ids: 'scripted' | 'verbatim' };

function stepSpec(taskId: number, step: number, calls: readonly PlannedCall[], ids: TaskPlan['ids']): GraphStepSpec {
  // The scripted model names a call t<task>-s<step>-<id>; an agent's model names its calls itself.
  const idOf = (name: string) => (ids === 'verbatim' ? name : `t${taskId}-s${step}-${name}`);
  const specs = calls.map((call, index): GraphCallSpec => {
    const name = call.id ?? `c${index}`;
    const readOnly = call.readOnly;
    const spec: GraphCallSpec = { callId: idOf(name), name, tool: call.tool, readOnly, dependsOn: (call.dependsOn ?? []).map(idOf) };
    if (!readOnly) {
      spec.lane = call.resource ?? `tool:${call.tool}`;
      spec.requestKey = specRequestKey(taskId, call.tool, call.args);
    } else if (call.resource === '') spec.lane = '';
    return spec;
  });
  const result: GraphStepSpec = { taskId, step, calls: specs, byId: new Map(specs.map((call) => [call.callId, call])) };
  const refused = planRefusal(specs);
  if (refused !== undefined) result.refused = refused;
  return result;
}

const stepsMemo = new WeakMap<WorldResult, Map<number, GraphStepSpec[]>>();

/** Per task, the graph steps of its script (plain steps are not graphs and are left out). */
export function graphSteps(world: WorldResult): Map<number, GraphStepSpec[]> {
  const cached = stepsMemo.get(world);
  if (cached !== undefined) return cached;
  const out = new Map<number, GraphStepSpec[]>();
  // Judged against the graph each task's plan names: its script, or for a team's agent module (T2) the
  // decisions its model made, as the harness noted them before the worker ran any of it.
  for (const [taskId, plan] of taskPlans(world)) {
    const steps = graphStepsOf(taskId, plan);
    if (steps.length > 0) out.set(taskId, steps);
  }
  stepsMemo.set(world, out);
  return out;
}

function graphStepsOf(taskId: number, plan: TaskPlan): GraphStepSpec[] {
  const steps: GraphStepSpec[] = [];
  plan.steps.forEach((calls, index) => {
    if (calls !== undefined && isGraphStep(calls)) steps.push(stepSpec(taskId, index, calls, plan.ids));
  });
  return steps;
}

const plansMemo = new WeakMap<WorldResult, Map<number, TaskPlan>>();

/**
 * Per task, what it planned to call at each step. A built-in task: its script (reads are the built-in
 * read tools). An agent's task: the model's decisions (`model-decision` notes, sim/actors/agent-world.ts).
 * A model asked again for a step it had decided (a takeover before checkpoint A) may decide otherwise:
 * a step whose decisions name different graphs (ids, tools, dependencies, resources, reads) has no one
 * truth, and is left out; every step whose decisions agree is judged.
 */
function taskPlans(world: WorldResult): Map<number, TaskPlan> {
  const cached = plansMemo.get(world);
  if (cached !== undefined) return cached;
  const out = new Map<number, TaskPlan>();
  for (const [taskId, script] of scriptsByTask(world)) {
    out.set(taskId, { ids: 'scripted', steps: script.steps.map((step) => step.calls.map((call) => ({ ...call, readOnly: READS.has(call.tool) }))) });
  }
  if (world.agent !== undefined) {
    const decided = new Map<number, Map<number, { calls: PlannedCall[]; shape: string } | 'differs'>>();
    for (const entry of world.history.entries()) {
      if (entry.type !== 'note' || entry.kind !== 'model-decision' || entry.taskId === undefined) continue;
      const { step, calls } = entry.data as unknown as { step: number; calls: PlannedCall[] };
      const shape = JSON.stringify(calls.map(({ id, tool, readOnly, dependsOn, resource }) => [id, tool, readOnly, dependsOn ?? [], resource ?? null]));
      let steps = decided.get(entry.taskId);
      if (steps === undefined) decided.set(entry.taskId, (steps = new Map()));
      const before = steps.get(step);
      if (before === undefined) steps.set(step, { calls, shape });
      else if (before !== 'differs' && before.shape !== shape) steps.set(step, 'differs');
    }
    for (const [taskId, steps] of decided) {
      const list: (PlannedCall[] | undefined)[] = [];
      for (const [step, decision] of steps) if (decision !== 'differs') list[step] = decision.calls;
      out.set(taskId, { ids: 'verbatim', steps: list });
    }
  }
  plansMemo.set(world, out);
  return out;
}

/** The call spec of a call id in the task's graph steps. */
function callSpecOf(world: WorldResult, taskId: number, callId: string): { step: GraphStepSpec; call: GraphCallSpec } | undefined {
  for (const step of graphSteps(world).get(taskId) ?? []) {
    const call = step.byId.get(callId);
    if (call !== undefined) return { step, call };
  }
  return undefined;
}

const runsMemo = new WeakMap<WorldResult, Map<string, GraphRun>>();

function runKey(taskId: number, generation: number): string {
  return `${taskId}/${generation}`;
}

/**
 * Per (task, generation) (key `task/generation`), the graph calls the history saw called, in invoke
 * order, with their step, name, lane and read-only-ness from the script (calls that no graph step of the
 * task's script names are left out: their truth is unknown).
 */
export function graphRuns(world: WorldResult): Map<string, GraphRun> {
  const cached = runsMemo.get(world);
  if (cached !== undefined) return cached;
  const out = new Map<string, GraphRun>();
  const byInvoke = new Map<number, GraphRunCall>();
  for (const entry of world.history.entries()) {
    if (entry.type === 'note' || entry.op !== 'tool') continue;
    if (entry.type === 'invoke') {
      const call = (entry.data as { call?: unknown } | undefined)?.call;
      if (typeof call !== 'string' || entry.taskId === undefined || entry.generation === undefined) continue;
      const spec = callSpecOf(world, entry.taskId, call);
      if (spec === undefined) continue;
      const key = runKey(entry.taskId, entry.generation);
      let run = out.get(key);
      if (run === undefined) out.set(key, (run = { taskId: entry.taskId, generation: entry.generation, calls: [] }));
      const made: GraphRunCall = { callId: call, step: spec.step.step, name: spec.call.name, readOnly: spec.call.readOnly, invokeIndex: entry.index, actor: entry.actor, outcome: 'open' };
      if (spec.call.lane !== undefined) made.lane = spec.call.lane;
      run.calls.push(made);
      byInvoke.set(entry.index, made);
      continue;
    }
    const made = byInvoke.get(entry.invokeIndex);
    if (made === undefined || made.endIndex !== undefined) continue;
    made.endIndex = entry.index;
    made.outcome = entry.type === 'ok' ? 'ok' : 'failed';
    if (entry.type === 'fail') made.reason = entry.reason;
  }
  runsMemo.set(world, out);
  return out;
}

/** The request key of each recordEffect ok, with the ok's index (first per key). */
function recordedEffects(entries: readonly HistoryEntry[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const entry of entries) {
    if (entry.type !== 'ok' || entry.op !== 'recordEffect') continue;
    const key = (entries[entry.invokeIndex]?.data as { requestKey?: unknown } | undefined)?.requestKey;
    if (typeof key === 'string' && !out.has(key)) out.set(key, entry.index);
  }
  return out;
}

/** The id of the first effect_recorded event of each request key. */
function effectEvents(world: WorldResult): Map<string, number> {
  const out = new Map<string, number>();
  for (const event of world.events) {
    const key = event.type === 'effect_recorded' ? event.data.requestKey : undefined;
    if (typeof key === 'string' && !out.has(key)) out.set(key, event.id);
  }
  return out;
}

interface ToolResultRecord {
  toolCallId?: string;
  status?: string;
  reason?: string;
  error?: { errorClass?: string };
}

interface CheckpointMessage {
  role?: string;
  step?: number;
  results?: ToolResultRecord[];
}

/** The tool messages of the task's last checkpoint, by step. */
function lastToolMessages(world: WorldResult, taskId: number): Map<number, ToolResultRecord[]> {
  const out = new Map<number, ToolResultRecord[]>();
  const state = world.checkpoints.get(taskId)?.state as { messages?: CheckpointMessage[] } | undefined;
  for (const message of state?.messages ?? []) {
    if (message.role === 'tool' && typeof message.step === 'number' && Array.isArray(message.results)) out.set(message.step, message.results);
  }
  return out;
}

/** The error class the task's last failed event names, if it ended failed. */
function finalFailure(world: WorldResult, taskId: number): string | undefined {
  const events = analyse(world).eventsByTask.get(taskId) ?? [];
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!;
    if (event.type === 'failed') return typeof event.data.errorClass === 'string' ? event.data.errorClass : '(none)';
  }
  return undefined;
}

/** The steps whose decision the task reached: a checkpoint A of that step was committed. */
function reachedSteps(world: WorldResult, taskId: number): Set<number> {
  const out = new Set<number>();
  for (const event of analyse(world).eventsByTask.get(taskId) ?? []) {
    if (event.type === 'checkpoint' && event.data.kind === 'A' && typeof event.data.step === 'number') out.add(event.data.step);
  }
  return out;
}

export const i21ToolGraph: Checker = {
  invariant: 'I21',
  kind: 'safety',
  description: 'the tool graph is respected: no call starts before its dependencies succeeded; writes to one resource never overlap; dependents of a failed call never run; a cycle runs nothing',
  check(world: WorldResult) {
    const out = new ViolationList('I21', 'safety');
    const analysis = analyse(world);
    const entries = world.history.entries();
    const steps = graphSteps(world);
    const runs = graphRuns(world);
    const recorded = recordedEffects(entries);
    const effectEvent = effectEvents(world);
    const historyEnd = entries.length;
    const ledgerAnswered = (key: string | undefined, index: number): boolean => {
      if (key === undefined) return false;
      const ok = recorded.get(key);
      if (ok !== undefined && ok < index) return true;
      const event = effectEvent.get(key);
      return event !== undefined && event <= (analysis.cursorBefore[index] ?? 0);
    };

    for (const run of runs.values()) {
      const { taskId, generation } = run;
      const failedFatal = new Map<string, GraphRunCall>();
      for (const call of run.calls) if (call.outcome === 'failed' && call.reason !== undefined && NON_RETRYABLE.has(call.reason)) failedFatal.set(call.callId, call);
      for (const call of run.calls) {
        const spec = callSpecOf(world, taskId, call.callId)!;
        if (spec.step.refused !== undefined) continue; // cycle-ran speaks for it
        const ledgerOnly = (id: string) => !run.calls.some((other) => other.callId === id) && ledgerAnswered(spec.step.byId.get(id)?.requestKey, call.invokeIndex);
        const succeededBefore = (id: string) => run.calls.some((other) => other.callId === id && other.outcome === 'ok' && other.endIndex! < call.invokeIndex) || ledgerAnswered(spec.step.byId.get(id)?.requestKey, call.invokeIndex);
        // Transitive dependencies, by the script, up to a write the ledger answered without a call in this
        // generation (a re-run after a takeover: it stands, whatever its own dependencies did this time, R2).
        const ancestors = new Set<string>();
        const stack = [...spec.call.dependsOn];
        while (stack.length > 0) {
          const id = stack.pop()!;
          if (ancestors.has(id) || ledgerOnly(id)) continue;
          ancestors.add(id);
          stack.push(...(spec.step.byId.get(id)?.dependsOn ?? []));
        }
        const failedAncestor = [...ancestors].map((id) => failedFatal.get(id)).find((failed) => failed !== undefined);
        if (failedAncestor !== undefined) {
          out.add(
            'dependent-ran',
            `task ${taskId} g${generation}: ${call.callId} started (history ${call.invokeIndex}) although ${failedAncestor.callId}, which it depends on, failed ${failedAncestor.reason} (history ${failedAncestor.endIndex}): a dependent of a failed call is skipped`,
            { taskId, at: [failedAncestor.endIndex!, call.invokeIndex] },
          );
          continue;
        }
        for (const dependency of spec.call.dependsOn) {
          if (succeededBefore(dependency)) continue;
          out.add('early-start', `task ${taskId} g${generation}: ${call.callId} started (history ${call.invokeIndex}) before its dependency ${dependency} succeeded`, { taskId, at: [call.invokeIndex] });
        }
      }
      // One lane, one write at a time.
      const writes = run.calls.filter((call) => !call.readOnly && call.lane !== undefined);
      for (let a = 0; a < writes.length; a++) {
        for (let b = a + 1; b < writes.length; b++) {
          const x = writes[a]!;
          const y = writes[b]!;
          if (x.lane !== y.lane || x.actor !== y.actor) continue;
          const xEnd = x.endIndex ?? historyEnd;
          const yEnd = y.endIndex ?? historyEnd;
          if (x.invokeIndex < yEnd && y.invokeIndex < xEnd) {
            out.add(
              'overlap',
              `task ${taskId} g${generation}: writes ${x.callId} (history ${x.invokeIndex}..${x.endIndex ?? 'open'}) and ${y.callId} (history ${y.invokeIndex}..${y.endIndex ?? 'open'}) of lane ${x.lane} were in flight at once`,
              { taskId, at: [x.invokeIndex, y.invokeIndex] },
            );
          }
        }
      }
    }

    // Refused plans run nothing, and end the run invalid_plan, not retried.
    const sends = new Map<string, number[]>();
    for (const entry of entries) {
      if (entry.type !== 'note' || entry.kind !== 'provider-send') continue;
      const key = (entry.data as { requestKey?: unknown } | undefined)?.requestKey;
      if (typeof key !== 'string') continue;
      let list = sends.get(key);
      if (list === undefined) sends.set(key, (list = []));
      list.push(entry.index);
    }
    for (const event of world.events) {
      if (event.type === 'retry_scheduled' && event.data.errorClass === 'invalid_plan') {
        out.add('cycle-ran', `task ${event.taskId}: a failure invalid_plan was retried (event ${event.id}): a refused plan is not retried`, { taskId: event.taskId });
      }
    }
    for (const [taskId, taskSteps] of steps) {
      const refused = taskSteps.filter((step) => step.refused !== undefined);
      const task = analysis.tasks.get(taskId);
      const reached = reachedSteps(world, taskId);
      const failure = task?.state === 'failed' ? finalFailure(world, taskId) : undefined;
      const validKeys = new Set<string>();
      taskPlans(world).get(taskId)?.steps.forEach((calls, index) => {
        if (refused.some((r) => r.step === index)) return;
        for (const call of calls ?? []) if (!call.readOnly) validKeys.add(specRequestKey(taskId, call.tool, call.args));
      });
      for (const step of refused) {
        for (const entry of entries) {
          if (entry.type !== 'invoke' || entry.op !== 'tool' || entry.taskId !== taskId) continue;
          const call = (entry.data as { call?: unknown } | undefined)?.call;
          if (typeof call === 'string' && step.byId.has(call)) {
            out.add('cycle-ran', `task ${taskId}: ${call} of step ${step.step}, whose plan is refused (${step.refused}), was called (history ${entry.index})`, { taskId, at: [entry.index] });
          }
        }
        for (const event of analysis.eventsByTask.get(taskId) ?? []) {
          const call = event.type === 'tool_result' ? event.data.toolCallId : undefined;
          if (typeof call === 'string' && step.byId.has(call)) out.add('cycle-ran', `task ${taskId}: tool_result event ${event.id} of ${call}, of step ${step.step} whose plan is refused (${step.refused})`, { taskId });
        }
        for (const call of step.calls) {
          if (call.requestKey === undefined || validKeys.has(call.requestKey)) continue;
          for (const index of sends.get(call.requestKey) ?? []) {
            out.add('cycle-ran', `task ${taskId}: ${call.callId}'s write (${call.requestKey}) of step ${step.step}, whose plan is refused (${step.refused}), was sent to the provider (history ${index})`, { taskId, at: [index] });
          }
        }
        if (task?.state === 'done') out.add('cycle-ran', `task ${taskId}: ended done although its step ${step.step}'s plan is refused (${step.refused})`, { taskId });
        if (failure !== undefined && failure !== 'invalid_plan' && reached.has(step.step)) {
          out.add('cycle-ran', `task ${taskId}: reached step ${step.step}, whose plan is refused (${step.refused}), and ended failed ${failure}, not invalid_plan`, { taskId });
        }
      }
      if (failure === 'invalid_plan' && !refused.some((step) => reached.has(step.step))) {
        out.add('cycle-ran', `task ${taskId}: ended failed invalid_plan, but no step it reached has a refused plan`, { taskId });
      }
    }
    for (const [taskId, task] of analysis.tasks) {
      // An agent's tool may itself throw ToolFailure('invalid_plan'): only a script says no graph was meant.
      if (steps.has(taskId) || task.state !== 'failed' || (world.agent !== undefined && !scriptsByTask(world).has(taskId))) continue;
      if (finalFailure(world, taskId) === 'invalid_plan') out.add('cycle-ran', `task ${taskId}: ended failed invalid_plan, but its script has no graph step`, { taskId });
    }

    // Every tool_result event of a graph call is backed by a recorded answer (or the ledger's).
    for (const event of world.events) {
      if (event.type !== 'tool_result') continue;
      const callId = event.data.toolCallId;
      if (typeof callId !== 'string') continue;
      const spec = callSpecOf(world, event.taskId, callId);
      if (spec === undefined || spec.step.refused !== undefined) continue;
      const generation = event.generation;
      const answered =
        generation !== undefined && (runs.get(runKey(event.taskId, generation))?.calls.some((call) => call.callId === callId && call.outcome === 'ok') ?? false);
      const fromLedger = spec.call.requestKey !== undefined && (effectEvent.get(spec.call.requestKey) ?? Number.POSITIVE_INFINITY) < event.id;
      if (!answered && !fromLedger) {
        out.add('unrecorded', `task ${event.taskId} g${generation ?? '?'}: tool_result event ${event.id} of ${callId}, but the history records no answer of that call in that generation and the ledger had not recorded it`, {
          taskId: event.taskId,
        });
      }
    }

    // The last checkpoint's outcomes agree with the graph.
    const ledgerGeneration = new Map((world.effects ?? []).map((effect) => [effect.requestKey, effect.generation]));
    for (const [taskId, taskSteps] of steps) {
      const messages = lastToolMessages(world, taskId);
      for (const step of taskSteps) {
        if (step.refused !== undefined) continue;
        const results = messages.get(step.step);
        if (results === undefined) continue;
        const status = new Map<string, string | undefined>();
        for (const result of results) {
          if (typeof result.toolCallId !== 'string') continue;
          if (status.has(result.toolCallId)) out.add('outcome', `task ${taskId} step ${step.step}: ${result.toolCallId} has two results`, { taskId });
          status.set(result.toolCallId, result.status);
        }
        for (const call of step.calls) if (!status.has(call.callId)) out.add('outcome', `task ${taskId} step ${step.step}: ${call.callId} has no result`, { taskId });
        for (const result of results) {
          const call = typeof result.toolCallId === 'string' ? step.byId.get(result.toolCallId) : undefined;
          if (call === undefined) {
            out.add('outcome', `task ${taskId} step ${step.step}: a result of ${String(result.toolCallId)}, which the step does not call`, { taskId });
            continue;
          }
          const depStatus = call.dependsOn.map((id) => `${id}=${status.get(id) ?? 'none'}`);
          // R2: on a re-run after a takeover a write the ledger recorded in an earlier generation is ok
          // whatever its dependencies did this time (it settles first, with its first result).
          const ledgerEarlier = call.requestKey !== undefined && (ledgerGeneration.get(call.requestKey) ?? Number.POSITIVE_INFINITY) < (world.checkpoints.get(taskId)?.generation ?? 0);
          if (result.status === 'ok' && !ledgerEarlier && call.dependsOn.some((id) => status.get(id) !== 'ok')) {
            out.add('outcome', `task ${taskId} step ${step.step}: ${call.callId} recorded ok, but its dependencies are ${depStatus.join(', ')}`, { taskId });
          } else if (result.status === 'skipped') {
            if (result.reason === 'dependency_failed' && !call.dependsOn.some((id) => status.get(id) === 'failed' || status.get(id) === 'skipped')) {
              out.add('outcome', `task ${taskId} step ${step.step}: ${call.callId} recorded skipped (dependency_failed), but its dependencies are ${depStatus.join(', ') || 'none'}`, { taskId });
            } else if (result.reason !== 'dependency_failed' && result.reason !== 'cancel_requested') {
              out.add('outcome', `task ${taskId} step ${step.step}: ${call.callId} recorded skipped for ${String(result.reason)}`, { taskId });
            }
          } else if (result.status === 'failed') {
            const errorClass = result.error?.errorClass;
            if (errorClass === undefined || !NON_RETRYABLE.has(errorClass)) {
              out.add('outcome', `task ${taskId} step ${step.step}: ${call.callId} recorded failed ${String(errorClass)}, which is not a definite (non-retryable) failure`, { taskId });
            }
          } else if (result.status !== 'ok') {
            out.add('outcome', `task ${taskId} step ${step.step}: ${call.callId} recorded status ${String(result.status)}`, { taskId });
          }
        }
      }
    }
    return out.list;
  },
};

/**
 * The S8 marks of the tool graph (checkers/marks.ts): step-runs with two calls in flight at once, calls
 * skipped for a failed dependency, graph steps with partial success (one ok, one failed), tasks refused
 * invalid_plan, and takeovers from checkpoint A in the middle of a graph (one of its calls already done
 * in an earlier generation).
 */
export function graphMarks(world: WorldResult): { concurrent: number; skipped: number; partial: number; refused: number; resumedMidGraph: number } {
  const historyEnd = world.history.entries().length;
  let concurrent = 0;
  for (const run of graphRuns(world).values()) {
    const bySteps = new Map<number, GraphRunCall[]>();
    for (const call of run.calls) {
      let list = bySteps.get(call.step);
      if (list === undefined) bySteps.set(call.step, (list = []));
      list.push(call);
    }
    for (const calls of bySteps.values()) {
      const overlapping = calls.some((x, a) => calls.some((y, b) => a < b && x.invokeIndex < (y.endIndex ?? historyEnd) && y.invokeIndex < (x.endIndex ?? historyEnd)));
      if (overlapping) concurrent++;
    }
  }
  const steps = graphSteps(world);
  let skipped = 0;
  let partial = 0;
  for (const [taskId, taskSteps] of steps) {
    const messages = lastToolMessages(world, taskId);
    for (const step of taskSteps) {
      const results = messages.get(step.step) ?? [];
      skipped += results.filter((result) => result.status === 'skipped' && result.reason === 'dependency_failed').length;
      if (results.some((result) => result.status === 'ok') && results.some((result) => result.status === 'failed')) partial++;
    }
  }
  let refused = 0;
  for (const task of analyse(world).tasks.values()) if (task.state === 'failed' && finalFailure(world, task.id) === 'invalid_plan') refused++;
  const entries = world.history.entries();
  const recorded = new Map<string, number[]>();
  for (const entry of entries) {
    if (entry.type !== 'ok' || entry.op !== 'recordEffect' || entry.generation === undefined) continue;
    const key = (entries[entry.invokeIndex]?.data as { requestKey?: unknown } | undefined)?.requestKey;
    if (typeof key !== 'string') continue;
    let list = recorded.get(key);
    if (list === undefined) recorded.set(key, (list = []));
    list.push(entry.generation);
  }
  const runs = graphRuns(world);
  let resumedMidGraph = 0;
  for (const event of world.events) {
    if (event.type !== 'task_resumed' || event.data.checkpointKind !== 'A' || event.generation === undefined) continue;
    const step = (steps.get(event.taskId) ?? []).find((candidate) => candidate.step === event.data.step && candidate.refused === undefined);
    if (step === undefined) continue;
    const done = step.calls.some((call) => {
      if (call.requestKey !== undefined && (recorded.get(call.requestKey) ?? []).some((generation) => generation < event.generation!)) return true;
      for (let generation = 1; generation < event.generation!; generation++) {
        if (runs.get(runKey(event.taskId, generation))?.calls.some((made) => made.callId === call.callId && made.outcome === 'ok')) return true;
      }
      return false;
    });
    if (done) resumedMidGraph++;
  }
  return { concurrent, skipped, partial, refused, resumedMidGraph };
}
