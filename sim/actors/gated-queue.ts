import type { WorkQueue } from '../../src/queue/types.ts';
import type { History, OperationFields } from '../history.ts';
import type { Connection } from '../store/fleet.ts';
import { DeadIncarnationError, type Incarnation } from './incarnation.ts';

/** Calls that write (each one BEGIN IMMEDIATE transaction in the store, which a competing writer can keep busy, faults/busy.ts). */
const WRITES = new Set(['claim', 'heartbeat', 'complete', 'fail', 'appendEvent', 'acknowledgeCancel', 'checkpoint', 'recordEffect', 'interrupt', 'reserve']);
const RECORDED = new Set([...WRITES, 'lastCheckpoint', 'get', 'effectResult']);

export interface QueueFaultHooks {
  /** Called after a call returned, to fire kill points such as 'after_terminal_write'. */
  after(op: string, args: readonly unknown[], result: unknown): void;
}

/** One actor's own queue on its own connection (sim/store/fleet.ts). */
export interface ActorQueue {
  queue: WorkQueue;
  connection: Connection;
}

/**
 * The queue as one worker incarnation sees it: its own queue on its own connection (the fleet), every
 * call recorded in the history (invoke, then ok or fail with its reason: a BusyError the store gave up
 * with is recorded by its code, db_busy). Nothing here knows whether the scheduler is up: a call made
 * while it is down goes to the queue like any other, and its transaction meets the downtime at its BEGIN
 * beneath it (sim/store/fleet.ts), failing as against a closed database; what the worker does with that
 * (its store retries, its backoff) is the production code's, as it would be in production.
 */
export function gatedQueue(own: ActorQueue, incarnation: Incarnation, history: History, hooks: QueueFaultHooks): WorkQueue {
  const queue = own.queue as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
  return new Proxy({} as WorkQueue, {
    get(_target, property) {
      const name = String(property);
      if (name === 'config') return own.queue.config;
      return (...args: unknown[]): Promise<unknown> => {
        if (!incarnation.alive) return Promise.reject(new DeadIncarnationError(incarnation.id, name));
        if (!RECORDED.has(name)) return queue[name]!(...args);
        const fields = fieldsOf(name, args);
        const invoke = history.invoke(incarnation.id, name, fields);
        const pending = recordedCall(own.connection, invoke, () => queue[name]!(...args), typeof args[0] === 'number' ? args[0] : undefined);
        return pending.then(
          ({ result, ev }) => {
            recordResult(history, invoke, name, result, ev);
            hooks.after(name, args, result);
            return result;
          },
          (error: unknown) => {
            history.fail(invoke, (error as { code?: string }).code ?? String(error));
            throw error;
          },
        );
      };
    },
  });
}

/**
 * Makes one recorded call on an actor's connection: the call's transaction takes the tag, and `ev`
 * is the event cursor the moment that transaction committed (or ran, for a read), however long it
 * waited at its BEGIN and whatever other actors committed before or after it (sim/store/fleet.ts).
 */
export async function recordedCall<T>(connection: Connection, invoke: number, call: () => Promise<T>, taskId?: number): Promise<{ result: T; ev: number }> {
  connection.tagNext(invoke, taskId);
  let pending: Promise<T>;
  try {
    pending = call();
  } catch (error) {
    pending = Promise.reject(error);
  } finally {
    connection.untag();
  }
  const result = await pending;
  // A call answered without a transaction (an enqueue refused invalid_input before its write) changed
  // nothing: the cursor now is as good a place for it as any, every event up to it committed before.
  return { result, ev: connection.take(invoke) ?? connection.cursorNow() };
}

function fieldsOf(op: string, args: readonly unknown[]): OperationFields {
  if (op === 'claim') return {};
  const fields: OperationFields = {};
  if (typeof args[0] === 'number') fields.taskId = args[0];
  if (typeof args[2] === 'number') fields.generation = args[2];
  if (op === 'checkpoint') {
    const write = args[3] as { kind: string; step: number };
    fields.data = { kind: write.kind, step: write.step };
  } else if (op === 'fail') {
    fields.data = { errorClass: String((args[3] as { errorClass?: unknown })?.errorClass) };
  } else if (op === 'appendEvent') {
    fields.data = { type: String(args[3]) };
  } else if (op === 'recordEffect') {
    fields.data = { requestKey: String((args[3] as { requestKey?: unknown })?.requestKey) };
  } else if (op === 'effectResult') {
    fields.data = { requestKey: String(args[0]) };
    delete fields.taskId;
  }
  return fields;
}

/**
 * `ev` is the event cursor right after the call: the events with ids up to it were committed before
 * the call returned. Checkers use it to place history operations exactly within the event log.
 */
function recordResult(history: History, invoke: number, op: string, result: unknown, ev: number): void {
  const value = result as { ok?: boolean; error?: string; reason?: string; task?: { id: number; generation: number }; outcome?: string; next?: string };
  if (value === undefined || value === null || typeof value !== 'object' || value.ok === undefined) {
    history.ok(invoke, { data: { ev } });
    return;
  }
  if (value.ok === false) {
    history.fail(invoke, value.error ?? value.reason ?? 'refused', { data: { ev } });
    return;
  }
  if (op === 'claim' && value.task) {
    history.ok(invoke, { taskId: value.task.id, generation: value.task.generation, data: { ev } });
    return;
  }
  const outcome = value.outcome ?? value.next;
  history.ok(invoke, { data: outcome === undefined ? { ev } : { ev, outcome } });
}
