/**
 * Typed errors. A caller can tell every failure of the queue apart by class and by `code`, and none of
 * them leaves a partial write behind: each is thrown before, or instead of, a commit.
 */

export class LeaseholdError extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
}

/** A configuration value was out of range; `field` names it. Thrown by openWorkQueue. */
export class ConfigError extends LeaseholdError {
  readonly field: string;

  constructor(field: string, message: string) {
    super('invalid_config', `invalid config field '${field}': ${message}`);
    this.field = field;
  }
}

/**
 * A store error after which the same call may be tried again: the database refused the transaction and
 * rolled it back, so nothing of it was written (Q18). BusyError and StorageError are the two kinds; a
 * caller that retries store trouble catches this class.
 */
export abstract class RetryableStoreError extends LeaseholdError {
  /** The store operation that failed (the queue call's transaction name). */
  readonly operation: string;

  constructor(code: string, operation: string, message: string) {
    super(code, message);
    this.operation = operation;
  }
}

/**
 * SQLITE_BUSY persisted past the busy timeout and the bounded retries (Q18). Nothing was written: the
 * transaction never began or was rolled back, so the caller may retry the same call.
 */
export class BusyError extends RetryableStoreError {
  readonly attempts: number;

  constructor(operation: string, attempts: number) {
    super('db_busy', operation, `database busy: ${operation} gave up after ${attempts} attempt(s)`);
    this.attempts = attempts;
  }
}

/** What the storage beneath the database refused: the disk is full (SQLITE_FULL), or an I/O error (SQLITE_IOERR*). */
export type StorageErrorCode = 'disk_full' | 'io_error';

/**
 * The storage beneath the database failed a statement of a transaction: `disk_full` (SQLITE_FULL: the
 * database could not grow) or `io_error` (SQLITE_IOERR and its extended codes: a read or write of the file
 * failed). The transaction was rolled back, so nothing of it was written, and the call may be tried again
 * (retryable): a full disk may have room later, and a failed I/O never committed. Not retried by the
 * store itself, unlike SQLITE_BUSY: the same write would meet the same full disk at once. `sqliteCode`
 * is SQLite's own code (SQLITE_FULL, SQLITE_IOERR_WRITE, ...).
 *
 * `committed` true: the transaction committed, but the sync of the write-ahead log that follows it
 * failed (under the default durability only an enqueue's sync follows its commit; `sqliteCode` is then
 * the file system's: EIO, ENOSPC, ...), so a power cut may still take it back. Other connections may
 * have seen it. Enqueueing again is safe: it answers duplicate once the WAL is synced.
 */
export class StorageError extends RetryableStoreError {
  declare readonly code: StorageErrorCode;
  readonly sqliteCode: string;
  readonly committed: boolean;

  constructor(operation: string, code: StorageErrorCode, sqliteCode: string, detail: string, committed = false) {
    const what = committed ? `${operation} committed, but the sync of its write-ahead log failed, so a power cut may take it back` : `${operation} was rolled back`;
    super(code, operation, `${code === 'disk_full' ? 'disk full' : 'I/O error'}: ${what} (${sqliteCode}: ${detail})`);
    this.sqliteCode = sqliteCode;
    this.committed = committed;
  }
}

/** An internal invariant did not hold. This is a bug in Leasehold, never a caller's mistake. */
export class InvariantError extends LeaseholdError {
  constructor(message: string) {
    super('invariant_violated', message);
  }
}

/**
 * The database could not be opened as a Leasehold queue; `path` names it and `reason` says why. Thrown
 * by openWorkQueue before anything is written: a file that is not a database, a folder that does not
 * exist, or a schema newer than this Leasehold knows is left exactly as it was.
 *
 * On PostgreSQL (P2, P4; src/store/pg-open-errors.ts) `path` is the URL without its password, and the
 * reasons a server gives are told apart too: a malformed URL (thrown by openWorkQueue itself, as a
 * missing folder is), a database or role that does not exist or may not connect, SSL asked of a server
 * without it, a role that may not create the queue's tables. None is retryable as it stands: each
 * message says what to change. `cause` is the driver's error, `sqlState` the server's code if it gave one.
 */
export class OpenError extends LeaseholdError {
  readonly path: string;
  readonly reason:
    | 'not_a_database'
    | 'missing_folder'
    | 'newer_schema'
    | 'invalid_url'
    | 'no_such_database'
    | 'access_denied'
    | 'ssl_unavailable'
    | 'ssl_rejected'
    | 'permission_denied';
  readonly sqlState: string | undefined;

