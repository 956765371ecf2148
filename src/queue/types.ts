/**
 * The public shapes of the work queue (SPEC, Core API). Names here are a contract: extend, don't rename.
 */

export type TaskState =
  | 'ready'
  | 'running'
  | 'uncertain'
  | 'done'
  | 'failed'
  | 'superseded'
  | 'cancelled'
  | 'expired';

export type Tier = 'standard' | 'long';

/** Error classes a worker reports on `fail` (Q16). */
export const RETRYABLE_ERROR_CLASSES = ['rate_limited', 'transient_network', 'db_busy', 'tool_timeout'] as const;
/** A7: `invalid_plan` is a model decision whose tool-call graph is refused (a cycle, an unknown or repeated id): nothing was called. */
export const FATAL_ERROR_CLASSES = ['permission_denied', 'invalid_tool_schema', 'policy_rejected', 'business_error', 'invalid_plan'] as const;
export type RetryableErrorClass = (typeof RETRYABLE_ERROR_CLASSES)[number];
export type FatalErrorClass = (typeof FATAL_ERROR_CLASSES)[number];
export type ErrorClass = RetryableErrorClass | FatalErrorClass;

export interface QueueConfig {
  /** Tasks in ready + running + uncertain before a new topic gets queue_full (Q3). */
  capacity: number;
  /** Running + uncertain tasks allowed at once, across tenants (Q6). */
  globalLimit: number;
  /** Running + uncertain tasks allowed at once for one tenant (Q6). */
  perTenantLimit: number;
  /** Per-tenant overrides of perTenantLimit; 0 pauses a tenant (A2: a paused tenant gets no new leases). */
  tenantLimits: Record<string, number>;
  /** Lease length granted by claim and heartbeat (Q7, Q9). */
  leaseMs: number;
  /** How often workers heartbeat; leaseMs must be at least 3x this (Q9). */
  heartbeatMs: number;
  /** Aging: one point of score per agingPeriodMs of waiting, at most agingCap points (Q4). */
  agingPeriodMs: number;
  agingCap: number;
  /** Claims before a task that never finishes ends failed (Q11, Q16). */
  maxAttempts: number;
  /** Deliveries before a task goes to the dead-letter table (R6). */
  maxDeliveries: number;
  /** Retry backoff: min(baseDelayMs * 2^attempts, maxDelayMs) * jitter in [0.8, 1.2] (Q16). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** No retry once this long has passed since the first claim (Q16). */
  maxRetryAgeMs: number;
  /** Largest accepted input, as UTF-8 JSON (enqueue validation). */
  maxInputBytes: number;
  /** Width of the incident-candidate time bucket (Q17). */
  incidentBucketMs: number;
  /** Credits held at enqueue per tier (R4). */
  tierHolds: Record<Tier, number>;
  /** Tokens per credit when a run's checkpointed usage is charged (R4). */
  tokensPerCredit: number;
  /** A hold whose run sat uncertain with no live worker this long is released (R4). */
  holdTtlMs: number;
  /** R5: 'hold' keeps uncertain tasks until confirmStopped; 'auto' re-queues resumable ones after graceMs. */
  reconciliation: 'hold' | 'auto';
  graceMs: number;
  /** SQLite busy timeout and bounded retries of a transaction that met SQLITE_BUSY (Q18). */
  busyTimeoutMs: number;
  busyRetries: number;
  /** A1: named budgets (concurrency, rate, total), global or per tenant. Tasks name what they need at enqueue. */
  budgets: Record<string, BudgetSpec>;
  /** A2: tasks beyond capacity that critical work may still occupy; critical work is never rejected for capacity within it. */
  criticalHeadroom: number;
  /**
   * A6: how the versions of one session (tenant, topic) run. `serial` (default): one running or
   * uncertain task per session, a newer version waits (DEFER session_busy); `cancel_in_progress`: the
   * same, and a newer version's enqueue persists a cancel of the running one (Q13); `versioned`: they
   * run at once and only the newest version's result counts (the older ends stale_input, Q2).
   */
  sessionPolicy: SessionPolicy;
  /**
   * A3: how the claim chooses among tenants. `priority` (default): the best task by aged score across
   * tenants (Q4). `fair_share`: among tenants with eligible work, the one with the least weighted
   * consumed service (model tokens; src/queue/fair-share.ts states the bound), then Q4 within it.
   */
  fairness: 'priority' | 'fair_share';
  /** A3: integer weights per tenant for fair_share (a tenant not named weighs 1). */
  tenantWeights: Record<string, number>;
  /** A5: how long the oldest eligible task may wait while slots are free before stuckWhileCapacityNormal fires. */
  stuckAfterMs: number;
}

