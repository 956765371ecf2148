/**
 * Agent modules (SPEC T2, W3): a team's agent, its model adapter and its tools, written once as a module
 * whose default export is `defineAgent(...)`. The simulator runs it against twins of the team's external
 * systems under a virtual clock (`leasehold check --agent FILE`); production runs the same module in the
 * supervised worker processes of `leasehold work --agent FILE`, with the system clock and the team's
 * real clients.
 *
 * The seam between the two worlds is `env.external(name)`: it always returns an {@link External}, the
 * shape the simulator's twins have (`execute(operation, payload, { idempotencyKey })`). In the simulator
 * that is a twin; in production it is what the module's own `externals[name]` factory returns, an
 * adapter over the team's real client (a payments SDK, a ticket API) with the same shape. Tools written
 * against `External` therefore run unchanged in both, and the simulator judges the very idempotency key
 * handling that production relies on (W4: pass `context.requestKey` as the idempotency key).
 */
import { pathToFileURL } from 'node:url';
import { existsSync, statSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { CryptoRandom } from '../adapters/random.ts';
import { SystemClock } from '../adapters/clock.ts';
import type { Clock, Random } from '../ports.ts';
import { LeaseholdError } from '../queue/errors.ts';
import type { Model, Tool } from './types.ts';

/**
 * An external system as a tool sees it (T2): one entry point. A repeat of a call with the same
 * `idempotencyKey` must return the first result without executing again (a real provider's
 * idempotency key); without a key every call is a new execution.
 */
export interface External {
  execute(operation: string, payload: unknown, options?: { idempotencyKey?: string }): Promise<unknown>;
}

/** What an agent is built from: time, randomness and its external systems, all injected (S1, T2). */
export interface AgentEnv {
  readonly clock: Clock;
  readonly random: Random;
  /** The external system of that name; an unknown name throws {@link UnknownExternalError}. */
  external(name: string): External;
}

/** What `build` returns: the production `Model` and `Tool` shapes (src/worker/types.ts). */
export interface AgentParts {
  model: Model;
  tools: readonly Tool[];
}

export type AgentBuild = (env: AgentEnv) => AgentParts;

/**
 * Production factories of the module's external systems, by name. Each is called at most once per
 * process, the first time a tool's build asks for that name, so a client (a connection pool, an SDK
 * instance) is shared by every run of the process and never created for an agent that does not use it.
 */
export type ExternalFactories = Readonly<Record<string, () => External>>;

/** Marks a value as made by defineAgent; a registered symbol, so a module that imports another copy of Leasehold (dist/ against src/) is still recognised. */
const AGENT = Symbol.for('leasehold.agent');

export interface AgentDefinition {
  readonly [AGENT]: true;
  readonly build: AgentBuild;
  readonly externals: ExternalFactories;
}

/**
 * Declares an agent module's default export (T2). The shorthand `defineAgent((env) => ({ model, tools }))`
 * has no production clients: it suits an agent with no external systems, or one only simulated. A module
 * that runs in production names its clients too:
 *
 *   export default defineAgent({
 *     externals: { payments: () => paymentsAdapter(new PaymentsClient(process.env.PAYMENTS_KEY)) },
 *     build: (env) => ({ model, tools: [refundTool(env.external('payments'))] }),
 *   });
 *
 * Bad input is refused at once with an {@link AgentModuleError} naming what is wrong.
 */
export function defineAgent(definition: AgentBuild | { build: AgentBuild; externals?: ExternalFactories }): AgentDefinition {
  const where = 'defineAgent';
  if (typeof definition === 'function') return Object.freeze({ [AGENT]: true as const, build: definition, externals: Object.freeze({}) });
  if (definition === null || typeof definition !== 'object') {
    throw new AgentModuleError(where, 'invalid_definition', `expected (env) => ({ model, tools }) or { build, externals? }, got ${describe(definition)}`);
  }
  if (typeof definition.build !== 'function') throw new AgentModuleError(where, 'invalid_definition', `build must be a function (env) => ({ model, tools }), got ${describe(definition.build)}`);
  const externals = definition.externals ?? {};
  if (externals === null || typeof externals !== 'object' || Array.isArray(externals)) {
    throw new AgentModuleError(where, 'invalid_definition', `externals must be an object of factories by name, got ${describe(externals)}`);
  }
  for (const [name, factory] of Object.entries(externals)) {
    if (typeof factory !== 'function') throw new AgentModuleError(where, 'invalid_definition', `externals.${name} must be a function () => client, got ${describe(factory)}`);
  }
  return Object.freeze({ [AGENT]: true as const, build: definition.build, externals: Object.freeze({ ...externals }) });
}

export function isAgentDefinition(value: unknown): value is AgentDefinition {
  return value !== null && typeof value === 'object' && (value as Record<symbol, unknown>)[AGENT] === true;
}

/** What was wrong with an agent module: `where` names the module (or defineAgent), `problem` the kind of fault. */
export class AgentModuleError extends LeaseholdError {
  constructor(
    readonly where: string,
    readonly problem:
      | 'not_found'
      | 'unsupported_extension'
      | 'needs_tsx'
      | 'import_failed'
      | 'no_default_export'
      | 'not_defined_by_defineAgent'
      | 'invalid_definition'
      | 'build_failed'
      | 'invalid_model'
      | 'invalid_tools'
      | 'duplicate_tool'
      | 'invalid_external',
    detail: string,
  ) {
    super('invalid_agent_module', `agent module ${where}: ${detail}`);
  }
}

/** `env.external(name)` for a name the module gave no factory (production) or no twin (simulation). */
export class UnknownExternalError extends LeaseholdError {
  constructor(
    readonly external: string,
    readonly known: readonly string[],
  ) {
    super(
      'unknown_external',
      `no external system '${external}': ${known.length === 0 ? 'the agent module defines no externals (use defineAgent({ externals: { ... }, build }))' : `the agent module defines ${known.map((k) => `'${k}'`).join(', ')}`}`,
    );
  }
}

/** Extensions plain node imports; TypeScript ones need tsx registered in the process (`node --import tsx`). */
export const AGENT_MODULE_EXTENSIONS = ['.mjs', '.js', '.cjs', '.ts', '.mts', '.cts'] as const;
const TYPESCRIPT = new Set(['.ts', '.mts', '.cts']);

/** Whether a module path is TypeScript, so the process that imports it needs tsx. */
export function isTypeScriptModule(path: string): boolean {
  return TYPESCRIPT.has(extname(path));
}

/**
 * Imports an agent module and checks its default export (T2). `.mjs` and `.js` (ESM) load under plain
 * node 20; `.ts`, `.mts` and `.cts` need tsx registered in this process (`node --import tsx`: the
 * Supervisor does that for its children when tsx is installed). Every failure is an AgentModuleError.
 */
export async function loadAgentModule(path: string): Promise<AgentDefinition> {
  const absolute = resolve(path);
  if (!existsSync(absolute) || !statSync(absolute).isFile()) throw new AgentModuleError(path, 'not_found', `no such file (${absolute})`);
  const extension = extname(absolute);
  if (!(AGENT_MODULE_EXTENSIONS as readonly string[]).includes(extension)) {
    throw new AgentModuleError(path, 'unsupported_extension', `expected one of ${AGENT_MODULE_EXTENSIONS.join(', ')}, got '${extension || '(none)'}'`);
  }
  let namespace: Record<string, unknown>;
  try {
    namespace = (await import(pathToFileURL(absolute).href)) as Record<string, unknown>;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (TYPESCRIPT.has(extension) && code === 'ERR_UNKNOWN_FILE_EXTENSION') {
      throw new AgentModuleError(path, 'needs_tsx', 'a TypeScript module needs tsx in the importing process: run it with `node --import tsx`, or compile it to .mjs');
    }
    throw new AgentModuleError(path, 'import_failed', `importing it failed: ${messageOf(error)}`);
  }
  if (!('default' in namespace) || namespace.default === undefined) {
    const named = Object.keys(namespace);
    throw new AgentModuleError(path, 'no_default_export', `it has no default export${named.length === 0 ? '' : ` (it exports ${named.join(', ')})`}; write \`export default defineAgent((env) => ({ model, tools }))\``);
  }
  // A CommonJS module's exports object arrives as `default`; its own `default` is the agent then.
  const exported = isAgentDefinition(namespace.default) ? namespace.default : (namespace.default as { default?: unknown } | null)?.default;
  if (!isAgentDefinition(exported)) {
    throw new AgentModuleError(path, 'not_defined_by_defineAgent', `its default export is ${describe(namespace.default)}, not made by defineAgent (import { defineAgent } from 'leasehold')`);
  }
  return exported;
}

/**
 * Builds the agent with `env` and checks what build returned: a model with decide(), and an array of
 * tools each with a name, a readOnly flag and call(), no two with one name (the worker looks tools up by
 * name, so a duplicate would silently shadow the other).
 */
export function buildAgent(definition: AgentDefinition, env: AgentEnv, where = 'agent'): AgentParts {
  if (!isAgentDefinition(definition)) throw new AgentModuleError(where, 'not_defined_by_defineAgent', `expected what defineAgent returns, got ${describe(definition)}`);
  let parts: unknown;
  try {
    parts = definition.build(env);
  } catch (error) {
    if (error instanceof LeaseholdError) throw error;
    throw new AgentModuleError(where, 'build_failed', `build(env) threw: ${messageOf(error)}`);
  }
  if (parts !== null && typeof parts === 'object' && typeof (parts as { then?: unknown }).then === 'function') {
    throw new AgentModuleError(where, 'build_failed', 'build(env) returned a promise; it must return { model, tools } at once (create clients lazily, in the externals factories)');
  }
  if (parts === null || typeof parts !== 'object') throw new AgentModuleError(where, 'build_failed', `build(env) must return { model, tools }, got ${describe(parts)}`);
  const { model, tools } = parts as { model?: unknown; tools?: unknown };
  if (model === null || typeof model !== 'object' || typeof (model as { decide?: unknown }).decide !== 'function') {
    throw new AgentModuleError(where, 'invalid_model', `build(env).model must have a decide(request) method, got ${describe(model)}`);
  }
  if (!Array.isArray(tools)) throw new AgentModuleError(where, 'invalid_tools', `build(env).tools must be an array of tools, got ${describe(tools)}`);
  const seen = new Set<string>();
  tools.forEach((tool: unknown, index) => {
    const t = tool as Partial<Tool> | null;
    if (t === null || typeof t !== 'object') throw new AgentModuleError(where, 'invalid_tools', `tools[${index}] must be a tool { name, readOnly, call }, got ${describe(tool)}`);
    if (typeof t.name !== 'string' || t.name === '') throw new AgentModuleError(where, 'invalid_tools', `tools[${index}].name must be a non-empty string, got ${describe(t.name)}`);
    if (typeof t.readOnly !== 'boolean') throw new AgentModuleError(where, 'invalid_tools', `tool '${t.name}': readOnly must be true or false, got ${describe(t.readOnly)}`);
    if (typeof t.call !== 'function') throw new AgentModuleError(where, 'invalid_tools', `tool '${t.name}': call must be a function (args, context) => Promise<result>, got ${describe(t.call)}`);
    if (seen.has(t.name)) throw new AgentModuleError(where, 'duplicate_tool', `two tools are named '${t.name}'`);
    seen.add(t.name);
  });
  return { model: model as Model, tools: tools as Tool[] };
}

/**
 * The production env of a module (W3): the system clock, the OS CSPRNG, and `external(name)` answered
 * by the module's own factories, each called once per process; a name it has no factory for throws
 * UnknownExternalError naming the ones it has.
 */
export function productionAgentEnv(definition: AgentDefinition, ports: { clock?: Clock; random?: Random } = {}, where = 'agent'): AgentEnv {
  const clients = new Map<string, External>();
  const known = Object.keys(definition.externals);
  return {
    clock: ports.clock ?? new SystemClock(),
    random: ports.random ?? new CryptoRandom(),
    external(name: string): External {
      const made = clients.get(name);
      if (made !== undefined) return made;
      if (typeof name !== 'string' || !Object.hasOwn(definition.externals, name)) throw new UnknownExternalError(String(name), known);
      const client = (definition.externals[name] as () => External)();
      if (client === null || typeof client !== 'object' || typeof client.execute !== 'function') {
        throw new AgentModuleError(where, 'invalid_external', `externals.${name}() must return { execute(operation, payload, { idempotencyKey }) }, got ${describe(client)}`);
      }
      clients.set(name, client);
      return client;
    },
  };
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'object') return `an object with keys [${Object.keys(value).join(', ')}]`;
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value)}`;
  return `${typeof value} ${String(value)}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
