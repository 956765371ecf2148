import type { ErrorClass, Usage } from '../queue/types.ts';

/**
 * The worker runtime's injected interfaces. A model decides; tools act. Production passes real ones;
 * the simulator passes scripted ones whose latency and failures come from the seed.
 */

export interface ToolCall {
  /** Stable within the run: a takeover re-runs the same ids, so clients can fold duplicates (R2). */
  id: string;
  tool: string;
  args: unknown;
  /** A7: ids of calls of the same step that must succeed before this one starts. */
  dependsOn?: readonly string[];
  /** A7: the resource a write writes; writes to one resource run one at a time, in the order given. */
  resource?: string;
}

export interface ModelRequest {
  taskId: number;
  tenant: string;
  input: unknown;
  step: number;
  messages: readonly Message[];
}

/** One model decision: either tool calls to run, or the final answer of the run. */
export interface ModelDecision {
  toolCalls: readonly ToolCall[];
  final?: unknown;
  usage: { inputTokens: number; outputTokens: number };
}

export interface Model {
  decide(request: ModelRequest): Promise<ModelDecision>;
}

export interface ToolContext {
  taskId: number;
  /** R3: one run spans takeovers; runId = taskId. */
  runId: number;
  tenant: string;
  generation: number;
  toolCallId: string;
  /** R3: runId:action:fingerprint; identical for a repeat of the same effect in any generation. */
  requestKey: string;
  /**
   * A7: present when the call runs as part of a step's tool-call graph: the calls it waited for and the
   * resource lane it writes through (its `resource`, or `tool:<name>` for a write that names none;
   * absent for a read). A tool that guards a resource of its own can use it; the simulation records it.
   */
  graph?: { dependsOn: readonly string[]; lane?: string };
}

export interface Tool {
  readonly name: string;
  /** Read-only tools may run again on takeover; write tools go through the effect ledger (R2, R3). */
  readonly readOnly: boolean;
  call(args: unknown, context: ToolContext): Promise<unknown>;
}

/** A tool or model failure with the error class the queue understands (Q16). */
export class ToolFailure extends Error {
  constructor(
    readonly errorClass: ErrorClass,
    message: string,
  ) {
    super(message);
    this.name = 'ToolFailure';
  }
}

export type Message =
  | { role: 'model'; step: number; toolCalls: readonly ToolCall[]; final?: unknown }
  | { role: 'tool'; step: number; results: readonly ToolResult[] };

export interface ToolResult {
  toolCallId: string;
  tool: string;
  result: unknown;
  /** A7, in a step whose calls form a graph: how the call ended (absent in a plain step: it succeeded). */
  status?: 'ok' | 'failed' | 'skipped';
  /** For a failed call: the tool's error. */
  error?: { errorClass: ErrorClass; message: string };
  /** For a skipped call: why (dependency_failed, cancel_requested). */
  reason?: string;
}

/** What a checkpoint carries (R1): enough to resume the run in another worker. */
export interface RunState {
  /** The step in progress after A, or the next step after B. */
  step: number;
  messages: Message[];
  usage: Usage;
  /** After checkpoint A: the decision whose tool calls have not all been recorded yet. */
  pending?: { toolCalls: readonly ToolCall[] };
}

export type RunOutcome =
  | { kind: 'completed'; taskId: number; outcome: 'done' | 'stale_input' }
  | { kind: 'failed' | 'retry'; taskId: number; errorClass: ErrorClass }
  | { kind: 'cancelled'; taskId: number }
  | { kind: 'expired'; taskId: number }
  /** A1, A4: a total budget (per run or session) could not grant a further model call; the queue ended the run failed. */
  | { kind: 'budget_exhausted'; taskId: number; budget: string }
  /** R9: the lease was lost; the run stopped with no terminal write. */
  | { kind: 'lost_lease'; taskId: number; generation: number; during: string }
  /** The database stayed busy, full or failing (a RetryableStoreError) past every retry: the run stopped with no terminal write; its lease will lapse. */
  | { kind: 'abandoned'; taskId: number; generation: number; reason: string }
  /**
   * An error the run did not expect (a bug in the core, say an InvariantError, or in a tool adapter)
   * ended it with no terminal write; its lease will lapse and the task is taken over as after a crash.
   * The worker logs it and goes on with its other runs.
   */
  | { kind: 'crashed'; taskId: number; generation: number; error: string }
  /** R7: a redelivered run that had already finished. */
  | { kind: 'skipped'; taskId: number; state: string };

export interface WorkerLogLine {
  workerId: string;
  taskId?: number;
  generation?: number;
  message: string;
}