export type SessionPolicy = 'serial' | 'cancel_in_progress' | 'versioned';
export const SESSION_POLICIES: readonly SessionPolicy[] = ['serial', 'cancel_in_progress', 'versioned'];

/**
 * A1: one named budget. `scope` says whose units they are: one pool for everyone (`global`) or one per
 * tenant (`tenant`). A `total` budget caps what one run (or one session: tenant and topic) uses in all.
 * `meter` says which checkpointed usage consumes it; without one, what is reserved is what is used.
 */
export type BudgetSpec =
  | { kind: 'concurrency'; limit: number; scope?: BudgetScope }
  | { kind: 'rate'; capacity: number; refill: number; periodMs: number; scope?: BudgetScope; meter?: BudgetMeter }
  | { kind: 'total'; limit: number; per: 'run' | 'session'; meter?: BudgetMeter };
export type BudgetScope = 'global' | 'tenant';
/** Which usage of a run a budget is consumed by: model tokens (input + output) or model calls. */
export type BudgetMeter = 'tokens' | 'modelCalls';
/** What a task needs of each named budget, given by the trusted caller at enqueue (A1). */
export type Needs = Record<string, number>;

/** A2: an admission decision. RUN takes the slot; DEFER waits (retryAt when the wait has a known end); REJECT refuses. */
export type AdmissionAction = 'RUN' | 'DEFER' | 'REJECT';
export const ADMISSION_REASONS = [
  'tenant_paused',
  'capacity',
  'over_capacity',
  'queue_full',
  'session_busy',
  'rate_limited',
  'budget',
  'expired',
  'exceeds_budget',
] as const;
export type AdmissionReason = (typeof ADMISSION_REASONS)[number];
export interface AdmissionDecision {
  action: AdmissionAction;
  reason?: AdmissionReason;
  taskId?: number;
  /** For a rate DEFER: the first instant at which the bucket holds enough. */
  retryAt?: number;
  /** For a budget DEFER or REJECT: the budget that said no. */
  budget?: string;
}

export interface EnqueueRequest {
  tenant: string;
  topic: string;
  version: number;
  priority: number;
  input: unknown;
  store?: string;
  tier?: Tier;
  deadline?: number;
  /** Verified context used for incident grouping (Q17); never a source of priority. */
  context?: IncidentContext;
  /** A1: units of each named budget one attempt needs, from the trusted caller (never from payload text). */
  needs?: Needs;
  /** A2: a trusted priority class: never rejected for capacity, admitted into the critical headroom. */
  critical?: boolean;
}

export interface IncidentContext {
  brand?: string;
  service?: string;
  stage?: string;
  errorCode?: string;
  deployVersion?: string;
  campaign?: string;
}

export type EnqueueResult =
  | { ok: true; taskId: number; status: 'enqueued' | 'duplicate' | 'replaced' | 'superseded' }
  | {
      ok: false;
      error: 'idempotency_conflict' | 'queue_full' | 'expired' | 'invalid_input' | 'over_capacity' | 'exceeds_budget';
      message: string;
      /** For exceeds_budget: the budget no grant of which could ever cover the need. */
      budget?: string;
      /** For invalid_input: the field that was wrong. */
      field?: string;
      /** For idempotency_conflict: the task that holds the key. */
      taskId?: number;
    };

