import type { SqliteDatabase as Database } from './sqlite-handle.ts';
import { stateCheckSql } from '../queue/states.ts';

/**
 * Versioned migrations (Q18). Each runs once, inside the transaction that records it (all pending
 * versions share one), so a crash half-way leaves the database as it was and opening a database any
 * number of times is safe.
 * Append new versions; never edit one that has shipped.
 */
/** One schema version: its number, its name and its DDL (each store writes its own SQL). */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'tasks, events, rejections',
    sql: `
      CREATE TABLE tasks (
        -- Not AUTOINCREMENT: an insert refused by the unique key must not burn an id. Tasks are never deleted.
        id INTEGER PRIMARY KEY,
        tenant TEXT NOT NULL,
        topic TEXT NOT NULL,
        version INTEGER NOT NULL,
        input_hash TEXT NOT NULL,
        priority INTEGER NOT NULL CHECK (priority BETWEEN 0 AND 30),
        input TEXT NOT NULL,
        store TEXT,
        tier TEXT NOT NULL,
        deadline INTEGER,
        context TEXT,
        state TEXT NOT NULL CHECK (state IN ('ready','running','uncertain','done','failed','superseded','cancelled','expired')),
        generation INTEGER NOT NULL DEFAULT 0,
        attempts INTEGER NOT NULL DEFAULT 0,
        deliveries INTEGER NOT NULL DEFAULT 0,
        worker_id TEXT,
        lease_until INTEGER,
        enqueued_at INTEGER NOT NULL,
        not_before INTEGER NOT NULL,
        first_claimed_at INTEGER,
        claimed_at INTEGER,
        finished_at INTEGER,
        queue_wait_ms INTEGER,
        run_ms INTEGER,
        cancel_requested INTEGER NOT NULL DEFAULT 0,
        outcome TEXT,
        result TEXT,
        error_class TEXT,
        error_message TEXT,
        event_seq INTEGER NOT NULL DEFAULT 0,
        -- Q1, I9: the database, not a check-then-insert, keeps one task per (tenant, topic, version).
        UNIQUE (tenant, topic, version)
      );
      -- Q4/Q5: the claim seeks the head of each (tenant, base priority) level; ready rows only.
      CREATE INDEX tasks_ready ON tasks (tenant, priority DESC, enqueued_at, id, not_before) WHERE state = 'ready';
      -- Q6, Q10: the tasks holding a slot (running or uncertain) with their leases. The claim reads
      -- them all at once to expire overdue leases and count occupied slots, never a window of rows.
      CREATE INDEX tasks_holding ON tasks (tenant, lease_until) WHERE state IN ('running', 'uncertain');
      CREATE INDEX tasks_enqueued_at ON tasks (enqueued_at);

      CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        task_id INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        type TEXT NOT NULL,
        at INTEGER NOT NULL,
        data TEXT NOT NULL,
        -- Who wrote it, for events a lease holder wrote (Q8): an audit of every fenced write.
        worker_id TEXT,
        generation INTEGER
      );
      -- Q15: per-task sequences are contiguous and unique; the rowid gives one global order.
      CREATE UNIQUE INDEX events_task_seq ON events (task_id, seq);

      CREATE TABLE rejections (
        id INTEGER PRIMARY KEY,
        tenant TEXT NOT NULL,
        topic TEXT NOT NULL,
        version INTEGER NOT NULL,
        reason TEXT NOT NULL,
        at INTEGER NOT NULL
      );

      -- Q3: capacity is checked on every enqueue, so the live count (ready + running + uncertain) is
      -- kept, not recounted. The queue adjusts it in each transaction that changes liveness; a trigger
      -- would do the same but costs every state change a full OLD/NEW row.
      CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
      INSERT INTO counters (name, value) VALUES ('live', 0);
    `,
  },
  {
    version: 2,
    name: 'checkpoints',
    sql: `
      -- R1: each checkpoint holds everything a takeover needs to resume; written only by the lease holder.
      CREATE TABLE checkpoints (
        task_id INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        generation INTEGER NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('A', 'B')),
        step INTEGER NOT NULL,
        state TEXT NOT NULL,
        usage TEXT NOT NULL,
        at INTEGER NOT NULL,
        event_seq INTEGER NOT NULL,
        PRIMARY KEY (task_id, seq)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 3,
    name: 'holds, credit ledger, effect ledger, dead letters',
    sql: `
      -- R4: one hold per task, written with the task at enqueue and closed exactly once, settled or
      -- released. It lives in the task's row: closing it then dirties no page the transition did not.
      ALTER TABLE tasks ADD COLUMN hold_credits INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE tasks ADD COLUMN hold_state TEXT CHECK (hold_state IN ('held', 'settled', 'released'));
      ALTER TABLE tasks ADD COLUMN hold_charged_credits INTEGER;
      ALTER TABLE tasks ADD COLUMN hold_usage TEXT;
      ALTER TABLE tasks ADD COLUMN hold_reason TEXT;
      ALTER TABLE tasks ADD COLUMN hold_closed_at INTEGER;
      -- R4: every settlement or release is one ledger row, written in the transaction that closes the hold.
      CREATE TABLE credit_ledger (
        id INTEGER PRIMARY KEY,
        task_id INTEGER NOT NULL,
        tenant TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('charge', 'release')),
        credits INTEGER NOT NULL,
        at INTEGER NOT NULL
      );
      -- R3: an effect is recorded once per request key; a repeat gets the first result back.
      CREATE TABLE effects (
        request_key TEXT PRIMARY KEY,
        task_id INTEGER NOT NULL,
        tenant TEXT NOT NULL,
        action TEXT NOT NULL,
        generation INTEGER NOT NULL,
        result TEXT NOT NULL,
        at INTEGER NOT NULL
      ) WITHOUT ROWID;
      -- R5: whether a run resuming from this checkpoint repeats no unledgered effect.
      ALTER TABLE checkpoints ADD COLUMN requeue_safe INTEGER NOT NULL DEFAULT 0;
      -- R6: tasks that exhausted their deliveries, with their reason history, for people to inspect.
      CREATE TABLE dead_letters (
        task_id INTEGER PRIMARY KEY,
        tenant TEXT NOT NULL,
        topic TEXT NOT NULL,
        version INTEGER NOT NULL,
        reason TEXT NOT NULL,
        reasons TEXT NOT NULL,
        at INTEGER NOT NULL
      );
    `,
  },
  {
    version: 4,
    name: 'covering holding index',
    sql: `
      -- Q6, Q10: the holding index also carries state, generation, worker and hold state, so the claim's
      -- read of the occupied slots, the lease sweep and the lists of running or uncertain tasks are
      -- answered from the index alone, with no lookup of the (large) task rows. It holds at most the
      -- global limit's worth of entries, and every column added changes only when the entry is written
      -- anyway (claim, expiry, end) or, for hold_state, when a stale hold is released.
      DROP INDEX tasks_holding;
      CREATE INDEX tasks_holding ON tasks (tenant, lease_until, state, generation, worker_id, hold_state)
        WHERE state IN ('running', 'uncertain');
    `,
  },
  {
    version: 5,
    name: 'the state machine in the schema',
    // The tasks table is rebuilt (SQLite adds a CHECK no other way) with the CHECK that states.ts
    // derives from the state machine: a row the table forbids (a running task without a worker or a
    // lease, an uncertain one without a generation, an ended one that still holds its credits) cannot
    // be stored, so a half-done transition cannot be committed. The text is pinned by a test
    // (src/queue/states.test.ts): a change to the state machine's rules needs a new migration, not an edit here.
    sql: `
      CREATE TABLE tasks_v5 (
        id INTEGER PRIMARY KEY,
        tenant TEXT NOT NULL,
        topic TEXT NOT NULL,
        version INTEGER NOT NULL,
        input_hash TEXT NOT NULL,
        priority INTEGER NOT NULL CHECK (priority BETWEEN 0 AND 30),
        input TEXT NOT NULL,
        store TEXT,
        tier TEXT NOT NULL,
        deadline INTEGER,
        context TEXT,
        state TEXT NOT NULL,
        generation INTEGER NOT NULL DEFAULT 0,
        attempts INTEGER NOT NULL DEFAULT 0,
        deliveries INTEGER NOT NULL DEFAULT 0,
        worker_id TEXT,
        lease_until INTEGER,
        enqueued_at INTEGER NOT NULL,
        not_before INTEGER NOT NULL,
        first_claimed_at INTEGER,
        claimed_at INTEGER,
        finished_at INTEGER,
        queue_wait_ms INTEGER,
        run_ms INTEGER,
        cancel_requested INTEGER NOT NULL DEFAULT 0,
        outcome TEXT,
        result TEXT,
        error_class TEXT,
        error_message TEXT,
        event_seq INTEGER NOT NULL DEFAULT 0,
        hold_credits INTEGER NOT NULL DEFAULT 0,
        hold_state TEXT CHECK (hold_state IN ('held', 'settled', 'released')),
        hold_charged_credits INTEGER,
        hold_usage TEXT,
        hold_reason TEXT,
        hold_closed_at INTEGER,
        UNIQUE (tenant, topic, version),
        ${stateCheckSql()}
      );
      INSERT INTO tasks_v5 SELECT id, tenant, topic, version, input_hash, priority, input, store, tier, deadline, context,
        state, generation, attempts, deliveries, worker_id, lease_until, enqueued_at, not_before, first_claimed_at,
        claimed_at, finished_at, queue_wait_ms, run_ms, cancel_requested, outcome, result, error_class, error_message,
        event_seq, hold_credits, hold_state, hold_charged_credits, hold_usage, hold_reason, hold_closed_at FROM tasks;
      DROP TABLE tasks;
      ALTER TABLE tasks_v5 RENAME TO tasks;
      CREATE INDEX tasks_ready ON tasks (tenant, priority DESC, enqueued_at, id, not_before) WHERE state = 'ready';
      CREATE INDEX tasks_holding ON tasks (tenant, lease_until, state, generation, worker_id, hold_state)
        WHERE state IN ('running', 'uncertain');
      CREATE INDEX tasks_enqueued_at ON tasks (enqueued_at);
    `,
  },
  {
    version: 6,
    name: 'budgets, reservations, tenant pauses, admission decisions',
    sql: `
      -- A1: what a task needs of each named budget (JSON, from the trusted caller), whether it is
      -- critical (A2), and the reason of the last DEFER recorded for it (A2: a DEFER is recorded once per
      -- change of task and reason, so a claim that meets the same wait again writes nothing).
      ALTER TABLE tasks ADD COLUMN needs TEXT;
      ALTER TABLE tasks ADD COLUMN critical INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE tasks ADD COLUMN deferred TEXT;
      -- A1: one row per budget and scope ('' global, tenant:T, run:ID, session:T<US>topic). The level is
      -- units held (concurrency), units used (total), or a rate bucket's units x periodMs with the
      -- instant it was last written at (the refill clock, which never moves back).
      CREATE TABLE budget_levels (
        budget TEXT NOT NULL,
        scope TEXT NOT NULL,
        level INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (budget, scope)
      ) WITHOUT ROWID;
      -- A1, I16: per attempt (task, generation) and budget: reserved = consumed + released once the
      -- attempt's slot is freed; released stays NULL while the units are held.
      CREATE TABLE reservations (
        task_id INTEGER NOT NULL,
        generation INTEGER NOT NULL,
        budget TEXT NOT NULL,
        scope TEXT NOT NULL,
        reserved INTEGER NOT NULL CHECK (reserved >= 0),
        consumed INTEGER NOT NULL DEFAULT 0 CHECK (consumed >= 0),
        baseline INTEGER NOT NULL DEFAULT 0,
        released INTEGER CHECK (released IS NULL OR released >= 0),
        reserved_at INTEGER NOT NULL,
        released_at INTEGER,
        PRIMARY KEY (task_id, generation, budget)
      ) WITHOUT ROWID;
      CREATE INDEX reservations_held ON reservations (task_id) WHERE released IS NULL;
      -- A2: paused tenants get no new lease; the row is the pause, kept across restarts.
      CREATE TABLE tenant_pauses (
        tenant TEXT PRIMARY KEY,
        reason TEXT NOT NULL,
        at INTEGER NOT NULL
      ) WITHOUT ROWID;
      -- A2: the recorded decisions: every REJECT, each DEFER per change of task and reason, each pause
      -- and resume. An audit for operators and the source of the decisions-by-reason signal (A5).
      CREATE TABLE admission_decisions (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        action TEXT NOT NULL CHECK (action IN ('RUN', 'DEFER', 'REJECT', 'PAUSE', 'RESUME')),
        reason TEXT NOT NULL,
        tenant TEXT NOT NULL,
        task_id INTEGER,
        retry_at INTEGER,
        budget TEXT
      );
    `,
  },
  {
    version: 7,
    name: 'signal counters',
    sql: `
      -- A5: the running totals queue.signals() reports, each bumped in the transaction that writes
      -- what it counts (an admission decision, a rejection, a retry, a claim), so a signal is one
      -- indexed read, never a scan of the history. Names: 'decision:ACTION:reason',
      -- 'rejection:reason', 'retry:errorClass'.
      CREATE TABLE signal_counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
      -- Decisions and rejections already recorded (a database migrated from version 6) are counted once.
      INSERT INTO signal_counters (name, value)
        SELECT 'decision:' || action || ':' || reason, COUNT(*) FROM admission_decisions GROUP BY action, reason;
      INSERT INTO signal_counters (name, value)
        SELECT 'rejection:' || reason, COUNT(*) FROM rejections GROUP BY reason;
    `,
  },
  {
    version: 8,
    name: 'fair share: service per tenant',
    sql: `
      -- A3: each tenant's consumed service (model tokens: charged at claim, corrected at the end of the
      -- attempt to the run's checkpointed tokens), one row per tenant, and what each task was charged.
      CREATE TABLE tenant_service (tenant TEXT PRIMARY KEY, service INTEGER NOT NULL) WITHOUT ROWID;
      ALTER TABLE tasks ADD COLUMN service_charged INTEGER NOT NULL DEFAULT 0;
    `,
  },
];

export const LATEST_SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;

/** A database at a schema version this code does not know: a newer Leasehold wrote it. */
export class NewerSchemaError extends Error {
  constructor(readonly found: number) {
    super(`its schema is version ${found}; this Leasehold knows versions up to ${LATEST_SCHEMA_VERSION} (upgrade Leasehold to open it)`);
  }
}

/** Brings the schema up to date. `now` is the caller's clock: SQL never reads time itself. */
export function migrate(db: Database, now: number): number {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
  const appliedVersion = db.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations');
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  // Every pending version in one immediate transaction, the version re-read inside it (another process
  // may have migrated meanwhile): a crash half-way leaves the database as it was, and a fresh database
  // pays for one commit, not one per version.
  db.transaction(() => {
    const current = (appliedVersion.get() as { v: number }).v;
    // A newer schema is refused, never half-understood: its rows may mean what this code cannot check.
    if (current > LATEST_SCHEMA_VERSION) throw new NewerSchemaError(current);
    for (const migration of MIGRATIONS) {
      if (migration.version <= current) continue;
      db.exec(migration.sql);
      record.run(migration.version, migration.name, now);
    }
  }).immediate();
  return (appliedVersion.get() as { v: number }).v;
}
