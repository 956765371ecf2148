/**
 * The store interface: the one seam between the queue's decisions (scoring, quotas, aging, fencing
 * rules, the state machine: src/queue, src/runs) and the SQL that keeps them (SQLite here; PostgreSQL
 * is a second implementation of this file's interfaces, not a fork of the decisions). River's driver
 * interface is the model: each method is one statement, named for what it does.
 *
 * A transaction body is a generator over `StoreTx`: every statement is `yield* tx.someStatement(...)`.
 * A synchronous driver (better-sqlite3) runs the body to its end in one go inside BEGIN IMMEDIATE; an
 * asynchronous driver (pg, PGlite) yields a promise per statement and resumes the body when it settles.
 * A body can therefore do nothing but run its own statements: there is no way to await a model or tool
 * call inside a transaction (Q5). Time is always a parameter (`at`), never the database's clock.
 */
import type { TaskState } from '../queue/types.ts';

/**
 * One step of a transaction body: yields only to an asynchronous driver, returns the statement's
 * result. Bodies are generators; a synchronous driver's statements are finished iterators (no yield).
 * Either way a step is consumed where it is made: `yield* tx.statement(...)`.
 */
export type Step<T> = Iterator<unknown, T, unknown> & Iterable<unknown, T, unknown>;

/** A row of `tasks` as the store returns it. */
export interface TaskRow {
  id: number;
  tenant: string;
  topic: string;
  version: number;
  input_hash: string;
  priority: number;
  input: string;
  store: string | null;
  tier: string;
  deadline: number | null;
  context: string | null;
  state: TaskState;
  generation: number;
  attempts: number;
  deliveries: number;
  worker_id: string | null;
  lease_until: number | null;
  enqueued_at: number;
  not_before: number;
  first_claimed_at: number | null;
  claimed_at: number | null;
  finished_at: number | null;
  queue_wait_ms: number | null;
  run_ms: number | null;
  cancel_requested: number;
  outcome: string | null;
  result: string | null;
  error_class: string | null;
  error_message: string | null;
  event_seq: number;
  hold_state: 'held' | 'settled' | 'released' | null;
  needs: string | null;
  critical: number;
  deferred: string | null;
}

/** What every transition needs to know of the row it moves. */
export type MovableRow = Pick<TaskRow, 'id' | 'tenant' | 'state' | 'generation' | 'hold_state'>;

/** A task holding a slot, as the claim reads it (from the holding index alone). */
export type HoldingRow = Pick<TaskRow, 'id' | 'tenant' | 'state' | 'generation' | 'worker_id' | 'lease_until' | 'hold_state'>;

/** A ready task as the claim reads it once it has won, with its aged score at claim time. */
export type CandidateRow = Pick<
  TaskRow,
  | 'id'
  | 'tenant'
  | 'topic'
  | 'version'
  | 'state'
  | 'generation'
  | 'attempts'
  | 'priority'
  | 'input'
  | 'tier'
  | 'enqueued_at'
  | 'deadline'
  | 'first_claimed_at'
  | 'cancel_requested'
  | 'event_seq'
  | 'hold_state'
  | 'needs'
  | 'critical'
  | 'deferred'
> & { score: number };

/** A level head as the claim's walk reads it from the index alone. */
export type LevelHeadRow = Pick<TaskRow, 'id' | 'priority' | 'enqueued_at'> & { score: number };

/** A running task as the holder's terminal writes read it. */
export type CompletingRow = Pick<
  TaskRow,
  | 'id'
  | 'tenant'
  | 'topic'
  | 'version'
  | 'state'
  | 'worker_id'
  | 'generation'
  | 'lease_until'
  | 'deadline'
  | 'cancel_requested'
  | 'event_seq'
  | 'hold_state'
  | 'attempts'
  | 'deliveries'
  | 'first_claimed_at'
>;

export interface EventRow {
  id: number;
  task_id: number;
  seq: number;
  type: string;
  at: number;
  data: string;
  worker_id: string | null;
  generation: number | null;
}

