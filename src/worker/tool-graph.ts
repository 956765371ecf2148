import { FATAL_ERROR_CLASSES } from '../queue/types.ts';
import { ToolFailure, type ToolCall, type ToolResult } from './types.ts';

/**
 * A7 (seed 003, section 3): the tool calls of one model decision as a dependency graph. A call may name
 * the calls it depends on (`dependsOn`, ids of the same step) and, for a write, the `resource` it
 * writes. The runtime runs the graph as it unlocks: a call starts once every call it depends on has
 * succeeded; read-only calls run concurrently; writes to one resource go through one lane, one at a
 * time, in the order the model gave them; writes to different resources run concurrently (a write that
 * names no resource has its tool's lane). When a call fails, every call that depends on it, directly or
 * not, is `skipped` and never runs; the step records each call's outcome, so "ticket updated, e-mail
 * failed" is a business outcome the next model call sees, not one failure of the run. Only a definite
 * failure counts so (an error class that is not retried): a retryable one (a timeout, a lost response)
 * leaves a write's outcome unknown, so the attempt fails and retries as a plain step's would. A plan that names
 * an unknown call, depends on itself, repeats an id or has a cycle is refused before anything runs.
 * A worker's graph steps share one bound on calls in flight (`CallPool`; plain steps run as R2 says).
 */

/** The lane a write goes through: its resource, or its tool's own lane when it names none. */
export function laneOf(call: ToolCall): string {
  return call.resource ?? `tool:${call.tool}`;
}

/** Whether a decision's calls form a graph (any dependency or resource named): otherwise the step runs as before. */
export function isGraph(calls: readonly ToolCall[]): boolean {
  return calls.some((call) => (call.dependsOn !== undefined && call.dependsOn.length > 0) || call.resource !== undefined);
}

/** The plan's first problem, or undefined: ids unique, dependencies known and not the call itself, no cycle. */
export function planProblem(calls: readonly ToolCall[]): string | undefined {
  const ids = new Set<string>();
  for (const call of calls) {
    if (ids.has(call.id)) return `call id ${call.id} appears twice`;
    ids.add(call.id);
  }
  for (const call of calls) {
    if (call.dependsOn !== undefined && !Array.isArray(call.dependsOn)) return `call ${call.id}: dependsOn must be a list of call ids`;
    for (const dependency of call.dependsOn ?? []) {
      if (dependency === call.id) return `call ${call.id} depends on itself`;
      if (!ids.has(dependency)) return `call ${call.id} depends on unknown call ${dependency}`;
    }
    if (call.resource !== undefined && (typeof call.resource !== 'string' || call.resource === '')) return `call ${call.id}: resource must be a non-empty string`;
  }
  // Kahn's algorithm: whatever is left once nothing more can be freed sits on a cycle.
  const waiting = new Map(calls.map((call) => [call.id, new Set(call.dependsOn ?? [])]));
  for (let freed = true; freed; ) {
    freed = false;
    for (const [id, dependencies] of waiting) {
      if (dependencies.size > 0) continue;
      waiting.delete(id);
      for (const other of waiting.values()) other.delete(id);
      freed = true;
    }
  }
  if (waiting.size > 0) return `the calls ${[...waiting.keys()].join(', ')} depend on each other in a cycle`;
  return undefined;
}

/**
 * The bound on tool calls in flight that one worker's graph steps share (A7): a call waits for a free
 * place, first come first served. A place is held until the call settles, which the runtime's tool
 * timeout bounds, so a hung tool holds it no longer than that.
 */
export class CallPool {
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`toolConcurrency must be an integer >= 1, got ${String(size)}`);
  }

  /** Calls in flight now. */
  get active(): number {
    return this.inFlight;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.inFlight < this.size) this.inFlight++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await work();
    } finally {
      // The place passes straight to the next waiter, so the count never dips below what is in flight.
      const next = this.waiting.shift();
      if (next !== undefined) next();
      else this.inFlight--;
    }
  }
}