  constructor(path: string, reason: OpenError['reason'], message: string, detail: { cause?: unknown; sqlState?: string } = {}) {
    super('open_failed', `cannot open ${path}: ${message}`);
    this.path = path;
    this.reason = reason;
    this.sqlState = detail.sqlState;
    if (detail.cause !== undefined) this.cause = detail.cause;
  }
}

/** The queue was used after close(). */
export class ClosedError extends LeaseholdError {
  constructor() {
    super('closed', 'the work queue is closed');
  }
}

/** An argument to a queue call was malformed; `field` names it. Nothing was written. */
export class InputError extends LeaseholdError {
  readonly field: string;

  constructor(field: string, message: string) {
    super('invalid_input', `${field} ${message}`);
    this.field = field;
  }
}

/** What went wrong between the queue and a database server (the PostgreSQL store). */
export type ConnectionErrorCode = 'connection_lost' | 'serialization_failure' | 'deadlock' | 'server_unavailable';

/**
 * The database server refused or dropped a transaction (SPEC P4): a serialization failure (SQLSTATE
 * 40001), a deadlock (40P01), a server shutting down, restarting or not accepting connections yet
 * (57P01, 57P02, 57P03), a session the server ended for idling (57P05, 25P03), a connection exception
 * (class 08), or a socket that failed (ECONNREFUSED, ECONNRESET, EPIPE, "Connection terminated").
 * Retryable: the transaction was rolled back, so nothing of it was written, with one exception that
 * says so: when the connection was lost while COMMIT was in flight, the store asks the server on
 * another connection (txid_status): a commit is the call's success, an abort is retried; when the
 * server cannot say, the commit may or may not have happened (`maybeCommitted`). A retry of the same
 * call is still safe: every write of the core is fenced (a holder's write checks its lease and
 * generation) or idempotent (an enqueue's unique key, an effect's request key), so a repeat of a
 * committed call is refused or answered as before. `sqlState` is the server's code when it sent one, else the socket's.
 * The store retries the ones that happened before COMMIT itself, up to busyRetries times.
 */
export class ConnectionError extends RetryableStoreError {
  declare readonly code: ConnectionErrorCode;
  readonly sqlState: string | undefined;
  readonly maybeCommitted: boolean;
  readonly attempts: number;

  constructor(operation: string, code: ConnectionErrorCode, detail: { sqlState: string | undefined; message: string; maybeCommitted: boolean; attempts: number }) {
    super(
      code,
      operation,
      `${code.replace('_', ' ')}: ${operation} ${detail.maybeCommitted ? 'may have committed (the connection was lost during COMMIT)' : 'was rolled back'} after ${detail.attempts} attempt(s) (${detail.sqlState ?? 'no code'}: ${detail.message})`,
    );
    this.sqlState = detail.sqlState;
    this.maybeCommitted = detail.maybeCommitted;
    this.attempts = detail.attempts;
  }
}

/**
 * A feature needs a package that is not installed: the optional peer dependencies (`pg` for PostgreSQL,
 * `prom-client` for Prometheus text, `@electric-sql/pglite` for the simulator's PostgreSQL, `zod` and
 * `seedrandom` for the harness) are loaded on first use, never by `import 'leasehold'`. `packageName` is
 * the first missing package, `packageNames` all of them, `feature` what needed them; the message ends with
 * the command that installs them. Thrown before anything is written.
 */
export class MissingDependencyError extends LeaseholdError {
  readonly packageName: string;
  readonly packageNames: readonly string[];
  readonly feature: string;

  constructor(feature: string, packageNames: readonly [string, ...string[]], options: { cause?: unknown } = {}) {
    const names = packageNames.map((name) => `"${name}"`);
    const listed = names.length === 1 ? `the ${names[0]} package` : `the ${names.slice(0, -1).join(', ')} and ${names.at(-1)} packages`;
    super('missing_dependency', `leasehold: ${feature} needs ${listed}: npm install ${packageNames.join(' ')}`);
    this.packageName = packageNames[0];
    this.packageNames = Object.freeze([...packageNames]);
    this.feature = feature;
    if (options.cause !== undefined) this.cause = options.cause;
  }
}