export interface CheckpointRow {
  task_id: number;
  seq: number;
  generation: number;
  kind: 'A' | 'B';
  step: number;
  state: string;
  usage: string;
  at: number;
  event_seq: number;
}

export interface HoldRow {
  task_id: number;
  tenant: string;
  tier: string;
  credits: number;
  state: 'held' | 'settled' | 'released';
  charged_credits: number | null;
  usage: string | null;
  reason: string | null;
  held_at: number;
  closed_at: number | null;
}

export interface DeadLetterRow {
  task_id: number;
  tenant: string;
  topic: string;
  version: number;
  reason: string;
  reasons: string;
  at: number;
}

/** O1: a task as a redrive reads it, with the reasons of its dead letter. */
export type RedrivableRow = MovableRow & Pick<TaskRow, 'topic' | 'version' | 'attempts' | 'deliveries'> & { reason: string; reasons: string };

export interface CreditRow {
  task_id: number;
  tenant: string;
  kind: 'charge' | 'release';
  credits: number;
  at: number;
}

export interface MigrationRow {
  version: number;
  name: string;
  applied_at: number;
}

export interface EffectRow {
  request_key: string;
  task_id: number;
  tenant: string;
  action: string;
  generation: number;
  result: string;
  at: number;
}

export interface RejectionRow {
  tenant: string;
  topic: string;
  version: number;
  reason: string;
  at: number;
}

/** A1: a budget's stored level (see queue/budgets.ts for what level means per kind). */
export interface BudgetLevelRow {
  budget: string;
  scope: string;
  level: number;
  updated_at: number;
}

/** A1, I16: one attempt's reservation of one budget. */
export interface ReservationRow {
  task_id: number;
  generation: number;
  budget: string;
  scope: string;
  reserved: number;
  consumed: number;
  baseline: number;
  released: number | null;
  reserved_at: number;
  released_at: number | null;
}

export interface NewReservation {
  taskId: number;
  generation: number;
  budget: string;
  scope: string;
  reserved: number;
  baseline: number;
  at: number;
}

export interface AdmissionRow {
  at: number;
  action: 'RUN' | 'DEFER' | 'REJECT' | 'PAUSE' | 'RESUME';
  reason: string;
  tenant: string;
  task_id: number | null;
  retry_at: number | null;
  budget: string | null;
}

export interface SignalCounterRow {
  name: string;
  value: number;
}

export interface PauseRow {
  tenant: string;
  reason: string;
  at: number;
}

/** Q8: the lease holder a fenced statement is for, and the instant its lease is judged at. */
export interface Fence {
  id: number;
  workerId: string;
  generation: number;
  now: number;
}

/** R4: how a hold closes, written in the same statement as the end of its run. */
export interface HoldClosure {
  state: 'settled' | 'released';
  charged: number;
  /** The checkpointed usage as stored, or null when the run never checkpointed. */
  usage: string | null;
  reason: string;
}

/**
 * One state change, as the store writes it. Only `transition()` (src/queue/transition.ts) builds
 * these, and `StoreTx.taskWriteState` is the only statement of a store that writes `tasks.state`. Each
 * kind re-checks, in its WHERE clause, that the row is still what the transition read: the fence for
 * a holder's writes (Q8), state and generation for everyone else's.
 */
export type StateWrite =
  | {
      kind: 'claim';
      id: number;
      previousGeneration: number;
      workerId: string;
      generation: number;
      leaseUntil: number;
      eventSeq: number;
      now: number;
    }
  | {
      /** A fenced write that moves the holder's running task (complete, fail, cancel, interrupt). */
      kind: 'holder';
      fence: Fence;
      to: TaskState;
      eventSeq: number;
      result: string | null;
      outcome: string | null;
      errorClass: string | null;
      errorMessage: string | null;
      notBefore: number;
      finishedAt: number | null;
      hold: HoldClosure | null;
    }
  | {
      /** A move that is not the holder's: expiry, confirmation, cancel, reconciliation, claim-time ends, supersede. */
      kind: 'other';
      id: number;
      from: TaskState;
      generation: number;
      to: TaskState;
      outcome: string | null;
      finishedAt: number | null;
      /** Whether the lease column is kept (expiry to uncertain) or cleared. */
      keepLease: boolean;
      hold: HoldClosure | null;
    };