export interface ClaimedTask {
  id: number;
  tenant: string;
  topic: string;
  version: number;
  priority: number;
  input: unknown;
  generation: number;
  attempt: number;
  leaseUntil: number;
  tier: Tier;
  deadline?: number;
  cancelRequested: boolean;
  /** A1: what the claim reserved for this attempt, per budget (absent when the task needs none). */
  needs?: Needs;
  critical?: boolean;
}

export type ClaimResult =
  | { ok: true; task: ClaimedTask }
  | { ok: false; reason: 'empty' | 'quota'; admission?: AdmissionDecision & { action: 'DEFER' } };

/** A1: a fenced reservation beyond the claim's, for a further model call. */
export type ReserveResult =
  | { ok: true; reserved: Needs }
  | StaleLease
  | { ok: false; error: 'rate_limited' | 'budget'; budget: string; retryAt?: number; message: string }
  | { ok: false; error: 'invalid_input'; field: string; message: string };

/** A1: one budget's level at an instant (a rate bucket's level is in whole units, rounded down). */
export interface BudgetLevel {
  budget: string;
  /** '' for a global budget; the tenant for a per-tenant one; the task or session for a total. */
  scope: string;
  kind: BudgetSpec['kind'];
  /** Units available now (rate), held (concurrency) or used (total). */
  level: number;
  limit: number;
  updatedAt: number;
}

/** A1, I16: one attempt's reservation of one budget: reserved = consumed + released once released. */
export interface ReservationView {
  taskId: number;
  generation: number;
  budget: string;
  scope: string;
  reserved: number;
  consumed: number;
  /** null while the units are held. */
  released: number | null;
  reservedAt: number;
  releasedAt: number | null;
}

/** A2: a paused tenant, as persisted. */
export interface TenantPause {
  tenant: string;
  reason: string;
  at: number;
}

/** A2: one recorded admission decision (a DEFER per change of task and reason, every REJECT, every pause change). */
export interface AdmissionRecord {
  at: number;
  action: AdmissionAction | 'PAUSE' | 'RESUME';
  reason: string;
  tenant: string;
  taskId?: number;
  retryAt?: number;
  budget?: string;
}

export type StaleLease = { ok: false; error: 'stale_lease'; message: string };

export type HeartbeatResult = { ok: true; leaseUntil: number; cancelRequested: boolean } | StaleLease;
export type CompleteResult =
  | { ok: true; outcome: 'done' | 'stale_input' }
  | StaleLease
  /** Q14: the deadline passed before the commit; the result was dropped and the task is expired. */
  | { ok: false; error: 'expired'; message: string };
export type FailResult =
  | { ok: true; next: 'retry' | 'failed' | 'cancelled'; notBefore?: number }
  | StaleLease
  | { ok: false; error: 'invalid_input'; message: string; field: string };
export type ConfirmStoppedResult =
  | { ok: true; next: 'ready' | 'failed' | 'cancelled' | 'expired' }
  | { ok: false; error: 'not_found' | 'not_uncertain' | 'stale_generation' | 'invalid_input'; message: string };
export type CancelResult =
  | { ok: true; state: 'cancelled' | 'cancel_requested' }
  | { ok: false; error: 'not_found' | 'already_terminal'; state?: TaskState; message: string };
/**
 * O1: a dead letter sent back to ready by an operator (queue.redrive). Refused, with nothing changed,
 * for a task that is not a dead letter (not failed, or failed on purpose and never dead-lettered, or
 * trimmed from the table), one a newer version of its topic replaced, or a queue at capacity (Q3).
 */
