import type { History } from '../history.ts';

export interface ProviderOperation {
  requestKey: string;
  action: string;
  tenant: string;
  taskId: number;
  generation: number;
  actor: string;
  atMs: number;
  /** History index of the `provider-send` note: when the worker sent the request (it may land later). */
  sentIndex?: number;
  /** T2: a request to a twin of a team's external system (actors/external-twin.ts): the twin's name, the key the tool passed (absent: none) and the tool call that made it. */
  external?: string;
  idempotencyKey?: string;
  toolCallId?: string;
}

/**
 * An external system with effects (confirmation cards, refunds). Like a payment API it honours an
 * idempotency key: a repeat of a key it already executed returns the first result without acting
 * again. It keeps its own record of every request and every execution, so I8 is checked from outside
 * the queue, not from the queue's ledger.
 */
/** Q14: a tool call of the built-in tools as it started (a read or a write), kept without a history note (trace hashes unchanged). */
export interface ToolCallStart {
  taskId: number;
  generation: number;
  actor: string;
  tool: string;
  toolCallId: string;
  /** The monotonic instant it started, and the history's length then: the checker adds the clock's skew at that place. */
  atMs: number;
  historyLength: number;
}

export class ExternalProvider {
  readonly requests: ProviderOperation[] = [];
  readonly executions: ProviderOperation[] = [];
  /** Every built-in tool call as it started (actors/tools.ts), reads included: I8 judges each against its task's deadline. */
  readonly calls: ToolCallStart[] = [];
  private readonly results = new Map<string, unknown>();

  constructor(private readonly history: History) {}

  /**
   * Notes that a worker sent a request now; it executes when it reaches the provider, which a slow
   * network or a clock jump can put after the sender's lease ran out. Returns the note's index.
   */
  noteSent(operation: Pick<ProviderOperation, 'requestKey' | 'taskId' | 'generation' | 'actor'>): number {
    const index = this.history.length;
    this.history.note('provider-send', 'provider', { requestKey: operation.requestKey, taskId: operation.taskId, generation: operation.generation, by: operation.actor });
    return index;
  }

  noteCall(call: Omit<ToolCallStart, 'historyLength'>): void {
    this.calls.push({ ...call, historyLength: this.history.length });
  }

  execute(operation: ProviderOperation, payload: unknown): unknown {
    this.requests.push(operation);
    const first = this.results.get(operation.requestKey);
    if (first !== undefined) {
      this.history.note('provider-repeat', 'provider', { requestKey: operation.requestKey, taskId: operation.taskId });
      return first;
    }
    this.executions.push(operation);
    const result = { receipt: `r${this.executions.length}`, action: operation.action, payloadSize: JSON.stringify(payload ?? null).length };
    this.results.set(operation.requestKey, result);
    this.history.note('provider-execute', 'provider', {
      requestKey: operation.requestKey,
      action: operation.action,
      taskId: operation.taskId,
      generation: operation.generation,
      by: operation.actor,
    });
    return result;
  }
}