export interface NewTask {
  tenant: string;
  topic: string;
  version: number;
  inputHash: string;
  priority: number;
  inputJson: string;
  store: string | null;
  tier: string;
  deadline: number | null;
  contextJson: string | null;
  state: TaskState;
  now: number;
  holdCredits: number;
  /** A1: the needs as JSON, or null; A2: whether the task is critical. */
  needsJson: string | null;
  critical: 0 | 1;
  /** Set when the task is created already ended (a late version): its hold is closed in the insert. */
  hold: HoldClosure | null;
}

export interface NewCheckpoint {
  id: number;
  generation: number;
  kind: 'A' | 'B';
  step: number;
  state: string;
  usage: string;
  now: number;
  eventSeq: number;
  requeueSafe: 0 | 1;
}

export interface NewEffect {
  requestKey: string;
  id: number;
  tenant: string;
  action: string;
  generation: number;
  result: string;
  now: number;
}

/** The statements of one transaction. */
export interface StoreTx {
  /** Runs `body` inside a savepoint: a throw undoes what the body wrote and rethrows; the rest stays. */
  txSavepoint<T>(body: () => Step<T>): Step<T>;
  /**
   * W1: this transaction makes a task claimable now (an enqueue, a move back to ready, a tenant's
   * resume). Once it commits, the store tells the queue's idle workers, once per transaction however
   * often it was called (store/notices.ts; NOTIFY on PostgreSQL). Not a statement: it yields nothing.
   */
  txMarkClaimable(): void;

  // ---- tasks
  taskById(id: number): Step<TaskRow | undefined>;
  taskByKey(tenant: string, topic: string, version: number): Step<TaskRow | undefined>;
  taskListForTenant(tenant: string): Step<TaskRow[]>;
  taskList(): Step<TaskRow[]>;
  /** Tasks in one state, in id order. */
  taskListInState(state: TaskState): Step<TaskRow[]>;
  taskCountsByState(): Step<{ state: TaskState; n: number }[]>;
  taskOccupiedByTenant(): Step<{ tenant: string; n: number }[]>;
  taskListEnqueuedBetween(from: number, to: number): Step<TaskRow[]>;
  taskLatestVersion(tenant: string, topic: string): Step<number | null>;
  taskNewerVersionExists(tenant: string, topic: string, version: number): Step<boolean>;
  /** Q2: the ids of older versions of a topic that never started. */
  taskOlderUnstarted(tenant: string, topic: string, version: number): Step<MovableRow[]>;
  /** Q1: inserts unless the (tenant, topic, version) key exists; the new id, or undefined. */
  taskCreate(task: NewTask): Step<number | undefined>;
  /** The only statement that changes `tasks.state`; the new event_seq, or undefined if the row moved. */
  taskWriteState(change: StateWrite): Step<number | undefined>;
  /** Q3: the kept count of ready + running + uncertain tasks. */
  counterLive(): Step<number>;
  counterLiveAdjust(delta: number): Step<void>;

