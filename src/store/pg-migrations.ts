import { stateCheckSql } from '../queue/states.ts';
import { LATEST_SCHEMA_VERSION, NewerSchemaError, type Migration } from './migrations.ts';

/**
 * The PostgreSQL schema (SPEC P1, P3): the same versions, names, tables, columns, constraints and partial
 * indexes as the SQLite migrations (migrations.ts), in PostgreSQL DDL. Times, ids and counts are BIGINT
 * and flags INTEGER, so rows come back with the JavaScript types SQLite's do (the driver parses BIGINT as
 * a number); JSON columns are TEXT, kept as strings for the core to parse. Ids are not sequences: the
 * statements take MAX(id) + 1 under the queue's write lock, as SQLite's rowid does, so an insert refused
 * by a unique key or rolled back burns no id (a sequence would). Every TEXT column is COLLATE "C": text
 * compares and sorts by its bytes, as under SQLite's BINARY collation, whatever the database's locale, so
 * `ORDER BY tenant` and `tenant > $1` (the claim's walk over tenants) give SQLite's order.
 *
 * Safe to run from several hosts at once: every pending version is applied in one transaction that
 * first takes a transaction-scoped advisory lock, then reads the versions applied, so a second host
 * waits for the first to commit and then finds nothing to do. Append new versions; never edit one.
 */
