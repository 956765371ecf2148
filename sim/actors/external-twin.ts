import { AsyncLocalStorage } from 'node:async_hooks';
import { canonicalJson, sha256Hex } from '../../src/canonical-json.ts';
import type { Waiter } from '../../src/ports.ts';
import type { ErrorClass } from '../../src/queue/types.ts';
import { UnknownExternalError, type External } from '../../src/worker/agent.ts';
import { ToolFailure } from '../../src/worker/types.ts';
import { toolHangs } from '../faults/hung-tool.ts';
import { responseLost } from '../faults/lost-response.ts';
import type { FaultRates } from '../faults/plan.ts';
import { slowToolLatency } from '../faults/slow-tool.ts';
import { toolFailure } from '../faults/tool-error.ts';
import type { History } from '../history.ts';
import type { SeededRandom } from '../random.ts';
import type { ExternalProvider, ProviderOperation } from './provider.ts';

/**
 * Twins of a team's external systems (T2): what `env.external(name)` gives an agent module in the
 * simulator. A twin is the built-in ExternalProvider (actors/provider.ts) generalised to the team's own
 * operations and keys:
 *
 * - it honours an idempotency key as a real provider does: a repeat of a key the system already
 *   executed returns the first result without acting; a call without a key is a new execution (W4);
 * - latency, errors, slow and hung calls and lost responses come from the seed, drawn by the same fault
 *   kinds' functions as the built-in tools (sim/faults/), so the plan's rates and the liveness phase's
 *   silence apply; after an effect the `after_effect` kill point fires;
 * - it records every execution with the tool call that made it (task, generation, toolCallId, the
 *   incarnation). An execution made by a write tool is an effect: it goes into the world's provider
 *   record under the tool call's request key (R3), which the takeover of that call repeats, so I8
 *   ("each request key executed at most once"), I2 and I13 judge the team's tools from the outside
 *   exactly as they judge the built-in ones. A tool that forgets the key, or makes up its own, executes
 *   again when a takeover repeats its call, and I8 names the task.
 *
 * A write tool may execute more than once per call (two systems, say): its n-th execution is judged
 * under `requestKey#n` (n > 1), which the takeover's n-th execution repeats. Executions made by a
 * read-only tool, or by the model outside any tool call, are recorded but are not effects: reads may
 * rightly run again after a takeover.
 */

/** The tool call a twin's execute runs under; the world sets it around every call of an agent's tool. */
export interface ToolCallScope {
  taskId: number;
  tenant: string;
  generation: number;
  toolCallId: string;
  requestKey: string;
  tool: string;
  readOnly: boolean;
  actor: string;
  /** Effects executed (or repeated) so far by this call: its n-th is judged under requestKey#n. */
  writes: number;
}

/**
 * The part of node's AsyncLocalStorage the world uses, stated here so the published declarations do not
 * name node's types: a consumer of leasehold/testing compiles without @types/node.
 */
export interface ToolCallStore {
  run<R>(scope: ToolCallScope, callback: () => R): R;
  getStore(): ToolCallScope | undefined;
}

/** Which tool call is running, across the awaits of the team's code (concurrent calls of graphs and slots each keep their own). */
export const toolCallScope: ToolCallStore = new AsyncLocalStorage<ToolCallScope>();

/** One request that reached a twin, with the call that made it; `executed` false: a repeat answered with the first result. */
export interface TwinExecution {
  external: string;
  operation: string;
  payload: unknown;
  idempotencyKey: string | undefined;
  result: unknown;
  executed: boolean;
  /** An effect of a write tool (judged by I8), not a read. */
  effect: boolean;
  taskId: number | undefined;
  tenant: string | undefined;
  generation: number | undefined;
  toolCallId: string | undefined;
  tool: string | undefined;
  actor: string;
  atMs: number;
  /** History index of the note that recorded it. */
  index: number;
}

/**
 * What a twin does when it executes (a module's named export `twins`): `execute` returns the
 * operation's result, or throws a ToolFailure (a definite refusal: nothing executed). Absent: every
 * operation succeeds with `{ id: '<name>-<n>', operation }`.
 */
export interface TwinBehaviour {
  execute(operation: string, payload: unknown, context: { executions: number }): unknown;
}

/** What a twin handle of one incarnation draws its faults from and waits on. */
export interface TwinHooks {
  /** The incarnation's gated waiter: a paused process's twin call is held, a dead one's never returns. */
  waiter: Waiter;
  random: SeededRandom;
  latencyMs: readonly [number, number];
  errorClasses?: Partial<Record<ErrorClass, number>>;
  rates(): FaultRates;
  /** The S4 point after an effect executed, before its answer travels back. */
  afterEffect(): void;
  actor: string;
  now(): number;
}

interface TwinSystem {
  name: string;
  behaviour: TwinBehaviour | undefined;
  results: Map<string, unknown>;
  executions: number;
}

export class ExternalTwins {
  /** Every request any twin received, in order (reads, effects and repeats). */
  readonly executions: TwinExecution[] = [];
  private readonly systems = new Map<string, TwinSystem>();

  constructor(
    private readonly history: History,
    private readonly provider: ExternalProvider,
    /** The names a module declares (its `externals`); empty: any name is a twin (a module only simulated). */
    private readonly known: readonly string[],
    private readonly behaviours: Readonly<Record<string, () => TwinBehaviour>> = {},
  ) {}

