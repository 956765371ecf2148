import type { Clock, Random } from '../ports.ts';
import type { ReadsFirst, Store, StoreTx, Step } from '../store/store.ts';
import { InputError, InvariantError } from './errors.ts';
import type { AdmissionPolicy } from './admission.ts';
import type { QueueConfig } from './types.ts';

/** What every queue operation needs: the store, config and ports. */
export interface QueueContext {
  store: Store;
  config: QueueConfig;
  clock: Clock;
  random: Random;
  /** A2: the admission policy in force (seed 004's admit() unless the team replaced it). */
  admission: AdmissionPolicy;
}

/** Reads the injected clock once per operation and insists on integer milliseconds. */
export function now(context: QueueContext): number {
  const value = context.clock.now();
  if (!Number.isSafeInteger(value)) throw new InvariantError(`clock returned ${value}; expected integer milliseconds`);
  return value;
}

/**
 * Runs `body` as one write transaction of the store, handing it the time read after the write lock was
 * taken: a lease is judged at commit time, and events are stamped in commit order (Q8, Q15).
 */
/** One write transaction; `readsFirst` tells the store what the body reads first (store.ts ReadsFirst). */
export function write<T>(context: QueueContext, operation: string, body: (tx: StoreTx, at: number) => Step<T>, readsFirst?: ReadsFirst): Promise<T> {
  return context.store.write(operation, () => now(context), readsFirst === undefined ? body : Object.assign((tx: StoreTx, at: number) => body(tx, at), { readsFirst }));
}

export function read<T>(context: QueueContext, operation: string, body: (tx: StoreTx) => Step<T>): Promise<T> {
  return context.store.read(operation, body);
}

/**
 * Appends one event that is not a state change in the caller's transaction (Q15: transactional
 * outbox); transition() appends those of state changes. The caller's statement already bumped
 * `event_seq` and returned it, so sequences stay contiguous from 1 per task.
 */
export function* emit(
  tx: StoreTx,
  taskId: number,
  seq: number,
  type: string,
  at: number,
  data: Record<string, unknown> = {},
  by?: { workerId: string; generation: number },
): Step<void> {
  yield* tx.eventAppend(taskId, seq, type, at, JSON.stringify(data), by?.workerId ?? null, by?.generation ?? null);
}

/** Q8: does this (worker, generation) hold a live lease on this row right now? */
export function holdsLease<Row extends { state: string; worker_id: string | null; generation: number; lease_until: number | null }>(
  row: Row | undefined,
  workerId: string,
  generation: number,
  at: number,
): row is Row {
  return (
    row !== undefined &&
    row.state === 'running' &&
    row.worker_id === workerId &&
    row.generation === generation &&
    row.lease_until !== null &&
    row.lease_until > at
  );
}

export function requireTaskId(taskId: unknown): number {
  if (typeof taskId !== 'number' || !Number.isSafeInteger(taskId) || taskId < 1) {
    throw new InputError('taskId', `expected a positive integer, got ${String(taskId)}`);
  }
  return taskId;
}

export function requireWorkerId(workerId: unknown): string {
  if (typeof workerId !== 'string' || workerId === '') throw new InputError('workerId', 'expected a non-empty string');
  return workerId;
}

export function requireGeneration(generation: unknown): number {
  if (typeof generation !== 'number' || !Number.isSafeInteger(generation) || generation < 0) {
    throw new InputError('generation', `expected a non-negative integer, got ${String(generation)}`);
  }
  return generation;
}

/** A lease holder's identity, checked (Q8). */
export interface Holder {
  taskId: number;
  workerId: string;
  generation: number;
}

export function holder(taskId: unknown, workerId: unknown, generation: unknown): Holder {
  return { taskId: requireTaskId(taskId), workerId: requireWorkerId(workerId), generation: requireGeneration(generation) };
}

/** The fence of a holder's statement at `at` (Q8). */
export function fence(who: Holder, at: number) {
  return { id: who.taskId, workerId: who.workerId, generation: who.generation, now: at };
}

export const STALE_LEASE = Object.freeze({
  ok: false as const,
  error: 'stale_lease' as const,
  message: 'the lease is not held: the task moved on, was taken over, or the lease expired',
});