export const PG_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'tasks, events, rejections',
    sql: `
      CREATE TABLE tasks (
        id BIGINT PRIMARY KEY,
        tenant TEXT COLLATE "C" NOT NULL,
        topic TEXT COLLATE "C" NOT NULL,
        version BIGINT NOT NULL,
        input_hash TEXT COLLATE "C" NOT NULL,
        priority INTEGER NOT NULL CHECK (priority BETWEEN 0 AND 30),
        input TEXT COLLATE "C" NOT NULL,
        store TEXT COLLATE "C",
        tier TEXT COLLATE "C" NOT NULL,
        deadline BIGINT,
        context TEXT COLLATE "C",
        state TEXT COLLATE "C" NOT NULL CHECK (state IN ('ready','running','uncertain','done','failed','superseded','cancelled','expired')),
        generation BIGINT NOT NULL DEFAULT 0,
        attempts BIGINT NOT NULL DEFAULT 0,
        deliveries BIGINT NOT NULL DEFAULT 0,
        worker_id TEXT COLLATE "C",
        lease_until BIGINT,
        enqueued_at BIGINT NOT NULL,
        not_before BIGINT NOT NULL,
        first_claimed_at BIGINT,
        claimed_at BIGINT,
        finished_at BIGINT,
        queue_wait_ms BIGINT,
        run_ms BIGINT,
        cancel_requested INTEGER NOT NULL DEFAULT 0,
        outcome TEXT COLLATE "C",
        result TEXT COLLATE "C",
        error_class TEXT COLLATE "C",
        error_message TEXT COLLATE "C",
        event_seq BIGINT NOT NULL DEFAULT 0,
        UNIQUE (tenant, topic, version)
      );
      CREATE INDEX tasks_ready ON tasks (tenant, priority DESC, enqueued_at, id, not_before) WHERE state = 'ready';
      CREATE INDEX tasks_holding ON tasks (tenant, lease_until) WHERE state IN ('running', 'uncertain');
      CREATE INDEX tasks_enqueued_at ON tasks (enqueued_at);

      CREATE TABLE events (
        id BIGINT PRIMARY KEY,
        task_id BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        type TEXT COLLATE "C" NOT NULL,
        at BIGINT NOT NULL,
        data TEXT COLLATE "C" NOT NULL,
        worker_id TEXT COLLATE "C",
        generation BIGINT
      );
      CREATE UNIQUE INDEX events_task_seq ON events (task_id, seq);

      CREATE TABLE rejections (
        id BIGINT PRIMARY KEY,
        tenant TEXT COLLATE "C" NOT NULL,
        topic TEXT COLLATE "C" NOT NULL,
        version BIGINT NOT NULL,
        reason TEXT COLLATE "C" NOT NULL,
        at BIGINT NOT NULL
      );

      CREATE TABLE counters (name TEXT COLLATE "C" PRIMARY KEY, value BIGINT NOT NULL);
      INSERT INTO counters (name, value) VALUES ('live', 0);
    `,
  },
  {
    version: 2,
    name: 'checkpoints',
    sql: `
      CREATE TABLE checkpoints (
        task_id BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        generation BIGINT NOT NULL,
        kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('A', 'B')),
        step BIGINT NOT NULL,
        state TEXT COLLATE "C" NOT NULL,
        usage TEXT COLLATE "C" NOT NULL,
        at BIGINT NOT NULL,
        event_seq BIGINT NOT NULL,
        PRIMARY KEY (task_id, seq)
      );
    `,
  },
  {
    version: 3,
    name: 'holds, credit ledger, effect ledger, dead letters',
    sql: `
      ALTER TABLE tasks ADD COLUMN hold_credits BIGINT NOT NULL DEFAULT 0;
      ALTER TABLE tasks ADD COLUMN hold_state TEXT COLLATE "C" CHECK (hold_state IN ('held', 'settled', 'released'));
      ALTER TABLE tasks ADD COLUMN hold_charged_credits BIGINT;
      ALTER TABLE tasks ADD COLUMN hold_usage TEXT COLLATE "C";
      ALTER TABLE tasks ADD COLUMN hold_reason TEXT COLLATE "C";
      ALTER TABLE tasks ADD COLUMN hold_closed_at BIGINT;
      CREATE TABLE credit_ledger (
        id BIGINT PRIMARY KEY,
        task_id BIGINT NOT NULL,
        tenant TEXT COLLATE "C" NOT NULL,
        kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('charge', 'release')),
        credits BIGINT NOT NULL,
        at BIGINT NOT NULL
      );
      CREATE TABLE effects (
        request_key TEXT COLLATE "C" PRIMARY KEY,
        task_id BIGINT NOT NULL,
        tenant TEXT COLLATE "C" NOT NULL,
        action TEXT COLLATE "C" NOT NULL,
        generation BIGINT NOT NULL,
        result TEXT COLLATE "C" NOT NULL,
        at BIGINT NOT NULL
      );
      ALTER TABLE checkpoints ADD COLUMN requeue_safe INTEGER NOT NULL DEFAULT 0;
      CREATE TABLE dead_letters (
        task_id BIGINT PRIMARY KEY,
        tenant TEXT COLLATE "C" NOT NULL,
        topic TEXT COLLATE "C" NOT NULL,
        version BIGINT NOT NULL,
        reason TEXT COLLATE "C" NOT NULL,
        reasons TEXT COLLATE "C" NOT NULL,
        at BIGINT NOT NULL
      );
    `,
  },
  {
    version: 4,
    name: 'covering holding index',
    sql: `
      DROP INDEX tasks_holding;
      CREATE INDEX tasks_holding ON tasks (tenant, lease_until, state, generation, worker_id, hold_state)
        WHERE state IN ('running', 'uncertain');
    `,
  },
  {
    version: 5,
    name: 'the state machine in the schema',
    // PostgreSQL adds a CHECK in place (SQLite rebuilds the table): the old state list goes (the state
    // machine's CASE refuses any other state) and the constraints states.ts derives arrive, so the
    // table ends as SQLite's version 5 does.
    sql: `
      ALTER TABLE tasks DROP CONSTRAINT tasks_state_check;
      ALTER TABLE tasks ${stateCheckSql().replace(/CONSTRAINT /g, 'ADD CONSTRAINT ')};
    `,
  },
  {
    version: 6,
    name: 'budgets, reservations, tenant pauses, admission decisions',
    sql: `
      ALTER TABLE tasks ADD COLUMN needs TEXT COLLATE "C";
      ALTER TABLE tasks ADD COLUMN critical INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE tasks ADD COLUMN deferred TEXT COLLATE "C";
      CREATE TABLE budget_levels (
        budget TEXT COLLATE "C" NOT NULL,
        scope TEXT COLLATE "C" NOT NULL,
        level BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (budget, scope)
      );
      CREATE TABLE reservations (
        task_id BIGINT NOT NULL,
        generation BIGINT NOT NULL,
        budget TEXT COLLATE "C" NOT NULL,
        scope TEXT COLLATE "C" NOT NULL,
        reserved BIGINT NOT NULL CHECK (reserved >= 0),
        consumed BIGINT NOT NULL DEFAULT 0 CHECK (consumed >= 0),
        baseline BIGINT NOT NULL DEFAULT 0,
        released BIGINT CHECK (released IS NULL OR released >= 0),
        reserved_at BIGINT NOT NULL,
        released_at BIGINT,
        PRIMARY KEY (task_id, generation, budget)
      );
      CREATE INDEX reservations_held ON reservations (task_id) WHERE released IS NULL;
      CREATE TABLE tenant_pauses (
        tenant TEXT COLLATE "C" PRIMARY KEY,
        reason TEXT COLLATE "C" NOT NULL,
        at BIGINT NOT NULL
      );
      CREATE TABLE admission_decisions (
        id BIGINT PRIMARY KEY,
        at BIGINT NOT NULL,
        action TEXT COLLATE "C" NOT NULL CHECK (action IN ('RUN', 'DEFER', 'REJECT', 'PAUSE', 'RESUME')),
        reason TEXT COLLATE "C" NOT NULL,
        tenant TEXT COLLATE "C" NOT NULL,
        task_id BIGINT,
        retry_at BIGINT,
        budget TEXT COLLATE "C"
      );
    `,
  },
  {
    version: 7,
    name: 'signal counters',
    sql: `
      CREATE TABLE signal_counters (name TEXT COLLATE "C" PRIMARY KEY, value BIGINT NOT NULL);
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
      CREATE TABLE tenant_service (tenant TEXT COLLATE "C" PRIMARY KEY, service BIGINT NOT NULL);
      ALTER TABLE tasks ADD COLUMN service_charged BIGINT NOT NULL DEFAULT 0;
    `,
  },
];

