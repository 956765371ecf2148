import { buildAgent, type AgentEnv } from '../../src/worker/agent.ts';
import { ToolFailure, type Model, type ModelRequest, type Tool, type ToolContext } from '../../src/worker/types.ts';
import type { EventLoop } from '../event-loop.ts';
import type { JsonValue } from '../canonical-json.ts';
import type { History } from '../history.ts';
import type { FaultRates } from '../faults/plan.ts';
import type { SeededRandom } from '../random.ts';
import type { ScenarioSpec } from '../scenario.ts';
import type { Arrival } from '../workload.ts';
import type { SimAgent } from './agent-module.ts';
import { toolCallScope, type ExternalTwins } from './external-twin.ts';
import type { Incarnation } from './incarnation.ts';

/** What one incarnation of an agent worker runs: the team's model and tools, wrapped for the simulator. */
export interface AgentParts {
  model: Model;
  tools: readonly Tool[];
}

/** The key a poison task is known by: one task per (tenant, topic, version). */
export function poisonKey(task: { tenant: string; topic: string; version: number }): string {
  return `${task.tenant}\u0000${task.topic}\u0000${task.version}`;
}

/** Whether an accepted request is a task the workload drew poison (agentArrivals remembered it). */
export function poisoned(keys: ReadonlySet<string>, request: { tenant: string; topic: string; version?: number }): boolean {
  return keys.has(poisonKey({ tenant: request.tenant, topic: request.topic, version: request.version ?? 1 }));
}

/**
 * T2: the workload's arrivals, drawn exactly as for the built-in agent, given the team's input: the
 * module's `input(task)` (default `{ tenant, topic, version }`) in place of the drawn script. What
 * else the draw put in the input stays beside it (a client swarm's conflicting resend carries a
 * `revision`, so it still differs from the first request and the queue must still refuse it, Q1). A
 * task the workload drew poison is remembered by key, since no script carries that any more (R6).
 */
export function agentArrivals(arrivals: Arrival[], agent: SimAgent, poisoned: Set<string>): void {
  for (const arrival of arrivals) {
    const { request } = arrival;
    const { script, ...rest } = (request.input ?? {}) as { script?: { poison?: boolean } } & Record<string, unknown>;
    if (script?.poison === true) poisoned.add(poisonKey({ tenant: request.tenant, topic: request.topic, version: request.version ?? 1 }));
    const task = { tenant: request.tenant, topic: request.topic, version: request.version ?? 1, priority: request.priority ?? 0, ...(arrival.label === undefined ? {} : { label: arrival.label }) };
    const input = agent.input === undefined ? { tenant: task.tenant, topic: task.topic, version: task.version } : agent.input(task);
    const plain = input !== null && typeof input === 'object' && !Array.isArray(input);
    arrival.request = { ...request, input: Object.keys(rest).length === 0 ? input : plain ? { ...(input as object), ...rest } : { value: input, ...rest } };
  }
}

export interface AgentWorkerOptions {
  agent: SimAgent;
  twins: ExternalTwins;
  incarnation: Incarnation;
  loop: EventLoop;
  /** Where the model's decisions are noted (I21 judges an agent's tool graphs against them). */
  history: History;
  scenario: ScenarioSpec;
  /** The worker slot's model latency stream (the built-in model's, `latency-w<i>`). */
  latency: SeededRandom;
  /** The worker slot's stream its twins' calls draw faults from (`twins-w<i>`). */
  twinRandom: SeededRandom;
  /** `env.random`: the incarnation's own stream. */
  random: SeededRandom;
  rates(): FaultRates;
  afterEffect(): void;
  poisoned(request: ModelRequest): boolean;
  poison(): void;
  /**
   * The team's code (a tool's call, the model's decide) threw something other than a ToolFailure for
   * a run of this incarnation. The value goes on to the worker untouched: the production runtime ends such a run
   * `crashed` (src/worker/worker.ts), and the world must tell that apart from a crash of the core.
   */
  threw(taskId: number, where: string, error: unknown): void;
}

/**
 * The message the worker gives a crashed run's outcome for `error` (src/worker/worker.ts, Worker.start):
 * how the world matches a crash to the throw of the team's code that caused it.
 */