  /** `env.external(name)` for one incarnation. */
  external(name: string, hooks: TwinHooks): External {
    const system = this.system(name);
    return { execute: (operation, payload, options) => this.execute(system, hooks, operation, payload, options) };
  }

  private system(name: string): TwinSystem {
    if (typeof name !== 'string' || (this.known.length > 0 && !this.known.includes(name))) throw new UnknownExternalError(String(name), this.known);
    let system = this.systems.get(name);
    if (system === undefined) {
      const make = this.behaviours[name];
      system = { name, behaviour: make?.(), results: new Map(), executions: 0 };
      this.systems.set(name, system);
    }
    return system;
  }

  private async execute(system: TwinSystem, hooks: TwinHooks, operation: string, payload: unknown, options: { idempotencyKey?: string } | undefined): Promise<unknown> {
    const key = options?.idempotencyKey;
    if (typeof operation !== 'string' || operation === '') throw new ToolFailure('invalid_tool_schema', `${system.name}: operation must be a non-empty string, got ${JSON.stringify(operation)}`);
    if (key !== undefined && (typeof key !== 'string' || key === '')) throw new ToolFailure('invalid_tool_schema', `${system.name}.${operation}: idempotencyKey must be a non-empty string, got ${JSON.stringify(key)}`);
    const scope = toolCallScope.getStore();
    const effect = scope !== undefined && !scope.readOnly;
    const { random, waiter } = hooks;
    const rates = hooks.rates();
    // The draws of a built-in tool call, in its order (actors/tools.ts): latency, hang, then error and lost answer.
    const latencyMs = slowToolLatency(random, rates, random.int(hooks.latencyMs[0], hooks.latencyMs[1]));
    if (toolHangs(random, rates)) return new Promise(() => {});
    let identity: string | undefined;
    let sentIndex: number | undefined;
    if (effect) {
      scope.writes++;
      identity = scope.writes === 1 ? scope.requestKey : `${scope.requestKey}#${scope.writes}`;
      sentIndex = this.provider.noteSent({ requestKey: identity, taskId: scope.taskId, generation: scope.generation, actor: hooks.actor });
    }
    await waiter.sleep(Math.ceil(latencyMs / 2));
    const failure = toolFailure(random, rates, `${system.name}.${operation}`, hooks.errorClasses);
    if (failure !== undefined) throw failure;
    const first = key === undefined ? undefined : system.results.get(key);
    const repeat = key !== undefined && system.results.has(key);
    let result: unknown = first;
    if (!repeat) {
      result = system.behaviour === undefined ? { id: `${system.name}-${system.executions + 1}`, operation } : system.behaviour.execute(operation, structuredClone(payload), { executions: system.executions });
      system.executions++;
      if (key !== undefined) system.results.set(key, result);
    }
    this.record(system, hooks, { operation, payload, key, result, executed: !repeat, scope, identity, sentIndex });
    if (!repeat && effect) hooks.afterEffect();
    if (responseLost(random, rates)) return new Promise(() => {});
    await waiter.sleep(Math.floor(latencyMs / 2));
    return structuredClone(result);
  }

  private record(
    system: TwinSystem,
    hooks: TwinHooks,
    request: { operation: string; payload: unknown; key: string | undefined; result: unknown; executed: boolean; scope: ToolCallScope | undefined; identity: string | undefined; sentIndex: number | undefined },
  ): void {
    const { operation, payload, key, result, executed, scope, identity, sentIndex } = request;
    const index = this.history.length;
    const call = { external: system.name, operation, idempotencyKey: key ?? null, payload: digest(payload), call: scope?.toolCallId ?? null, tool: scope?.tool ?? null };
    if (identity !== undefined && scope !== undefined) {
      // An effect: into the provider's record and its notes, as the built-in provider writes them (checkers/provider-calls.ts joins the two in order).
      const made: ProviderOperation = {
        requestKey: identity,
        action: `${system.name}.${operation}`,
        tenant: scope.tenant,
        taskId: scope.taskId,
        generation: scope.generation,
        actor: hooks.actor,
        atMs: hooks.now(),
        ...(sentIndex === undefined ? {} : { sentIndex }),
        external: system.name,
        ...(key === undefined ? {} : { idempotencyKey: key }),
        toolCallId: scope.toolCallId,
      };
      this.provider.requests.push(made);
      if (executed) {
        this.provider.executions.push(made);
        this.history.note('provider-execute', 'provider', { requestKey: identity, action: made.action, taskId: scope.taskId, generation: scope.generation, by: hooks.actor, ...call });
      } else {
        this.history.note('provider-repeat', 'provider', { requestKey: identity, taskId: scope.taskId, ...call });
      }
    } else {
      this.history.note(executed ? 'external-read' : 'external-read-repeat', 'provider', { taskId: scope?.taskId ?? null, generation: scope?.generation ?? null, by: hooks.actor, ...call });
    }
    this.executions.push({
      external: system.name,
      operation,
      payload: structuredClone(payload),
      idempotencyKey: key,
      result: structuredClone(result),
      executed,
      effect: identity !== undefined,
      taskId: scope?.taskId,
      tenant: scope?.tenant,
      generation: scope?.generation,
      toolCallId: scope?.toolCallId,
      tool: scope?.tool,
      actor: hooks.actor,
      atMs: hooks.now(),
      index,
    });
  }
}

/** A short digest of a payload for the history, so the trace hash covers what the team's code sent (I14). */
function digest(payload: unknown): string {
  try {
    return sha256Hex(canonicalJson(payload as never)).slice(0, 16);
  } catch {
    return 'unhashable';
  }
}