  // ---- claim (Q4-Q7)
  claimHolding(): Step<HoldingRow[]>;
  claimOverdueLeases(at: number): Step<HoldingRow[]>;
  claimAnyReady(): Step<boolean>;
  claimFirstReadyTenant(): Step<string | undefined>;
  claimNextReadyTenant(after: string): Step<string | undefined>;
  claimLevelHead(query: { tenant: string; maxPriority: number; minPriority: number; now: number }): Step<LevelHeadRow | undefined>;
  /**
   * Every tenant with a ready task, in tenant order (claimFirstReadyTenant, claimNextReadyTenant), each with the
   * head of its highest eligible level at `now` (claimLevelHead over the whole priority range), or null when
   * none of its ready tasks is eligible yet: the first step of every tenant's walk, in one statement.
   */
  claimReadyHeads(now: number): Step<{ tenant: string; head: LevelHeadRow | null }[]>;
  /** The next eligible ready task of one (tenant, priority) level after (enqueuedAt, id), in level order. */
  claimLevelNext(query: { tenant: string; priority: number; enqueuedAt: number; id: number; now: number }): Step<LevelHeadRow | undefined>;
  /** A6: the session's running and uncertain tasks older than `version`. */
  sessionOlderHolders(tenant: string, topic: string, version: number): Step<{ id: number; state: TaskState }[]>;
  /** A6: whether another task of the session (tenant, topic) is running or uncertain. */
  sessionBusy(tenant: string, topic: string, exceptId: number): Step<boolean>;
  claimCandidate(id: number): Step<CandidateRow | undefined>;

  // ---- a lease holder's writes (Q8, Q9, Q13)
  holderRow(id: number): Step<CompletingRow | undefined>;
  /** Q9: renews the lease under the fence; whether a cancel was requested, or undefined if stale. */
  holderHeartbeat(fence: Fence, leaseUntil: number): Step<{ cancelRequested: boolean } | undefined>;
  /** The next event_seq of the holder's task under the fence, or undefined if stale. */
  holderBumpEventSeq(fence: Fence): Step<number | undefined>;
  /** Q13: records a cancel request of a running or uncertain task; the new event_seq, or undefined. */
  taskRequestCancel(id: number): Step<number | undefined>;

  // ---- events (Q15)
  eventAppend(taskId: number, seq: number, type: string, at: number, dataJson: string, workerId: string | null, generation: number | null): Step<void>;
  eventListForTask(id: number): Step<EventRow[]>;
  eventList(): Step<EventRow[]>;
  eventCursor(): Step<number>;
  eventListSince(cursor: number, limit: number): Step<EventRow[]>;

  // ---- rejections (Q3, I4)
  rejectionInsert(tenant: string, topic: string, version: number, reason: string, at: number): Step<void>;
  rejectionList(): Step<RejectionRow[]>;

  // ---- checkpoints (R1, R2, R5)
  checkpointInsert(checkpoint: NewCheckpoint): Step<number>;
  checkpointLast(id: number): Step<CheckpointRow | undefined>;
  checkpointLastFlags(id: number): Step<{ kind: 'A' | 'B'; requeue_safe: number } | undefined>;
  checkpointLastUsage(id: number): Step<string | undefined>;

  // ---- holds and credits (R4)
  /** Closes a hold that is still held; the task's tenant, or undefined if it was closed already. */
  holdClose(id: number, hold: HoldClosure, at: number): Step<string | undefined>;
  creditInsert(taskId: number, tenant: string, kind: 'charge' | 'release', credits: number, at: number): Step<void>;
  holdList(): Step<HoldRow[]>;
  holdListStale(cutoff: number): Step<{ task_id: number; state: TaskState }[]>;

  // ---- the effect ledger (R3)
  effectByKey(requestKey: string): Step<EffectRow | undefined>;
  /** Records the effect unless its key exists; whether it was inserted. */
  effectInsert(effect: NewEffect): Step<boolean>;
  effectList(): Step<Omit<EffectRow, 'result'>[]>;

  // ---- dead letters (R6)
  taskFailureReasons(id: number): Step<{ type: string; data: string }[]>;
  deadLetterInsert(id: number, reason: string, reasonsJson: string, at: number, keep: number): Step<void>;
  deadLetterList(): Step<DeadLetterRow[]>;
  /** O1: a task with its dead letter's reasons, or undefined when it has no dead letter (its state is read too). */
  deadLetterTask(id: number): Step<RedrivableRow | undefined>;
  /**
   * O1: a redriven task starts afresh: attempts, deliveries and the retry age (first claim) reset, the
   * last error cleared, and its dead letter removed (the redrive's event keeps the reasons).
   */
  taskResetForRedrive(id: number, at: number): Step<void>;

