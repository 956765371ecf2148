import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AgentModuleError, buildAgent, loadAgentModule, UnknownExternalError, type AgentDefinition, type AgentEnv } from '../../src/worker/agent.ts';
import type { HistoryEntry } from '../history.ts';
import { SeededRandom } from '../random.ts';
import { VirtualClock } from '../clock.ts';
import type { ScenarioSpec } from '../scenario.ts';
import { validateScenario } from '../check/scenario-file.ts';
import { findScenario, listScenarios } from '../scenarios/registry.ts';
import { ExternalTwins, type TwinBehaviour, type TwinExecution } from './external-twin.ts';
import { agentArrivals, agentWorkerParts, crashMessage, poisoned } from './agent-world.ts';

/**
 * The agent mode's code, handed to the world with the module (world.ts imports its types only), so a
 * world of the built-in agent never loads it, nor src/worker/agent.ts beneath it.
 */
const RUNTIME = Object.freeze({ agentArrivals, agentWorkerParts, poisoned, crashMessage, ExternalTwins });
export type AgentRuntime = typeof RUNTIME;

/**
 * A team's agent module as the simulator runs it (T2, T3). The default export is the production
 * `defineAgent(...)` (src/worker/agent.ts); named exports, all optional, say how to simulate it:
 *
 * - `scenario`: the workload and faults to run it under: a scenario object with the same typed parts
 *   as a scenario file (validated by the same schema), or a catalogue name. `--scenario` overrides it;
 *   absent both, the catalogue's default scenario.
 * - `input(task)`: the input the team's model reads for a task the workload draws (its tenant, topic,
 *   version, priority and label); absent: `{ tenant, topic, version }`. Pure: the same task, the same input.
 * - `twins`: per external system, a factory of its behaviour `{ execute(operation, payload) }` returning
 *   an operation's result (a ToolFailure thrown is a definite refusal); absent: every operation succeeds
 *   with `{ id, operation }`. Idempotency keys, faults and records are the twin's (actors/external-twin.ts).
 * - `invariants`: the team's own invariants, `{ name, check(run) }`, each a pure function of the run
 *   returning its violations (messages, or `{ message, taskId }`), judged beside I1..I22 and reported
 *   under its own name.
 */
export interface SimAgent {
  /** The module's absolute path: what threads import and a counterexample records. */
  path: string;
  definition: AgentDefinition;
  input?: (task: AgentTask) => unknown;
  twins: Readonly<Record<string, () => TwinBehaviour>>;
  invariants: readonly TeamInvariant[];
  scenario?: ScenarioSpec;
  runtime: AgentRuntime;
}

/** A task of the workload, as `input(task)` sees it. */
export interface AgentTask {
  tenant: string;
  topic: string;
  version: number;
  priority: number;
  label?: string;
}

/** T3: what a team invariant judges: every twin request with the tool call that made it, the final tasks, the whole history. */
export interface AgentRun {
  executions: readonly TwinExecution[];
  tasks: readonly { id: number; tenant: string; topic: string; version: number; state: string; input: unknown; result: unknown }[];
  history: readonly HistoryEntry[];
}

export interface TeamInvariant {
  name: string;
  /** Default safety (exit 1); liveness exits 2 (S9). */
  kind?: 'safety' | 'liveness';
  check(run: AgentRun): readonly (string | { message: string; taskId?: number; at?: number[] })[];
}

/** Names the harness's own findings use; a team invariant may not take one. */
const RESERVED = /^(I\d+|Q\d+|S\d+|harness|refused|expect:.*)$/;

/**
 * Imports an agent module for the simulator and checks its default and named exports; every fault is
 * an AgentModuleError naming the module (a scenario that does not validate, a ScenarioFileError naming
 * its field). The agent is built once here, on a probe env, so a build that throws or returns the
 * wrong shape is refused before any run.
 */