export type RedriveResult =
  | { ok: true; state: 'ready' }
  | { ok: false; error: 'not_dead_lettered' | 'superseded' | 'queue_full'; message: string };
export type AppendEventResult = { ok: true; seq: number } | StaleLease;

export interface FailureReport {
  errorClass: ErrorClass;
  message: string;
}

export interface TaskView {
  id: number;
  tenant: string;
  topic: string;
  version: number;
  priority: number;
  state: TaskState;
  generation: number;
  attempts: number;
  deliveries: number;
  workerId?: string;
  leaseUntil?: number;
  result?: unknown;
  outcome?: 'done' | 'stale_input' | 'cancelled' | 'interrupted';
  errorClass?: string;
  errorMessage?: string;
  tier: Tier;
  store?: string;
  deadline?: number;
  cancelRequested: boolean;
  enqueuedAt: number;
  notBefore: number;
  queueWaitMs?: number;
  runMs?: number;
}

export interface TaskEvent {
  /** Global commit order across tasks: the outbox cursor. */
  id: number;
  taskId: number;
  seq: number;
  type: string;
  at: number;
  data: Record<string, unknown>;
  /** The lease holder that wrote it, for events written under a lease (Q8). */
  workerId?: string;
  generation?: number;
}

export interface Rejection {
  tenant: string;
  topic: string;
  version: number;
  reason: string;
  at: number;
}

export interface Snapshot {
  at: number;
  tasks: TaskView[];
  countsByState: Record<TaskState, number>;
  live: number;
  occupied: { global: number; byTenant: Record<string, number> };
  rejections: Rejection[];
}

export interface IncidentCandidate {
  tenant: string;
  brand: string;
  service: string;
  stage: string;
  errorCode: string;
  deployVersion: string;
  campaign: string;
  bucketStart: number;
  taskIds: number[];
  confirmedIncident: false;
}

/** Cumulative usage of a run, as checkpointed (R1, R4). */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  modelCalls: number;
}

export interface CheckpointWrite {
  /** A: after the model decision (its output and tool calls); B: after all tool results of the step. */
  kind: 'A' | 'B';
  step: number;
  /** Everything needed to resume: messages, budgets, candidate items, last event sequence sent. */
  state: unknown;
  usage: Usage;
  /** R5: for A, whether every pending tool call is read-only or goes through the effect ledger. */
  requeueSafe?: boolean;
}

export interface Checkpoint extends CheckpointWrite {
  taskId: number;
  seq: number;
  generation: number;
  at: number;
  /** The event sequence of the checkpoint's event, named by task_resumed (R2). */
  eventSeq: number;
}

export type CheckpointResult = { ok: true; seq: number; eventSeq: number } | StaleLease;

export interface EffectRecord {
  requestKey: string;
  action: string;
  result: unknown;
}

export type EffectRecordResult = { ok: true; repeated: boolean; result: unknown } | StaleLease;

export interface HoldView {
  taskId: number;
  tenant: string;
  tier: Tier;
  credits: number;
  state: 'held' | 'settled' | 'released';
  chargedCredits: number | null;
  usage: Usage | null;
  reason: string | null;
  heldAt: number;
  closedAt: number | null;
}

export interface DeadLetter {
  taskId: number;
  tenant: string;
  topic: string;
  version: number;
  reason: string;
  reasons: string[];
  at: number;
}

/** R4: one row of the credit ledger, written in the transaction that closed a hold. */
export interface CreditEntry {
  taskId: number;
  tenant: string;
  kind: 'charge' | 'release';
  credits: number;
  at: number;
}

/** Q18: one applied schema migration. */
export interface AppliedMigration {
  version: number;
  name: string;
  appliedAt: number;
}

export interface EffectView {
  requestKey: string;
  taskId: number;
  tenant: string;
  action: string;
  generation: number;
  at: number;
}

/**
 * The work queue (SPEC Core API). Every method returns a promise (P2): each is one transaction of the
 * store (or one read), so every call is an await point, which the simulator uses to interleave actors.
 */