export interface GraphOptions {
  /** The places for calls in flight (shared by the worker's runs). */
  pool: CallPool;
  /** Whether the call is a read (no lane). */
  readOnly(call: ToolCall): boolean;
  /** Runs one call; a ToolFailure is the call's failure, anything else stops the run (a lost lease, say). */
  run(call: ToolCall): Promise<ToolResult>;
  /** Asked right before each call starts: a reason to start no more (a cancel seen), or undefined. */
  stopping(): string | undefined;
  /**
   * R2, R3 on a takeover from checkpoint A: ids of writes whose result the effect ledger already holds.
   * Each is settled first (its run returns the first result without acting), whatever its dependencies
   * do this time: a read that fails on the re-run does not unmake an update that happened.
   */
  recorded?: ReadonlySet<string>;
}

type CallState = 'pending' | 'running' | 'ok' | 'failed' | 'skipped';

/** Runs a validated graph to its end; the results in the order the model gave the calls. */
export async function runGraph(calls: readonly ToolCall[], options: GraphOptions): Promise<ToolResult[]> {
  const state = new Map<string, CallState>(calls.map((call) => [call.id, 'pending']));
  const results = new Map<string, ToolResult>();
  const running = new Map<string, Promise<void>>();
  const skip = (call: ToolCall, reason: string) => {
    state.set(call.id, 'skipped');
    results.set(call.id, { toolCallId: call.id, tool: call.tool, result: null, status: 'skipped', reason });
  };
  let stopError: unknown;
  // One call, once it has a place in the pool: it never rejects; its outcome goes into `state`.
  const dispatch = async (call: ToolCall): Promise<void> => {
    if (stopError !== undefined) return skip(call, 'attempt_failed');
    const stop = options.stopping();
    if (stop !== undefined) return skip(call, stop);
    try {
      const result = await options.run(call);
      state.set(call.id, 'ok');
      results.set(call.id, { ...result, status: 'ok' });
    } catch (error) {
      state.set(call.id, 'failed');
      // A definite failure (a class that is not retried) is the call's outcome. A retryable one (a
      // timeout, a lost response) leaves a write's outcome unknown: the attempt fails as a plain
      // step's would, and the takeover settles the write through the effect ledger (R3).
      if (error instanceof ToolFailure && (FATAL_ERROR_CLASSES as readonly string[]).includes(error.errorClass)) {
        results.set(call.id, { toolCallId: call.id, tool: call.tool, result: null, status: 'failed', error: { errorClass: error.errorClass, message: error.message } });
      } else stopError ??= error;
    }
  };
  for (;;) {
    let progressed = false;
    for (const [index, call] of calls.entries()) {
      if (state.get(call.id) !== 'pending') continue;
      if (options.recorded?.has(call.id) === true && stopError === undefined) {
        state.set(call.id, 'running');
        progressed = true;
        running.set(call.id, dispatch(call).finally(() => running.delete(call.id)));
        continue;
      }
      const dependencies = (call.dependsOn ?? []).map((id) => state.get(id));
      if (dependencies.some((s) => s === 'failed' || s === 'skipped')) {
        skip(call, 'dependency_failed');
        progressed = true;
        continue;
      }
      if (stopError !== undefined) continue;
      if (!dependencies.every((s) => s === 'ok')) continue;
      // One lane per resource: an earlier write of the lane that has not finished holds this one back.
      if (!options.readOnly(call) && calls.slice(0, index).some((earlier) => !options.readOnly(earlier) && laneOf(earlier) === laneOf(call) && ['pending', 'running'].includes(state.get(earlier.id)!))) continue;
      state.set(call.id, 'running');
      progressed = true;
      running.set(
        call.id,
        options.pool.run(() => dispatch(call)).finally(() => running.delete(call.id)),
      );
    }
    if (running.size === 0 && !progressed) break;
    if (!progressed) await Promise.race(running.values());
  }
  if (stopError !== undefined) throw stopError;
  return calls.map((call) => results.get(call.id)!);
}