export async function loadSimAgent(path: string): Promise<SimAgent> {
  const definition = await loadAgentModule(path);
  const absolute = resolve(path);
  const namespace = (await import(pathToFileURL(absolute).href)) as Record<string, unknown>;
  const agent: SimAgent = { path: absolute, definition, twins: twinsOf(path, namespace.twins), invariants: invariantsOf(path, namespace.invariants), runtime: RUNTIME };
  if (namespace.input !== undefined) {
    if (typeof namespace.input !== 'function') throw new AgentModuleError(path, 'invalid_definition', `export input must be a function (task) => input, got ${typeof namespace.input}`);
    agent.input = namespace.input as SimAgent['input'] & {};
  }
  const scenario = scenarioOf(path, namespace.scenario);
  if (scenario !== undefined) agent.scenario = scenario;
  buildAgent(definition, probeEnv(definition), path);
  return agent;
}

function scenarioOf(path: string, value: unknown): ScenarioSpec | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') {
    const found = findScenario(value);
    if (found === undefined) throw new AgentModuleError(path, 'invalid_definition', `export scenario names '${value}', which the catalogue has not (it has ${listScenarios().map((entry) => entry.name).join(', ')})`);
    return found;
  }
  return validateScenario(value, `${path} (export scenario)`);
}

function twinsOf(path: string, value: unknown): SimAgent['twins'] {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new AgentModuleError(path, 'invalid_definition', 'export twins must be an object of factories by external name, () => ({ execute(operation, payload) })');
  const twins: Record<string, () => TwinBehaviour> = {};
  for (const [name, factory] of Object.entries(value)) {
    if (typeof factory !== 'function') throw new AgentModuleError(path, 'invalid_definition', `export twins.${name} must be a function () => ({ execute(operation, payload) })`);
    twins[name] = () => {
      const made = (factory as () => unknown)();
      if (made === null || typeof made !== 'object' || typeof (made as TwinBehaviour).execute !== 'function') {
        throw new AgentModuleError(path, 'invalid_external', `twins.${name}() must return { execute(operation, payload) }`);
      }
      return made as TwinBehaviour;
    };
  }
  return twins;
}

function invariantsOf(path: string, value: unknown): TeamInvariant[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new AgentModuleError(path, 'invalid_definition', 'export invariants must be an array of { name, check(run) }');
  const names = new Set<string>();
  return value.map((invariant: unknown, index) => {
    const candidate = invariant as Partial<TeamInvariant> | null;
    const where = `export invariants[${index}]`;
    if (candidate === null || typeof candidate !== 'object') throw new AgentModuleError(path, 'invalid_definition', `${where} must be { name, check(run) }`);
    if (typeof candidate.name !== 'string' || candidate.name === '') throw new AgentModuleError(path, 'invalid_definition', `${where}.name must be a non-empty string`);
    if (RESERVED.test(candidate.name)) throw new AgentModuleError(path, 'invalid_definition', `${where}.name '${candidate.name}' is one the harness uses for its own findings; name it after what it guards`);
    if (names.has(candidate.name)) throw new AgentModuleError(path, 'invalid_definition', `two invariants are named '${candidate.name}'`);
    if (typeof candidate.check !== 'function') throw new AgentModuleError(path, 'invalid_definition', `${where} (${candidate.name}): check must be a function (run) => violations`);
    if (candidate.kind !== undefined && candidate.kind !== 'safety' && candidate.kind !== 'liveness') throw new AgentModuleError(path, 'invalid_definition', `${where} (${candidate.name}): kind must be 'safety' or 'liveness'`);
    names.add(candidate.name);
    return candidate as TeamInvariant;
  });
}

/** An env for the load-time build: a virtual clock, a fixed stream, and externals that only check the name. */
function probeEnv(definition: AgentDefinition): AgentEnv {
  const known = Object.keys(definition.externals);
  return {
    clock: new VirtualClock(),
    random: new SeededRandom('agent-probe'),
    external(name: string) {
      if (known.length > 0 && !known.includes(name)) throw new UnknownExternalError(String(name), known);
      return { execute: () => Promise.reject(new Error('an agent built on the probe env called an external system at build time')) };
    },
  };
}