export interface WorkQueue {
  readonly config: Readonly<QueueConfig>;
  enqueue(request: EnqueueRequest): Promise<EnqueueResult>;
  claim(workerId: string): Promise<ClaimResult>;
  heartbeat(taskId: number, workerId: string, generation: number): Promise<HeartbeatResult>;
  complete(taskId: number, workerId: string, generation: number, result: unknown): Promise<CompleteResult>;
  fail(taskId: number, workerId: string, generation: number, failure: FailureReport): Promise<FailResult>;
  /** A fenced event append from the holder of the lease (Q8). */
  appendEvent(taskId: number, workerId: string, generation: number, type: string, data?: Record<string, unknown>): Promise<AppendEventResult>;
  /** The holder ends the run `cancelled` after seeing cancelRequested at a step boundary (Q13). */
  acknowledgeCancel(taskId: number, workerId: string, generation: number): Promise<{ ok: true } | StaleLease | { ok: false; error: 'not_requested'; message: string }>;
  /** R1: a fenced checkpoint from the lease holder. */
  checkpoint(taskId: number, workerId: string, generation: number, write: CheckpointWrite): Promise<CheckpointResult>;
  /** R2: the newest checkpoint of a run, whichever generation wrote it. */
  lastCheckpoint(taskId: number): Promise<Checkpoint | undefined>;
  /** R3: the first recorded result of an effect, or undefined. */
  effectResult(requestKey: string): Promise<unknown | undefined>;
  /** R3: fenced; records an effect once per request key and returns the first result. */
  recordEffect(taskId: number, workerId: string, generation: number, effect: EffectRecord): Promise<EffectRecordResult>;
  /** R5: one reconciler pass (re-queue under 'auto'; release stale holds under both). */
  reconcile(): Promise<{ requeued: number; releasedHolds: number }>;
  /**
   * R8: the holder hands an unfinished run back to ready with an `interrupted` event; a run with a
   * pending cancel ends `cancelled` instead (Q13), and `next` says which.
   */
  interrupt(taskId: number, workerId: string, generation: number, reason: string): Promise<{ ok: true; next: 'ready' | 'cancelled' } | StaleLease>;
  /** Admin views of holds (R4), dead letters (R6) and the effect ledger (R3). */
  holds(): Promise<HoldView[]>;
  deadLetters(): Promise<DeadLetter[]>;
  effects(): Promise<EffectView[]>;
  /** Admin audits: the credit ledger in write order (R4) and the applied schema migrations (Q18). */
  creditLedger(): Promise<CreditEntry[]>;
  schemaMigrations(): Promise<AppliedMigration[]>;
  expireLeases(): Promise<number>;
  confirmStopped(taskId: number, generation: number, source: string): Promise<ConfirmStoppedResult>;
  cancel(taskId: number): Promise<CancelResult>;
  /**
   * O1: an operator sends a dead letter (R6) back to ready for a fresh set of attempts and deliveries;
   * its dead letter leaves the table and its reason history goes into the `redriven` event.
   */
  redrive(taskId: number): Promise<RedriveResult>;
  get(taskId: number): Promise<TaskView | undefined>;
  events(taskId: number): Promise<TaskEvent[]>;
  /** Every event of every task in commit order (for checkers and audits; admin only). */
  allEvents(): Promise<TaskEvent[]>;
  /** Q15 outbox: the id of the newest committed event, and the events after a cursor in commit order. */
  eventCursor(): Promise<number>;
  eventsSince(cursor: number, limit?: number): Promise<TaskEvent[]>;
  listForTenant(tenant: string): Promise<TaskView[]>;
  /** A5 queue depth: tasks counted against capacity (ready + running + uncertain), from a kept counter. */
  liveCount(): Promise<number>;
  /** Admin view of the tasks in one state (e.g. the uncertain ones a supervisor must look at). */
  tasksInState(state: TaskState): Promise<TaskView[]>;
  snapshot(): Promise<Snapshot>;
  rejections(): Promise<Rejection[]>;
  incidentCandidates(range: { from: number; to: number; minGroupSize?: number }): Promise<IncidentCandidate[]>;
  /** A2: a paused tenant gets no new lease (running ones continue); persisted, an event per change. */
  pauseTenant(tenant: string, reason: string): Promise<{ ok: true; changed: boolean } | { ok: false; error: 'invalid_input'; field: string; message: string }>;
  resumeTenant(tenant: string): Promise<{ ok: true; changed: boolean } | { ok: false; error: 'invalid_input'; field: string; message: string }>;
  pausedTenants(): Promise<TenantPause[]>;
  /** A1: fenced; reserves `needs` (default: the task's metered needs again) for a further model call. */
  reserve(taskId: number, workerId: string, generation: number, needs?: Needs): Promise<ReserveResult>;
  /** A1: every budget's level that has been touched, at the queue clock's now. */
  budgetLevels(): Promise<BudgetLevel[]>;
  /** A2: the recorded admission decisions in commit order (admin). */
  admissionDecisions(): Promise<AdmissionRecord[]>;
  /** A1, I16: every attempt's reservation of every budget (admin audit). */
  reservations(): Promise<ReservationView[]>;
  /** A3: each tenant's consumed service under fair share, in model tokens (admin audit). */
  tenantServices(): Promise<{ tenant: string; service: number }[]>;
  /** A5: the control-plane signals at the queue clock's now (src/queue/signals.ts states each window). */
  signals(): Promise<Signals>;
  /**
   * W1: calls `listener` after a transaction that made a task claimable committed (an enqueue, a retry
   * due now, a release, a confirmation or re-queue to ready, a tenant's resume): on PostgreSQL from any
   * host, by LISTEN/NOTIFY; on SQLite from any queue of this process on the same file. A hint that may
   * come late, twice or not at all, so a worker still polls. Returns the function that stops it; close()
   * stops them all.
   */
  watch(listener: () => void): () => void;
  /**
   * W1: a counter that changes when another connection committed (SQLite's `PRAGMA data_version`): an
   * idle worker of another process reads it often and claims only when it moved. Undefined on
   * PostgreSQL, where `watch` hears every host.
   */
  changeCounter(): Promise<number | undefined>;
  close(): Promise<void>;
}