  // ---- budgets and reservations (A1)
  budgetLevelGet(budget: string, scope: string): Step<BudgetLevelRow | undefined>;
  budgetLevelPut(budget: string, scope: string, level: number, updatedAt: number): Step<void>;
  budgetLevelList(): Step<BudgetLevelRow[]>;
  reservationInsert(reservation: NewReservation): Step<void>;
  /** Adds units to a held reservation of this attempt; whether one was there. */
  reservationAdd(taskId: number, generation: number, budget: string, units: number): Step<boolean>;
  reservationSetConsumed(taskId: number, generation: number, budget: string, consumed: number): Step<void>;
  /** The reservations of a task still held (released IS NULL), through a partial index. */
  reservationListHeld(taskId: number): Step<ReservationRow[]>;
  /** Releases a held reservation once, with what it consumed in the end; whether it was still held. */
  reservationRelease(taskId: number, generation: number, budget: string, released: number, consumed: number, at: number): Step<boolean>;
  reservationList(): Step<ReservationRow[]>;

  // ---- fair share (A3)
  serviceGet(tenant: string): Step<number>;
  serviceAdd(tenant: string, delta: number): Step<void>;
  taskServiceCharged(id: number): Step<number>;
  taskAddServiceCharged(id: number, delta: number): Step<void>;
  /** Whether the tenant has a ready, running or uncertain task other than `exceptId` (partial indexes only). */
  tenantHasLive(tenant: string, exceptId: number): Step<boolean>;
  serviceList(): Step<{ tenant: string; service: number }[]>;

  // ---- admission (A2)
  tenantPauseList(): Step<PauseRow[]>;
  /** Records a pause unless the tenant is paused already; whether it changed. */
  tenantPause(tenant: string, reason: string, at: number): Step<boolean>;
  /** Removes a pause; whether there was one. */
  tenantResume(tenant: string): Step<boolean>;
  /** Sets the reason of the task's last recorded DEFER, in the insert's transaction (no event of its own). */
  taskDeferredSet(id: number, reason: string | null): Step<void>;
  /** Records a new DEFER reason of a ready task and takes the next event_seq for its event; undefined if not ready. */
  taskDefer(id: number, reason: string): Step<number | undefined>;
  /** Records a decision and bumps its signal counter 'decision:ACTION:reason' in the same statement list (A5). */
  admissionInsert(row: AdmissionRow): Step<void>;
  admissionList(): Step<AdmissionRow[]>;

  // ---- control-plane signals (A5): bounded, indexed reads
  /** Adds `delta` to a signal counter (created at 0), in the caller's transaction. */
  signalBump(name: string, delta: number): Step<void>;
  signalList(): Step<SignalCounterRow[]>;
  /** Running and uncertain tasks with their last claim (the holding index, then each row by id). */
  taskHoldingSince(): Step<{ id: number; tenant: string; state: TaskState; worker_id: string | null; generation: number; claimed_at: number | null; lease_until: number | null }[]>;
  /** Ready tasks counted per tenant and priority (the ready index). */
  taskReadyDepth(): Step<{ tenant: string; priority: number; n: number }[]>;
  /** Per tenant with ready work: its oldest ready task by (enqueued_at, id). */
  taskOldestReady(): Step<{ tenant: string; id: number; enqueued_at: number }[]>;
  /**
   * Ready tasks of one tenant in (enqueued_at, id) order, eligible by backoff and deadline at `now`:
   * the first is the tenant's oldest eligible task (the ready index, seeking past ineligible ones).
   */
  taskOldestEligibleReady(tenant: string, now: number): Step<{ id: number; enqueued_at: number } | undefined>;
  /** The last `limit` accepted tasks by (enqueued_at, id), with their first claim and their last run's span. */
  taskListRecent(limit: number): Step<{ id: number; enqueued_at: number; first_claimed_at: number | null; claimed_at: number | null; finished_at: number | null }[]>;