if ((PG_MIGRATIONS[PG_MIGRATIONS.length - 1]?.version ?? 0) !== LATEST_SCHEMA_VERSION) {
  throw new Error('the PostgreSQL migrations and the SQLite migrations must reach the same version');
}

/** What a migration needs of a connection: plain queries, several statements to a text when no values are bound. */
export interface PgSession {
  query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
}

/** The advisory lock's first key (int4) for migrations; the second is the schema's hash (queueLockKey). */
export const MIGRATION_LOCK_CLASS = 0x4c48_0001;

/** Quotes an identifier for PostgreSQL. */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * Brings the schema up to date in one transaction under the migration lock (the session must not be in
 * a transaction). `schema`, when given, is created first and the session's search_path must name it.
 * Returns the version the database is at. A schema newer than this code is refused (NewerSchemaError),
 * with nothing written.
 */
export async function migratePg(session: PgSession, now: number, lockKey: number, schema: string | undefined): Promise<number> {
  await session.query('BEGIN');
  try {
    await session.query('SELECT pg_advisory_xact_lock($1::int4, $2::int4)', [MIGRATION_LOCK_CLASS, lockKey]);
    if (schema !== undefined) {
      // Created only when missing: CREATE SCHEMA IF NOT EXISTS asks for CREATE on the database even when
      // the schema exists, which a role that owns its schema but may not create one lacks. Under the
      // migration lock, so two hosts do not both find it missing.
      const exists = await session.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
      if (exists.rows.length === 0) await session.query(`CREATE SCHEMA ${quoteIdentifier(schema)}`);
      // A pool passed in may have another search_path: this transaction's statements use the schema.
      await session.query(`SET LOCAL search_path TO ${quoteIdentifier(schema)}`);
    }
    await session.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`);
    const found = await session.query('SELECT COALESCE(MAX(version), 0)::int4 AS v FROM schema_migrations');
    const current = Number(found.rows[0]?.v ?? 0);
    if (current > LATEST_SCHEMA_VERSION) throw new NewerSchemaError(current);
    for (const migration of PG_MIGRATIONS) {
      if (migration.version <= current) continue;
      await session.query(migration.sql);
      await session.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [migration.version, migration.name, now]);
    }
    await session.query('COMMIT');
    return Math.max(current, LATEST_SCHEMA_VERSION);
  } catch (error) {
    await session.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