/** A5: p50/p95/max of a latency over the signals window (null when it holds no sample). */
export interface SignalSummary {
  count: number;
  p50: number | null;
  p95: number | null;
  max: number | null;
}

/** A5: what `queue.signals()` answers. Counts are totals since the database was created. */
export interface Signals {
  /** The queue clock's now the signals were read at. */
  at: number;
  /** Ready tasks per tenant and priority. */
  depth: { tenant: string; priority: number; n: number }[];
  /** Recorded admission decisions by action and reason (RUN: every claim, reason 'admitted'). */
  decisions: { action: string; reason: string; n: number }[];
  /** Active leases (running tasks) and their ages. */
  leases: { taskId: number; tenant: string; workerId: string; generation: number; ageMs: number; expiresInMs: number }[];
  /** Retries (fail -> ready) by error class. */
  retries: { errorClass: string; n: number }[];
  /** Uncertain tasks awaiting reconciliation. */
  awaitingReconciliation: number;
  /** Accepted to first claim. */
  waitMs: SignalSummary;
  /** Last claim to the result. */
  runMs: SignalSummary;
  /** Rejected work by reason. */
  rejections: { reason: string; n: number }[];
  /** Per tenant with ready work, its oldest ready task. */
  oldestWaiting: { tenant: string; taskId: number; enqueuedAt: number; waitedMs: number }[];
  alerts: { stuckWhileCapacityNormal: boolean };
}
