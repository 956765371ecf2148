import { existsSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { ConnectionError, OpenError, RetryableStoreError } from '../queue/errors.ts';
import type { Clock } from '../ports.ts';
import type { QueueConfig, WorkQueue } from '../queue/types.ts';
import { LATEST_SCHEMA_VERSION } from '../store/migrations.ts';
import { pgDriver } from '../store/pg-driver.ts';
import { quoteIdentifier } from '../store/pg-migrations.ts';
import { checkPostgresUrl, pgOpenErrorOf } from '../store/pg-open-errors.ts';
import { connectionCodeOf, isPostgresUrl } from '../store/pg-store.ts';
import { openWorkQueue } from '../work-queue.ts';
import { OpsError } from './errors.ts';

/** What `--db` named, for headers and messages: the path, or the URL without its password. */
export function describeDb(db: string): string {
  if (!isPostgresUrl(db)) return db;
  try {
    const url = new URL(db);
    if (url.password !== '') url.password = '***';
    return url.toString();
  } catch {
    return 'postgres://(malformed URL)';
  }
}

/**
 * O1: opens the queue an operator names with `--db FILE|URL`, and proves it answers before anything is
 * shown: a SQLite file that does not exist is refused (a look at a queue must never create an empty
 * one), as is ':memory:' (private to one process); a file that is not a queue, a schema newer than this
 * Leasehold, a database or role the server refuses, and a server that does not answer each become an
 * OpsError whose message says what to change, never a stack.
 *
 * Opening a queue migrates its schema; an operator's look must not. So the database is first probed
 * read-only (probeQueue): a file or database with no queue tables is `missing_database` (nothing is
 * created in it, neither the tables nor a PostgreSQL schema), and a queue at an older schema version
 * than this Leasehold's is `cannot_open` (migrating it here would change it under its workers).
 *
 * `config` is the workers' queue configuration (`--config FILE`), which decides what confirm-stopped
 * and redrive do; without it the queue runs with the defaults.
 */
export async function openOpsQueue(db: string, clock: Clock, schema?: string, config?: Partial<QueueConfig>): Promise<WorkQueue> {
  if (typeof db !== 'string' || db === '') throw new OpsError('invalid_input', '--db expects a SQLite file or a postgres:// URL');
  if (db === ':memory:') throw new OpsError('invalid_input', "--db ':memory:' is private to one process: name the queue's SQLite file or its postgres:// URL");
  const postgres = isPostgresUrl(db);
  if (!postgres && !(existsSync(db) && statSync(db).isFile())) {
    throw new OpsError('missing_database', `no database at ${db}: name the SQLite file your workers open (a look never creates one)`);
  }
  await probeQueue(db, schema);
  let queue: WorkQueue | undefined;
  try {
    queue = openWorkQueue({ db, clock, ...(schema === undefined ? {} : { schema }), ...(config === undefined ? {} : { config }) });
    await queue.liveCount();
    return queue;
  } catch (error) {
    await queue?.close().catch(() => undefined);
    throw opsErrorOf(error, describeDb(db));
  }
}

/** The OpsError an error of opening or reading a queue stands for; anything else is returned as it is (a bug: a crash). */
export function opsErrorOf(error: unknown, where: string): unknown {
  if (error instanceof OpsError) return error;
  if (error instanceof OpenError) return new OpsError('cannot_open', error.message, { cause: error });
  if (error instanceof ConnectionError) return new OpsError('unreachable', `cannot reach ${where}: ${error.message}`, { cause: error });
  if (error instanceof RetryableStoreError) return new OpsError('unreachable', `${where} is not answering: ${error.message}`, { cause: error });
  return error;
}

/**
 * Reads, without writing anything, whether `db` (and `schema`) holds a Leasehold queue at this
 * Leasehold's schema version. No queue tables: `missing_database`. An older version: `cannot_open`
 * (this Leasehold would migrate it). A newer one is left to the open, which refuses it as newer_schema.
 */
export async function probeQueue(db: string, schema?: string): Promise<void> {
  const where = describeDb(db) + (schema === undefined ? '' : ` (schema ${schema})`);
  const version = isPostgresUrl(db) ? await postgresVersion(db, schema) : sqliteVersion(db);
  if (version === undefined) {
    throw new OpsError('missing_database', `no Leasehold queue in ${where}: it has no queue tables; name the ${isPostgresUrl(db) ? 'database and --schema' : 'file'} your workers open (a look never creates one)`);
  }
  if (version < LATEST_SCHEMA_VERSION) {
    throw new OpsError('cannot_open', `the queue in ${where} is at schema version ${version}, older than this Leasehold's ${LATEST_SCHEMA_VERSION}: use the Leasehold version its workers run (opening it here would migrate it under them)`);
  }
}

/** The schema version of a SQLite queue file, undefined when it holds no queue tables. */
function sqliteVersion(path: string): number | undefined {
  let handle: Database.Database | undefined;
  try {
    // The store's default busy timeout (5 s): a writer's lock in rollback-journal mode is waited for, not failed on.
    handle = new Database(path, { readonly: true, fileMustExist: true, timeout: 5_000 });
    const table = handle.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
    if (table === undefined) return undefined;
    const { v } = handle.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations').get() as { v: unknown };
    // Another tool's schema_migrations (Rails keeps text versions) is not a queue's.
    if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new OpsError('cannot_open', `${path} is not a Leasehold queue: its schema_migrations table is another tool's (version ${JSON.stringify(v)})`);
    return v;
  } catch (error) {
    if (error instanceof OpsError) throw error;
    const { code, message } = error as { code?: unknown; message?: unknown };
    if (code === 'SQLITE_BUSY') throw new OpsError('unreachable', `${path} is locked by another process: try again`, { cause: error });
    throw new OpsError('cannot_open', `${path} cannot be opened as a Leasehold queue: ${String(message ?? error)}${typeof code === 'string' ? ` (${code})` : ''}`, { cause: error });
  } finally {
    handle?.close();
  }
}

/** The schema version of a PostgreSQL queue (in `schema`, else the connection's search path), undefined when it has no queue tables. */
async function postgresVersion(url: string, schema: string | undefined): Promise<number | undefined> {
  const where = describeDb(url);
  try {
    checkPostgresUrl(url);
  } catch (error) {
    throw opsErrorOf(error, where);
  }
  // The store's own rule for a schema name (pg-store.ts SCHEMA_NAME), checked before it reaches SQL.
  if (schema !== undefined && !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) throw new OpsError('invalid_input', `--schema expects a PostgreSQL identifier (letters, digits, underscores), got ${JSON.stringify(schema)}`);
  const table = schema === undefined ? 'schema_migrations' : `${quoteIdentifier(schema)}.schema_migrations`;
  const client = new (pgDriver().Client)({ connectionString: url, connectionTimeoutMillis: 10_000 });
  try {
    await client.connect();
    const found = await client.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [table]);
    if (found.rows[0]?.t === null || found.rows[0]?.t === undefined) return undefined;
    const version = await client.query<{ v: number }>(`SELECT COALESCE(MAX(version), 0)::int4 AS v FROM ${table}`);
    return version.rows[0]?.v ?? 0;
  } catch (error) {
    const refused = pgOpenErrorOf(where, error);
    if (refused !== undefined) throw new OpsError('cannot_open', refused.message, { cause: refused });
    if (connectionCodeOf(error) !== undefined) throw new OpsError('unreachable', `cannot reach ${where}: ${(error as Error).message}`, { cause: error });
    // Anything else the server said of these two reads (another tool's schema_migrations, whose version is not an integer): not a queue this version can open.
    const { code, message } = error as { code?: unknown; message?: unknown };
    throw new OpsError('cannot_open', `${where} is not a Leasehold queue this version can open: ${String(message ?? error)}${typeof code === 'string' ? ` (SQLSTATE ${code})` : ''}`, { cause: error });
  } finally {
    await client.end().catch(() => undefined);
  }
}