  // ---- audits: the credit ledger (R4) and the applied migrations (Q18)
  creditList(): Step<CreditRow[]>;
  migrationList(): Step<MigrationRow[]>;
}

/**
 * Reads a write's body makes first, known before it runs (the holder's row of the task a holder's call
 * names). A store may send them in the round trip that begins the transaction and takes its lock, and
 * answer the body's own reads from them (PgStore does; SQLite's statements cost no round trip).
 */
export interface ReadsFirst {
  /** The body reads StoreTx.holderRow of this task first. */
  holderRow?: number;
  /**
   * The body is a claim: it reads claimHolding() first, then the paused tenants, the ready tenants' heads at
   * its time and the candidate among them (StoreTx.claimCandidate), unless it has written in between.
   * The store may read ahead the row of the head most likely picked, by Q4's score and the tenant
   * limits with these settings. It may also answer them from a handoff (a notice that carried the one
   * ready task of an otherwise idle queue), run the body with its time read before the transaction
   * begins, and commit its writes only if the queue is still so under the lock, running it again
   * reading otherwise (PgStore).
   */
  claim?: { agingCap: number; agingPeriodMs: number; perTenantLimit: number; tenantLimits: Readonly<Record<string, number>> };
  /**
   * The body is an enqueue of this key: before it writes anything it may read
   * taskLatestVersion(tenant, topic) and taskOlderUnstarted(tenant, topic, version). A store may also
   * guess those reads (and the insert's id, the paused tenants, the live count), run the body on the
   * guess with its time read before the transaction begins, and commit its writes only if the guess
   * holds under the lock, running it again reading otherwise (PgStore).
   */
  enqueue?: { tenant: string; topic: string; version: number };
}

/** A body of one transaction: statements only, given the time read once the transaction began; `readsFirst`, what it reads first. */
export type TransactionBody<T> = ((tx: StoreTx, at: number) => Step<T>) & { readonly readsFirst?: ReadsFirst };

/** A store: one database, its schema, and transactions over it. */
export interface Store {
  /** 'sqlite' | 'postgres' | 'pglite': which implementation, for messages and reports. */
  readonly kind: string;
  /**
   * Runs `body` in one write transaction. `readClock` is read once the write lock is held, so a lease
   * is judged at commit time and events are stamped in commit order (Q8, Q15); a store may read it
   * before the lock for a body with `readsFirst` (a holder's row, an enqueue's or a claim's first reads)
   * if it commits only when nothing that body read changed before the lock (PgStore: its clock is then
   * at most one lock wait early). A busy
   * database is retried a bounded number of times, then surfaces as BusyError with nothing written (Q18).
   */
  write<T>(operation: string, readClock: () => number, body: TransactionBody<T>): Promise<T>;
  /** Runs `body` as a read: no write lock, and no time (a read decides nothing). */
  read<T>(operation: string, body: (tx: StoreTx) => Step<T>): Promise<T>;
  /**
   * W1: calls `listener` after a transaction that made a task claimable has committed, on any
   * connection this store can hear (the same process; with PostgreSQL, every host by LISTEN). A hint
   * that may be late or lost: the worker polls as well. Returns the function that stops it. A store
   * without it is polled only.
   */
  watch?(listener: () => void): () => void;
  /**
   * W1: a number that changes whenever another connection committed to the database since the last
   * read (SQLite's `PRAGMA data_version`), so an idle worker of another process can look cheaply and
   * claim only when something changed; undefined where the store has no such counter.
   */
  changeCounter?(): Promise<number | undefined>;
  close(): Promise<void>;
}

// ---- the simulator's seams

