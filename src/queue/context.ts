import type { Database } from 'better-sqlite3';
import type { Clock, Random } from '../ports.ts';
import type { Statements, TaskRow } from '../store/statements.ts';
import { InputError, InvariantError } from './errors.ts';
import { afterEnd, endRun } from '../runs/terminal.ts';
import { assertTransition } from './states.ts';
import type { QueueConfig, TaskState } from './types.ts';

/** What every queue operation needs: the handle, its prepared statements, config and ports. */
export interface QueueContext {
  db: Database;
  statements: Statements;
  config: QueueConfig;
  clock: Clock;
  random: Random;
  /**
   * Runs `work` in one BEGIN IMMEDIATE transaction and hands it the time, read after the write lock
   * was taken: a lease is judged at commit time, and events are stamped in commit order (Q8, Q15).
   */
  write<T>(operation: string, work: (at: number) => T): T;
  read<T>(operation: string, read: () => T): T;
}

/** Reads the injected clock once per operation and insists on integer milliseconds. */
export function now(context: QueueContext): number {
  const value = context.clock.now();
  if (!Number.isSafeInteger(value)) throw new InvariantError(`clock returned ${value}; expected integer milliseconds`);
  return value;
}

/**
 * Appends one event in the caller's transaction (Q15: transactional outbox). The caller's UPDATE
 * already bumped `event_seq` and returned it, so sequences stay contiguous from 1 per task.
 */
export function emit(
  context: QueueContext,
  taskId: number,
  seq: number,
  type: string,
  at: number,
  data: Record<string, unknown> = {},
  by?: { workerId: string; generation: number },
): void {
  context.statements.insertEvent.run(taskId, seq, type, at, JSON.stringify(data), by?.workerId ?? null, by?.generation ?? null);
}

/**
 * Moves a task that is not being written by its lease holder (expiry, confirmation, cancel, claim-time
 * checks). The state machine is checked first; the UPDATE re-checks state and generation so that a
 * row changed under us is never overwritten.
 */
export function moveTask(
  context: QueueContext,
  row: Pick<TaskRow, 'id' | 'state' | 'generation'>,
  to: TaskState,
  at: number,
  eventType: string,
  data: Record<string, unknown>,
  outcome: string | null = null,
): void {
  assertTransition(row.id, row.state as TaskState, to);
  const terminal = to !== 'ready' && to !== 'uncertain';
  const reason = String(data.reason ?? eventType);
  const ending = terminal ? endRun(context, row.id, to, at, reason) : {};
  const moved = context.statements.moveTask.get({
    id: row.id,
    fromState: row.state,
    generation: row.generation,
    state: to,
    outcome,
    finishedAt: terminal ? at : null,
  }) as { event_seq: number } | undefined;
  if (moved === undefined) throw new InvariantError(`task ${row.id} changed during its own transaction`);
  noteLiveness(context, row.state as TaskState, to);
  emit(context, row.id, moved.event_seq, eventType, at, { from: row.state, to, ...data, ...ending });
  if (terminal) afterEnd(context, row.id, to, at, reason);
}

/** Q3: keeps the live count (ready + running + uncertain) exact in the transaction that changes it. */
export function noteLiveness(context: QueueContext, from: TaskState | undefined, to: TaskState): void {
  const delta = (isLive(to) ? 1 : 0) - (from !== undefined && isLive(from) ? 1 : 0);
  if (delta !== 0) context.statements.adjustLive.run(delta);
}

function isLive(state: TaskState): boolean {
  return state === 'ready' || state === 'running' || state === 'uncertain';
}

/** Q8: does this (worker, generation) hold a live lease on this row right now? */
export function holdsLease<Row extends Pick<TaskRow, 'state' | 'worker_id' | 'generation' | 'lease_until'>>(
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

export const STALE_LEASE = Object.freeze({
  ok: false as const,
  error: 'stale_lease' as const,
  message: 'the lease is not held: the task moved on, was taken over, or the lease expired',
});
