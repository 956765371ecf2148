/**
 * The shapes the reference model works with: its configuration, requests, tasks, leases, and the answers
 * it gives (the fields of the real API's answers that the model predicts).
 */
import type { TaskState } from '../../src/index.ts';

export interface ReferenceConfig {
  capacity: number;
  globalLimit: number;
  perTenantLimit: number;
  leaseMs: number;
  agingPeriodMs: number;
  agingCap: number;
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  maxRetryAgeMs: number;
}

export interface ReferenceRequest {
  tenant: string;
  topic: string;
  version: number;
  priority: number;
  payload: string;
  deadline?: number;
}

export interface ReferenceTask {
  id: number;
  tenant: string;
  topic: string;
  version: number;
  priority: number;
  /** Q1: what the idempotency hash covers (priority, payload, deadline; store and tier are fixed here). */
  inputKey: string;
  deadline: number | undefined;
  state: TaskState;
  generation: number;
  attempts: number;
  workerId: string | undefined;
  leaseUntil: number | undefined;
  enqueuedAt: number;
  notBefore: number;
  firstClaimedAt: number | undefined;
  cancelRequested: boolean;
  outcome: 'done' | 'stale_input' | 'cancelled' | undefined;
  /** Q15: every transition appends one event; this is the per-task sequence reached so far. */
  events: number;
  checkpoints: number;
}

/** One lease a claim granted: the (task, worker, generation) a fenced write must present (Q8). */
export interface Lease {
  taskId: number;
  workerId: string;
  generation: number;
}

export type EnqueueAnswer =
  | { ok: true; taskId: number; status: 'enqueued' | 'duplicate' | 'replaced' | 'superseded' }
  | { ok: false; error: 'idempotency_conflict'; taskId: number }
  | { ok: false; error: 'queue_full' | 'expired' };
export type ClaimAnswer =
  | { ok: true; id: number; tenant: string; topic: string; version: number; priority: number; generation: number; attempt: number; leaseUntil: number; cancelRequested: boolean }
  | { ok: false; reason: 'empty' | 'quota' };
export type Stale = { ok: false; error: 'stale_lease' };
export type HeartbeatAnswer = { ok: true; leaseUntil: number; cancelRequested: boolean } | Stale;
export type CompleteAnswer = { ok: true; outcome: 'done' | 'stale_input' } | Stale | { ok: false; error: 'expired' };
export type FailAnswer = { ok: true; next: 'retry'; notBefore: number } | { ok: true; next: 'failed' | 'cancelled' } | Stale;
export type AcknowledgeAnswer = { ok: true } | Stale | { ok: false; error: 'not_requested' };
export type SeqAnswer = { ok: true; seq: number } | Stale;
export type CheckpointAnswer = { ok: true; seq: number; eventSeq: number } | Stale;
export type ConfirmAnswer =
  | { ok: true; next: 'ready' | 'failed' | 'cancelled' | 'expired' }
  | { ok: false; error: 'not_found' | 'not_uncertain' | 'stale_generation' | 'invalid_input' };
export type CancelAnswer =
  | { ok: true; state: 'cancelled' | 'cancel_requested' }
  | { ok: false; error: 'not_found' }
  | { ok: false; error: 'already_terminal'; state: TaskState };