/**
 * What the deterministic simulator needs of a store beyond `Store`, declared so that it reaches them
 * through a type (sim/store/fleet.ts, sim/world/database-host.ts) rather than by casting or by looking
 * for a method. A store of this package offers one of the two forms, told apart by `seams`: SqliteStore
 * (and the simulator's power-loss store over it) the synchronous one, PgStore the asynchronous one.
 *
 * Production code never calls a seam: the queue, the worker, the Supervisor and the CLI reach a store
 * through `Store` alone, and a store need not offer these at all. They are internal: the build leaves
 * them out of the published declarations (tsconfig.build.json: stripInternal), so no user code can
 * come to depend on them. src/store/seams.test.ts holds every store kind to them.
 *
 * @internal
 */
export type SimulationSeams = SynchronousSeams | AsynchronousSeams;

/**
 * A store together with its simulator's seams: what the simulator's world holds as its database.
 *
 * @internal
 */
export type SeamedStore = Store & SimulationSeams;

/**
 * The seam both forms share: the event cursor as of the last commit, known without a query.
 *
 * @internal
 */
export interface CommitCursorSeam {
  /**
   * The newest event id committed through this store, read from the database when it opened: the
   * event cursor after its last commit. The simulator stamps each recorded call with the cursor its
   * transaction committed at (its history entry's `ev`) and reads it at a power loss.
   *
   * It moves only when a transaction that inserted an event commits, to that transaction's newest
   * event id: never while a transaction runs, never for a transaction rolled back, never for an event
   * inserted in a savepoint that was rolled back to, never backwards. Exact while this store is the
   * database's only writer (the simulator's world); another connection's commits are not seen here.
   */
  committedEventCursor(): number;
}

/**
 * The seams of a store whose transactions run to their end inside the call (better-sqlite3).
 *
 * @internal
 */
export interface SynchronousSeams extends CommitCursorSeam {
  readonly seams: 'synchronous';
  /**
   * `Store.write`, synchronously: the transaction has committed (or rolled back) by the time the call
   * returns, with the same retries and typed errors, thrown instead of rejected. The simulator's fleet
   * runs a transaction this way inside the loop event that begins it, so the virtual clock cannot move
   * under it and no other transaction can run between its BEGIN and its COMMIT; the committed cursor
   * read right after the call is this transaction's.
   */
  writeNow<T>(operation: string, readClock: () => number, body: TransactionBody<T>): T;
  /**
   * `Store.read`, synchronously: the answer as of the last commit, at the instant of the call. The
   * simulator's observers read this way at an exact instant of the virtual clock.
   */
  readNow<T>(operation: string, body: (tx: StoreTx) => Step<T>): T;
}

/**
 * The seams of a store whose transactions yield to a driver (pg, PGlite).
 *
 * @internal
 */
export interface AsynchronousSeams extends CommitCursorSeam {
  readonly seams: 'asynchronous';
  /**
   * `Store.write`, telling `atCommit` the committed event cursor the moment the transaction is known
   * committed: before the returned promise settles and before any later transaction of this store
   * begins, so the cursor it gets is this transaction's, whatever runs after it (the promise's own
   * callbacks run later). Called once for a transaction that commits, never for one that fails.
   */
  writeAtCommit<T>(operation: string, readClock: () => number, body: TransactionBody<T>, atCommit: (cursor: number) => void): Promise<T>;
  /** `Store.read`, telling `atCommit` the committed event cursor once the read's transaction has ended, as `writeAtCommit` does. */
  readAtCommit<T>(operation: string, body: (tx: StoreTx) => Step<T>, atCommit: (cursor: number) => void): Promise<T>;
}

/**
 * Runs a body whose statements all complete synchronously: a synchronous driver's statements never
 * yield, so one `next()` finishes the body. A yield here would mean an asynchronous statement reached a
 * synchronous transaction, which is a bug.
 */
export function runToEnd<T>(body: Step<T>): T {
  const step = body.next();
  if (step.done !== true) throw new TypeError('a synchronous store met a statement that yields');
  return step.value;
}