export function crashMessage(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/**
 * I21: what the team's model decided, noted as it left the model and before the worker runs any of it:
 * each call's id, tool, args, dependencies and resource, and whether the module's tool of that name
 * reads (a name it lacks is a write: the worker refuses it anyway). This is the graph's truth for an
 * agent's task, as the script is for the built-in model's; a decision with no tool calls is not noted.
 */
function noteDecision(history: History, actor: string, request: ModelRequest, decision: unknown, tools: readonly Tool[]): void {
  const calls = (decision as { toolCalls?: unknown } | null | undefined)?.toolCalls;
  if (!Array.isArray(calls) || calls.length === 0) return;
  const noted = calls.map((call: { id?: unknown; tool?: unknown; args?: unknown; dependsOn?: unknown; resource?: unknown }) => ({
    id: call.id,
    tool: call.tool,
    args: call.args,
    readOnly: tools.find((tool) => tool.name === call.tool)?.readOnly ?? false,
    ...(call.dependsOn === undefined ? {} : { dependsOn: call.dependsOn }),
    ...(call.resource === undefined ? {} : { resource: call.resource }),
  }));
  history.note('model-decision', actor, { step: request.step, calls: noted } as unknown as JsonValue, { taskId: request.taskId });
}

/**
 * Calls `call` and, when it throws or rejects with anything but a ToolFailure, tells `threw` before the
 * same value goes on. A value that is not a promise is returned as it is, so the worker meets exactly
 * what the team's code gave.
 */
function watched<T>(call: () => T, threw: (error: unknown) => void): T {
  const note = (error: unknown) => {
    if (!(error instanceof ToolFailure)) threw(error);
  };
  let answer: T;
  try {
    answer = call();
  } catch (error) {
    note(error);
    throw error;
  }
  if (answer === null || typeof (answer as { then?: unknown } | undefined)?.then !== 'function') return answer;
  return (answer as unknown as PromiseLike<unknown>).then(undefined, (error: unknown) => {
    note(error);
    throw error;
  }) as T;
}

/**
 * Builds the team's agent for one incarnation (T2): `env.clock` is the virtual clock (clock jumps
 * included), `env.random` the incarnation's stream, `env.external(name)` a twin whose waits obey the
 * incarnation (a paused process's call is held, a dead one's never answers). The model answers after
 * the scenario's model latency, so kills and pauses land inside model calls as with the built-in
 * model; each tool call runs inside its tool-call scope, so the twins know which call executed.
 */
export function agentWorkerParts(options: AgentWorkerOptions): AgentParts {
  const { agent, twins, incarnation, loop, scenario } = options;
  const waiter = incarnation.waiter(loop.waiter);
  const env: AgentEnv = {
    clock: loop.clock,
    random: options.random,
    external: (name) =>
      twins.external(name, {
        waiter,
        random: options.twinRandom,
        latencyMs: scenario.tools.latencyMs,
        ...(scenario.tools.errorClasses === undefined ? {} : { errorClasses: scenario.tools.errorClasses }),
        rates: options.rates,
        afterEffect: options.afterEffect,
        actor: incarnation.id,
        now: () => loop.now(),
      }),
  };
  const built = buildAgent(agent.definition, env, agent.path);
  const model: Model = {
    decide: async (request) => {
      // R6: a poison task takes its worker down every time it is run, as with the built-in model.
      if (options.poisoned(request)) {
        options.poison();
        return new Promise(() => {});
      }
      await waiter.sleep(options.latency.int(scenario.model.latencyMs[0], scenario.model.latencyMs[1]));
      const decision = await watched(() => built.model.decide(request), (error) => options.threw(request.taskId, 'model.decide', error));
      noteDecision(options.history, incarnation.id, request, decision, built.tools);
      return decision;
    },
  };
  const tools = built.tools.map(
    (tool): Tool => ({
      name: tool.name,
      readOnly: tool.readOnly,
      call: (args: unknown, context: ToolContext) =>
        toolCallScope.run(
          {
            taskId: context.taskId,
            tenant: context.tenant,
            generation: context.generation,
            toolCallId: context.toolCallId,
            requestKey: context.requestKey,
            tool: tool.name,
            readOnly: tool.readOnly,
            actor: incarnation.id,
            writes: 0,
          },
          () => watched(() => tool.call(args, context), (error) => options.threw(context.taskId, `tool ${tool.name}`, error)),
        ),
    }),
  );
  return { model, tools };
}
