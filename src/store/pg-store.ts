import type { Pool, PoolClient, QueryConfig } from 'pg';
import { ConfigError, ConnectionError, OpenError, type ConnectionErrorCode } from '../queue/errors.ts';
import { SYNCED_WRITES } from './durability.ts';
import { NewerSchemaError } from './migrations.ts';
import { migratePg, quoteIdentifier, type PgSession } from './pg-migrations.ts';
import { checkPostgresUrl, pgOpenErrorOf, redactPostgresUrl } from './pg-open-errors.ts';
import { batchName, batchText, isRowChanged, PgStatements, prepareText, settlePending, SQL, type EnqueueGuess, type Handoff, type PgQuery, type PgQueryConfig, type PgResult } from './pg-statements.ts';
import type { ReadsFirst, Step, Store, StoreTx, TransactionBody } from './store.ts';
import type { ListenConnection, PgListener } from '../adapters/pg-listener.ts';
import { noticeBoardOf, type NoticeBoard } from './notices.ts';
import { pgDriver } from './pg-driver.ts';

/**
 * The PostgreSQL store (SPEC P1-P4): workers on many machines share one queue.
 *
 * Transactions and locking. Every write is one transaction that starts, in its first round trip, with
 * `BEGIN; SELECT pg_advisory_xact_lock(QUEUE_LOCK_CLASS, <the schema's key>)`: one transaction-scoped
 * lock per queue, held until COMMIT or ROLLBACK, that serialises the queue's writers exactly as SQLite's
 * BEGIN IMMEDIATE does. Only then is the clock read (`readClock`), so a lease is judged, and events are
 * stamped, in commit order (Q8, Q15). Every decision of the core (src/queue, src/runs) therefore reads a
 * state no other writer can change until it commits: the claim locks everything it decides on (the
 * chosen task, the occupied slots, the budget and rate counters it checks, the tenant's service) because
 * it holds the one lock every other writer must take first (P3). Plain READ COMMITTED is then enough: no
 * two writers interleave, so there is no write skew to detect, and no serialization failure to retry in
 * the normal course. A reader takes no lock: it runs in a READ ONLY REPEATABLE READ transaction, one
 * snapshot for all of its statements, and never waits for a writer.
 *
 * Two things keep the lock short, so that many workers are not held up behind one:
 *   - A holder's call (complete, fail, acknowledgeCancel, interrupt, reserve: TransactionBody.readsFirst
 *     names its row) reads its row, and what it reads ahead beside it, before it takes the lock, with the
 *     version of all of it (completingRowVersioned: the row's xmin, which every update of the row
 *     changes, whether a newer version of its topic exists, the last checkpoint's usage). The lock and
 *     a check that the version is unchanged (rowUnchanged) then go first in its next round trip, with
 *     its writes and COMMIT, so it holds the lock for no client round trip. The check fails the
 *     transaction, nothing written, when anything it read changed meanwhile (a cancel request, an
 *     expiry, a takeover, a newer version), and the call runs again taking the lock first. What such a
 *     call decides was so when it took the lock, so it is serialised at the lock like any other write;
 *     its clock is read before the lock, so its events can be stamped a little earlier than one
 *     committed just before them (event ids stay in commit order).
 *   - A write commits with synchronous_commit off (ASYNC_COMMIT), so COMMIT releases the lock without
 *     waiting for the disk; the same round trip then runs a one-record synchronous transaction whose
 *     commit flushes the WAL through it, hence through this commit (COMMIT_DURABLY), and the call
 *     returns only after that. So every write a caller was told succeeded is durable, and so is every
 *     write that any acknowledged write read (its flush came later in the one WAL). A call whose answer
 *     is kept (durability.ts SYNCED_WRITES) flushes even when it wrote nothing, as a second cancel
 *     answered already_terminal does: its answer may rest on a commit not flushed yet. A reader may see a
 *     commit in the moment before its flush; if the server crashes right then, that commit is lost with
 *     its caller never told it succeeded (a connection lost during COMMIT: commitOutcome asks, below).
 *
 * The body is a generator over StoreTx (store.ts): each statement yields its query's promise, the
 * driver awaits it and resumes the body with the result (`next(value)`), or throws the failure into
 * the body at that yield (`throw(error)`), where a savepoint can catch it. Then COMMIT, or ROLLBACK on
 * any error; the client goes back to the pool, or is destroyed after a connection error.
 *
 * Round trips. A round trip is most of a statement's cost here, and the queue lock is held across every
 * one after the first, so the statements (pg-statements.ts) send what they can together: the writes
 * whose answer the body does not wait for go with its next statement or with COMMIT (one batch of
 * EXECUTEs), reads whose next call is known come back ahead, and what a holder's call reads first
 * (TransactionBody.readsFirst) goes in the round trip that takes the lock. A claim's time is only
 * read once the lock is held, so its first reads do not take it: the holders, the paused tenants, and
 * every ready tenant's first task whatever the time, which are its heads at its time when each is
 * eligible by then (else the claim reads the heads in a round trip of their own), with the row of the
 * one it will most likely pick. So a claim is 2 round trips with the lock held from the first to the
 * end of the second; a complete is 2, its first made without the lock and its second taking it. An
 * enqueue (ReadsFirst.enqueue) reads its key's versions, whether the key is taken, the id an insert
 * would take, the paused tenants and the live count in the round trip that takes the lock; its
 * SAVEPOINT, insert, event and RELEASE then go with NOTIFY and COMMIT: 2 round trips. The next enqueue
 * of a new topic guesses those reads from what the last one found (EnqueueGuesses) and sends everything,
 * BEGIN and the lock, a check of the guess (enqueueUnchanged), its writes and COMMIT, in 1 round trip;
 * a wrong guess fails that try with nothing written, and it runs again reading. A transaction that
 * makes a task claimable sends its NOTIFY with the task's row when it is the only task live and no
 * tenant is paused (SQL.claimableNotify: the handoff); the store whose listener the notice names (on
 * PGlite, any store of the queue) keeps it, and its next claim answers its first reads from it and
 * sends BEGIN, the lock, a check that the queue is still so (claimUnchanged), its writes and COMMIT in
 * 1 round trip, running again reading if the check fails. (A batch that
 * carried a savepoint's deferred RELEASE and failed runs the transaction again with the RELEASE awaited
 * inside the savepoint, so its body meets the failure where it can catch it.)
 *
 * Errors (P4): the server's and the socket's failures become ConnectionError (errors.ts), retryable.
 * A failure before COMMIT was sent rolled the transaction back (the server rolls back a transaction
 * whose connection is lost), so write() retries it in place, up to busyRetries times, then surfaces
 * it. For a connection lost while COMMIT was in flight the store asks the server (commitOutcome):
 * committed is a success, aborted is retried, and otherwise the error says maybeCommitted. The
 * caller's retry is safe even then, because the core's writes are fenced or idempotent. Any other SQL
 * error (a bug, a constraint) propagates as it is.
 *
 * Connections come from a connector: a pg Pool's clients (one per transaction), or one PGlite database
 * (@electric-sql/pglite, PostgreSQL compiled to WASM, in-process), lent to one transaction at a time in
 * call order. Both run this file's transactions over the same statements (pg-statements.ts) and the
 * same migrations, so the simulator can run the PostgreSQL store's own SQL (SPEC P6).
 *
 * Opening is synchronous from the caller's view: connecting and migrating happen on the first call,
 * which every call awaits; a failure there rejects the call (typed), and the next call tries again.
 */

/** The advisory lock's first key (int4) for the queue's writers; the second is the schema's key. */
export const QUEUE_LOCK_CLASS = 0x4c48_0000;

/**
 * A write transaction commits without waiting for its WAL to reach the disk (so the queue lock, released
 * at COMMIT, is not held across the flush), and the same round trip then flushes it: a one-record
 * transaction of its own, synchronous, whose commit waits for the WAL through its own record, so
 * through this transaction's commit record before it (the WAL is one sequence). The call returns only
 * after that; see the class comment for what this keeps and what it does not.
 */
const ASYNC_COMMIT = 'SET LOCAL synchronous_commit = off;';
/** A one-record transaction of its own (autocommit, synchronous): it returns once the WAL through it is flushed. */
const FLUSH = `pg_logical_emit_message(true, 'leasehold', 'flush') AS flushed`;
export const COMMIT_DURABLY = `COMMIT; SELECT ${FLUSH}`;
/** What commitOutcome asks: the transaction's status, and the WAL flushed through it whatever it says. */
export const COMMIT_OUTCOME = `SELECT txid_status($1::bigint) AS status, ${FLUSH}`;
/** The same for a predicted enqueue, whose transaction id never came back: whether its task's row is there. */
export const INSERT_OUTCOME = (tasks: string) => `SELECT CASE WHEN EXISTS (SELECT 1 FROM ${tasks} WHERE id = $1 AND tenant = $2 AND topic = $3 AND version = $4) THEN 'committed' ELSE 'aborted' END AS status, ${FLUSH}`;
/** And for a claim from a handoff (its BEGIN went with its COMMIT): whether its claimed event is there, by its worker and the lease's generation. */
export const CLAIM_OUTCOME = (events: string) => `SELECT CASE WHEN EXISTS (SELECT 1 FROM ${events} WHERE task_id = $1 AND type = 'claimed' AND worker_id = $2 AND generation = $3) THEN 'committed' ELSE 'aborted' END AS status, ${FLUSH}`;

/** The second key of the queue's advisory locks: an int4 hash (FNV-1a) of the schema ('' for the default). */
export function queueLockKey(schema: string | undefined): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(schema ?? '')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193);
  }
  return hash | 0;
}

/**
 * W1: the channel a queue's claimable notices go on: one per queue (its schema's lock key), so queues in
 * two schemas of one database do not wake each other's workers. A plain identifier, never quoted.
 */
export function claimableChannel(lockKey: number): string {
  return `leasehold_claimable_${(lockKey >>> 0).toString(16)}`;
}

/**
 * One store's guesses of an enqueue's first reads (PgStatements.predictEnqueue): what the last enqueue
 * found, so that an enqueue of a new topic is one round trip while the guess holds, which it does for a
 * producer whose work is done between its enqueues or that fills a backlog alone. None while a tenant
 * is paused, and none for 10 ms after a wrong guess, twice as long after each further miss in a row
 * (up to 1.28 s).
 */
class EnqueueGuesses {
  /** What the last enqueue found, and what it added to the live count. */
  private last: (EnqueueGuess & { added: number }) | undefined;
  /**
   * Which live count a guess takes: the one the last enqueue found ('before', its work done by the
   * next enqueue: an idle fleet) or that plus what it added ('after': a backlog that grows). A miss
   * picks 'after' if that would have been right, else 'before'.
   */
  private live: 'before' | 'after' = 'before';
  /** The base of the guess handed out last, and of the last that missed (until the next enqueue reads). */
  private handedOut: (EnqueueGuess & { added: number }) | undefined;
  private missedFrom: (EnqueueGuess & { added: number }) | undefined;
  private misses = 0;
  private after = -Infinity;

  /** Whether there is anything to guess from (an enqueue committed, no tenant paused). */
  get any(): boolean {
    return this.last !== undefined;
  }

  /** The guess for an enqueue at `now`, or undefined while guessing pauses after a miss. */
  next(now: number): EnqueueGuess | undefined {
    const last = now >= this.after ? this.last : undefined;
    this.handedOut = last;
    return last === undefined ? undefined : { nextId: last.nextId, live: this.live === 'after' ? last.live + last.added : last.live };
  }

  /** The guess handed out last was wrong under the lock. */
  missed(now: number): void {
    this.missedFrom = this.handedOut;
    this.misses = Math.min(this.misses + 1, 8);
    this.after = now + 10 * 2 ** (this.misses - 1);
  }

  /** An enqueue committed: its first reads (found, or guessed and checked) are the next one's guess. */
  saw(statements: PgStatements): void {
    const seen = statements.enqueueSeen!;
    const missed = this.missedFrom;
    this.missedFrom = undefined;
    if (missed !== undefined && !statements.predicted) {
      // Neither: work was done meanwhile besides, as on an idle fleet (its count falls back between enqueues).
      this.live = seen.live === missed.live + missed.added && missed.added !== 0 ? 'after' : 'before';
    }
    this.last = seen.paused ? undefined : { live: seen.live, added: statements.liveAdded, nextId: seen.nextId + (statements.slotUsed ? 1 : 0) };
    if (statements.predicted) this.misses = 0;
  }
}

/** BIGINT (20) and NUMERIC (1700, what SUM of a BIGINT gives) as JavaScript numbers, for this store's queries only. */
const NUMERIC_OIDS = new Set([20, 1700]);
export const PG_TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary'): (value: string) => unknown {
    if (NUMERIC_OIDS.has(oid)) return (value: string) => Number(value);
    return pgDriver().types.getTypeParser(oid, format ?? 'text') as (value: string) => unknown;
  },
};

export interface PgStoreOptions {
  /** How many times a transaction the server refused or dropped before COMMIT is tried again. */
  busyRetries: number;
  /** The schema the queue's tables live in (created if missing); the connection's default otherwise. */
  schema?: string;
  /** W1 (default true): whether a claimable notice carries the task of an idle queue (the handoff), and a claim uses one. */
  handoff?: boolean;
}

const SQLSTATE_CODES: Readonly<Record<string, ConnectionErrorCode>> = {
  '40001': 'serialization_failure',
  '40P01': 'deadlock',
  '57P01': 'connection_lost',
  '57P02': 'connection_lost',
  '57P03': 'server_unavailable',
  // The server ended a session it found idle (idle_session_timeout), or idle in a transaction
  // (idle_in_transaction_session_timeout): a call sent as it did so meets a connection that is gone.
  '57P05': 'connection_lost',
  '25P03': 'connection_lost',
  '08001': 'server_unavailable',
  '08004': 'server_unavailable',
};
const SOCKET_CODES: Readonly<Record<string, ConnectionErrorCode>> = {
  ECONNREFUSED: 'server_unavailable',
  ENOTFOUND: 'server_unavailable',
  EAI_AGAIN: 'server_unavailable',
  ETIMEDOUT: 'server_unavailable',
  ECONNRESET: 'connection_lost',
  EPIPE: 'connection_lost',
};

/** The kind of server or connection failure an error is, or undefined for any other error. */
export function connectionCodeOf(error: unknown): ConnectionErrorCode | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    const known = SQLSTATE_CODES[code] ?? SOCKET_CODES[code];
    if (known !== undefined) return known;
    if (/^08[0-9A-Z]{3}$/.test(code)) return 'connection_lost';
  }
  if (typeof message === 'string' && /Connection terminated|connection error|Client was closed|not queryable/i.test(message)) return 'connection_lost';
  return undefined;
}

/** Whether the connection itself is gone (the client must be destroyed, not returned to the pool). */
function breaksConnection(code: ConnectionErrorCode | undefined): boolean {
  return code === 'connection_lost' || code === 'server_unavailable';
}

function typed(operation: string, error: unknown, code: ConnectionErrorCode, committing: boolean, attempts: number): ConnectionError {
  const { code: raw, message } = error as { code?: unknown; message?: unknown };
  return new ConnectionError(operation, code, {
    sqlState: typeof raw === 'string' ? raw : undefined,
    message: String(message ?? error),
    maybeCommitted: committing && breaksConnection(code),
    attempts,
  });
}

/**
 * What openWorkQueue takes as a pg Pool (which the caller keeps and ends): its connect() and query(). A
 * structural type, so the declarations need no @types/pg; a pg Pool is one.
 */
export interface PgPoolLike {
  connect(): Promise<unknown>;
  query(...args: never[]): unknown;
}

function isPool(target: unknown): target is Pool {
  return typeof target === 'object' && target !== null && typeof (target as Pool).connect === 'function' && typeof (target as Pool).query === 'function';
}

export function isPostgresUrl(target: unknown): target is string {
  return typeof target === 'string' && /^postgres(ql)?:\/\//i.test(target);
}


/**
 * A batch's text, with the PREPARE of every statement this connection has not prepared yet sent first
 * in a round trip of its own (once per connection and statement). A PREPARE outlives a transaction
 * that rolls back, so a name is recorded as prepared once its PREPARE has succeeded.
 */
async function prepareForBatch(prepared: Set<string>, configs: readonly PgQueryConfig[], exec: (text: string) => Promise<unknown>, setPath?: string): Promise<void> {
  const missing = [...new Map(configs.filter((config) => config.control !== true && !prepared.has(batchName(config))).map((config) => [batchName(config), config])).values()];
  if (missing.length === 0) return;
  const statements = missing.map(prepareText).join(';\n');
  await exec(setPath === undefined ? statements : `BEGIN; ${setPath} ${statements}; COMMIT`);
  for (const config of missing) prepared.add(batchName(config));
}

/** The statements each connection has prepared for batches, by client (a pooled client is one server session). */
const BATCH_PREPARED = new WeakMap<object, Set<string>>();

function preparedOn(session: object): Set<string> {
  let names = BATCH_PREPARED.get(session);
  if (names === undefined) {
    names = new Set();
    BATCH_PREPARED.set(session, names);
  }
  return names;
}

/** Each client's runner (runnerOf), made once. */
const RUNNERS = new WeakMap<PoolClient, PgQuery & PgSession>();

/** One connection's query runner for the statements: this store's number parsing on every query. */
function runnerOf(client: PoolClient): PgQuery & PgSession {
  let runner = RUNNERS.get(client);
  if (runner === undefined) RUNNERS.set(client, (runner = newRunner(client)));
  return runner;
}

function newRunner(client: PoolClient): PgQuery & PgSession {
  const simple = (text: string) => client.query({ text, types: PG_TYPES } as QueryConfig) as unknown as Promise<PgResult | PgResult[]>;
  return {
    query(config: PgQueryConfig | string, values?: unknown[]): Promise<PgResult> {
      const query = typeof config === 'string' ? { text: config, ...(values === undefined ? {} : { values }) } : config;
      return client.query({ ...query, types: PG_TYPES } as QueryConfig) as unknown as Promise<PgResult>;
    },
    async batch(configs: readonly PgQueryConfig[], trailer?: string, leader?: string): Promise<PgResult[]> {
      await prepareForBatch(preparedOn(client), configs, simple);
      const results = await simple(batchText(configs, trailer, leader));
      // pg answers a text of one statement with its result, of several with one result each.
      const all = Array.isArray(results) ? results : [results];
      const end = all.length - (trailer === undefined ? 0 : 1);
      return leader === undefined ? all.slice(0, configs.length) : all.slice(0, end);
    },
    prepareIn: (configs: readonly PgQueryConfig[], setPath: string) => prepareForBatch(preparedOn(client), configs, simple, setPath),
  } as PgQuery & PgSession;
}

/** One connection lent to one transaction (or the migration): give it back with `release`, passing the error that broke it, if one did. */
export interface PgLease {
  runner: PgQuery & PgSession;
  release(broken?: unknown): void;
}

/** Where the store's connections come from: a pg Pool, or one PGlite database. `acquire` rejects with a connection failure as the driver gives it. */
export interface PgConnector {
  acquire(): Promise<PgLease>;
  /** Ends what the store owns (its own pool); a connection passed in stays the caller's. */
  end(): Promise<void>;
}

/** Clients this module listens to for 'error' (see poolConnector), and those that have emitted one. */
const LISTENED = new WeakSet<PoolClient>();
const FAILED = new WeakSet<PoolClient>();

/**
 * A pg Pool's clients, one per transaction; `owned`: the store made the pool, and ends it on close.
 *
 * An owned pool's client given back whole is kept for the next transaction while nobody waits on the
 * pool, instead of going back to it: taking it again is a field read, where pool.connect() defers to the
 * next tick, clears the client's idle timer and emits events (about 0.1 to 0.2 ms on an idle machine,
 * paid twice on an idle fleet's pickup, by the enqueue and by the claim). The pool keeps every client it
 * opened either way (idleTimeoutMillis 0), so this holds no connection the pool would not. A caller's
 * pool gets every client back at once: it may serve the caller's own queries too.
 */
function poolConnector(pool: Pool, owned: boolean): PgConnector {
  let kept: PoolClient | undefined;
  let ended = false;
  const lease = (client: PoolClient): PgLease => ({ runner: runnerOf(client), release: (broken) => giveBack(client, broken) });
  const giveBack = (client: PoolClient, broken: unknown): void => {
    if (owned && !ended && broken === undefined && kept === undefined && pool.waitingCount === 0 && !FAILED.has(client)) kept = client;
    else client.release(broken as Error | undefined);
  };
  return {
    async acquire(): Promise<PgLease> {
      const held = kept;
      kept = undefined;
      if (held !== undefined) {
        // A connection the server dropped while it was kept is destroyed, as the pool removes an idle one.
        if (!FAILED.has(held)) return lease(held);
        held.release(new Error('the connection was lost while idle'));
      }
      const client = await pool.connect();
      // A server that ends the session (a restart, pg_terminate_backend) makes pg emit 'error' on a
      // checked-out client besides failing its query; unheard, that event would end the process. The
      // query's own failure is what the transaction handles, so the event is only noted.
      if (!LISTENED.has(client)) {
        client.on('error', () => FAILED.add(client));
        LISTENED.add(client);
      }
      return lease(client);
    },
    end: () => {
      ended = true;
      kept?.release();
      kept = undefined;
      return owned ? pool.end() : Promise.resolve();
    },
  };
}

/** What the store needs of a PGlite database (@electric-sql/pglite): its query and exec. */
export interface PgliteLike {
  query(text: string, params?: unknown[], options?: { parsers?: Record<number, (value: string) => unknown> }): Promise<{ rows: unknown[]; affectedRows?: number }>;
  exec(text: string, options?: { parsers?: Record<number, (value: string) => unknown> }): Promise<{ rows: unknown[]; affectedRows?: number }[]>;
  readonly waitReady: Promise<void>;
}

export function isPglite(target: unknown): target is PgliteLike {
  return (
    typeof target === 'object' &&
    target !== null &&
    typeof (target as PgliteLike).exec === 'function' &&
    typeof (target as PgliteLike).query === 'function' &&
    typeof (target as { waitReady?: unknown }).waitReady === 'object'
  );
}

/** BIGINT and NUMERIC as numbers on PGlite too (its own parser table: oid to parser). */
const PGLITE_PARSERS: Record<number, (value: string) => unknown> = Object.fromEntries([...NUMERIC_OIDS].map((oid) => [oid, (value: string) => Number(value)]));

/** A value batchText can send as a literal. */
function isLiteral(value: unknown): boolean {
  return value === null || value === undefined || ['number', 'bigint', 'boolean', 'string'].includes(typeof value);
}

/**
 * PGlite's runner. A named statement runs prepared: PGlite's extended protocol keeps no named
 * statement, so it would parse and plan the text anew on every call (most of a short statement's cost
 * in WASM); instead it is PREPAREd once on the database and each call is an EXECUTE with its values as
 * literals (batchText), as a batch's statements are. An unnamed statement with values goes through the
 * extended protocol (`query`). A text without values (BEGIN with its lock, a migration's DDL) may hold
 * several statements, so it goes through the simple protocol (`exec`), and the last statement's result
 * is the answer, as pg gives for a multi-statement text's last.
 */
function pgliteRunner(db: PgliteLike): PgQuery & PgSession {
  const shaped = (result: { rows: unknown[]; affectedRows?: number } | undefined): PgResult => ({
    rows: (result?.rows ?? []) as Record<string, unknown>[],
    // PGlite counts the rows a write touched (affectedRows, 0 for a SELECT); pg's rowCount is that, or the rows a SELECT returned.
    rowCount: Math.max(result?.affectedRows ?? 0, result?.rows.length ?? 0),
  });
  const exec = (text: string) => db.exec(text, { parsers: PGLITE_PARSERS });
  return {
    async query(config: PgQueryConfig | string, values?: unknown[]): Promise<PgResult> {
      if (typeof config === 'string' && values === undefined) return shaped((await exec(config)).at(-1));
      // A named statement runs prepared (EXECUTE of its PREPARE, once per database): PGlite's extended
      // protocol would parse and plan it anew on every call, which is most of a simple statement's cost.
      if (typeof config !== 'string' && config.name !== undefined && config.values.every(isLiteral)) {
        await prepareForBatch(preparedOn(db), [config], exec);
        return shaped((await exec(batchText([config]))).at(-1));
      }
      const { text, values: bound } = typeof config === 'string' ? { text: config, values: values ?? [] } : config;
      // Transaction control (SAVEPOINT, RELEASE, ROLLBACK TO) has no values: one simple-protocol message.
      if (bound.length === 0) return shaped((await exec(text)).at(-1));
      return shaped(await db.query(text, bound, { parsers: PGLITE_PARSERS }));
    },
    async batch(configs: readonly PgQueryConfig[], trailer?: string, leader?: string): Promise<PgResult[]> {
      await prepareForBatch(preparedOn(db), configs, exec);
      const results = await exec(batchText(configs, trailer, leader));
      // PGlite's affectedRows runs on through one exec (each result carries the sum so far): a statement's own count is the difference.
      let before = 0;
      const end = results.length - (trailer === undefined ? 0 : 1);
      return (leader === undefined ? results.slice(0, configs.length) : results.slice(0, end)).map((result) => {
        const after = result.affectedRows ?? before;
        const own = { rows: result.rows, affectedRows: after - before };
        before = after;
        return shaped(own);
      });
    },
    prepareIn: (configs: readonly PgQueryConfig[], setPath: string) => prepareForBatch(preparedOn(db), configs, exec, setPath),
  } as PgQuery & PgSession;
}

/**
 * A URL's connection settings with the schema's search_path among its session options. Quoted: the
 * server folds an unquoted name to lower case, and the migration creates the schema by its quoted name.
 * pg lets a URL's own parameters override the pool's, so a URL that has an `options` of its own (a
 * statement_timeout, say) gets the search_path added to it; otherwise the pool's `options` carry it.
 */
function sessionOptions(url: string, schema: string | undefined): { connectionString: string; options?: string } {
  if (schema === undefined) return { connectionString: url };
  const searchPath = `-c search_path=${quoteIdentifier(schema)}`;
  const parsed = new URL(url);
  const own = parsed.searchParams.get('options');
  if (own === null) return { connectionString: url, options: searchPath };
  parsed.searchParams.set('options', own.trim() === '' ? searchPath : `${own} ${searchPath}`);
  return { connectionString: parsed.toString() };
}

/** Each PGlite database's handoff slots (PgStore.handoffs), one per queue (schema), shared by every store on it. */
const PGLITE_HANDOFFS = new WeakMap<PgliteLike, Map<string, { text: string | undefined }>>();

function handoffsOf(db: PgliteLike, schema: string | undefined): { text: string | undefined } {
  let slots = PGLITE_HANDOFFS.get(db);
  if (slots === undefined) PGLITE_HANDOFFS.set(db, (slots = new Map()));
  let slot = slots.get(schema ?? '');
  if (slot === undefined) slots.set(schema ?? '', (slot = { text: undefined }));
  return slot;
}

/** Each PGlite database's queue of leases: the end of the last lease asked for, shared by every store on the database. */
const PGLITE_TURNS = new WeakMap<PgliteLike, Promise<void>>();

/**
 * One PGlite database is one connection: it is lent to one transaction at a time, in the order they
 * asked for it (each acquire waits for the lease before it to be released), whichever store on the
 * database asks. The database stays the caller's: end() refuses later transactions, as a closed pool
 * would, and waits for this store's transactions in flight to end.
 */
export function pgliteConnector(db: PgliteLike): PgConnector {
  const runner = pgliteRunner(db);
  let ended = false;
  /** The release of this connector's last lease: end() waits for it, so nothing of this store is in flight after close. */
  let lastLease: Promise<void> = Promise.resolve();
  return {
    acquire(): Promise<PgLease> {
      if (ended) return Promise.reject(new Error('Client was closed and is not queryable'));
      const { ready, release, released } = queueForPglite(db);
      lastLease = released;
      return ready.then(
        () => ({ runner, release: () => release() }),
        (error: unknown) => {
          release();
          throw error;
        },
      );
    },
    async end(): Promise<void> {
      ended = true;
      await lastLease;
    },
  };
}

/** Takes a place in the database's queue of leases: `ready` once every lease asked for before is released. */
function queueForPglite(db: PgliteLike): { ready: Promise<void>; release: () => void; released: Promise<void> } {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const ready = PGLITE_TURNS.get(db) ?? db.waitReady;
  PGLITE_TURNS.set(db, ready.then(() => released, () => released));
  // Only the first lease's `ready` can reject (the database failed to start); later ones wait on releases alone.
  return { ready, release, released };
}

/**
 * Runs `work` on the PGlite database with the connection to itself: after every transaction any store
 * on it asked for before, and before any asked for after (a test's DROP SCHEMA, the simulator's reset).
 */
export async function withPgliteConnection<T>(db: PgliteLike, work: () => Promise<T>): Promise<T> {
  const { ready, release } = queueForPglite(db);
  try {
    await ready;
    return await work();
  } finally {
    release();
  }
}

/** Runs a body to its end: awaits each yielded statement, sends its result back or throws its failure in. */
async function drive<T>(body: Step<T>): Promise<T> {
  let step = body.next();
  while (step.done !== true) {
    let value: unknown;
    try {
      value = await step.value;
    } catch (error) {
      if (typeof body.throw !== 'function') throw error;
      step = body.throw(error);
      continue;
    }
    step = body.next(value);
  }
  return step.value;
}

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

export class PgStore implements Store {
  readonly kind: 'postgres' | 'pglite';
  /** The simulator's seams (store.ts AsynchronousSeams): writeAtCommit, readAtCommit, committedEventCursor. @internal */
  readonly seams = 'asynchronous';
  private readonly lockKey: number;
  /** SET LOCAL search_path for a connection passed in (a pool this store creates sets it per connection). */
  private readonly setPath: string;
  private ready: Promise<void> | undefined;
  /** The last write asked for, settled (never rejects): the next write and every read start after it. */
  private lastWrite: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** The newest event id this store knows committed: read once on open, then kept by every commit that inserted one. */
  private cursor = 0;
  /** W1: the NOTIFY sent before COMMIT by a transaction that made a task claimable (SQL.claimableNotify). */
  private readonly notify: PgQueryConfig;
  /**
   * W1: the last handoff heard (the one ready task of an idle queue), taken by the next claim: on a
   * server from the notices that name this store's listener, on PGlite from the commit of any store of
   * the queue on the same database (one slot per database and schema).
   */
  private readonly handoffs: { text: string | undefined };
  /** W1: the guesses of an enqueue's first reads, from what the last enqueue found (EnqueueGuesses). */
  private readonly guesses = new EnqueueGuesses();
  /** W1 on a server: the LISTEN connection, opened by the first watcher (adapters/pg-listener.ts, loaded then). */
  private listener: Promise<PgListener> | undefined;
  /** W1 on PGlite (one process): the database's board, published after each claimable commit. */
  private readonly board: NoticeBoard | undefined;

  private constructor(
    private readonly connector: PgConnector,
    private readonly options: PgStoreOptions,
    private readonly at: () => number,
    private readonly label: string,
    sessionPath: boolean,
    kind: 'postgres' | 'pglite',
    /** How to open a connection for LISTEN (a server), or the PGlite database whose board carries the notices. */
    private readonly hearing: { listen: () => Promise<ListenConnection> } | { pglite: PgliteLike },
  ) {
    this.kind = kind;
    this.lockKey = queueLockKey(options.schema);
    this.notify = options.handoff === false
      ? { name: 'leasehold_claimableNotifyBare', text: SQL.claimableNotifyBare, values: [claimableChannel(this.lockKey)] }
      : { name: 'leasehold_claimableNotify', text: SQL.claimableNotify, values: [claimableChannel(this.lockKey)] };
    this.handoffs = 'pglite' in hearing ? handoffsOf(hearing.pglite, options.schema) : { text: undefined };
    this.board = 'pglite' in hearing ? noticeBoardOf(hearing.pglite) : undefined;
    this.setPath = options.schema !== undefined && !sessionPath ? `SET LOCAL search_path TO ${quoteIdentifier(options.schema)};` : '';
  }

  /**
   * Returns at once: the connection is made and the schema migrated (with `at()` as the migration time)
   * on the first call. A URL gets a pool of the store's own, ended by close(); a pool passed in stays
   * the caller's, and so does a PGlite database (the same statements and transactions, in-process).
   */
  static open(target: string | PgPoolLike | PgliteLike, options: PgStoreOptions, at: () => number): PgStore {
    if (options.schema !== undefined && !SCHEMA_NAME.test(options.schema)) {
      throw new ConfigError('schema', 'expected a PostgreSQL identifier (letters, digits, underscores)');
    }
    if (isPostgresUrl(target)) {
      // P2: a malformed URL is refused here, synchronously, as SQLite refuses a missing folder.
      checkPostgresUrl(target);
      // pg is loaded here, on first use: a SQLite user need not install it (MissingDependencyError if missing).
      const pg = pgDriver();
      const pool = new pg.Pool({
        ...sessionOptions(target, options.schema),
        types: PG_TYPES,
        // W1: an idle worker's next claim must not wait for a new connection and its statements' PREPARE:
        // the pool keeps what it opened (the default closed it after 10 s idle, so the first claim after a
        // quiet spell paid a connect, an authentication and a round trip of PREPAREs).
        idleTimeoutMillis: 0,
      });
      // A pooled connection the server drops while idle is removed by the pool, which then emits
      // 'error': the next call gets a fresh connection, so the event needs no handling beyond this.
      pool.on('error', () => undefined);
      // LISTEN needs a session of its own for as long as the store listens: a client outside the pool.
      const listen = async (): Promise<ListenConnection> => {
        const client = new pg.Client({ connectionString: target, keepAlive: true });
        client.on('error', () => undefined);
        await client.connect();
        return { client, release: () => void client.end().catch(() => undefined) };
      };
      return new PgStore(poolConnector(pool, true), options, at, redactPostgresUrl(target), true, 'postgres', { listen });
    }
    if (isPool(target)) {
      // A client taken from the caller's pool for good, and destroyed when given back: a session that has
      // run LISTEN must not go back to the pool, where any transaction could take it.
      const listen = async (): Promise<ListenConnection> => {
        const client = await target.connect();
        return { client, release: (broken) => client.release(broken ?? new Error('LISTEN connection closed')) };
      };
      return new PgStore(poolConnector(target, false), options, at, 'a pg pool', false, 'postgres', { listen });
    }
    if (isPglite(target)) return new PgStore(pgliteConnector(target), options, at, 'a PGlite database', false, 'pglite', { pglite: target });
    throw new ConfigError('db', 'expected a postgres:// URL, a pg Pool or a PGlite database');
  }

  /**
   * The newest event id committed through this store (and, on open, found in the database): the event
   * cursor after its last commit, known without a query. Exact while this store is the queue's only
   * writer (the simulator's PGlite world); with other writers it may lag theirs. @internal
   */
  committedEventCursor(): number {
    return this.cursor;
  }

  /**
   * W1: `listener` is called after a transaction that made a task claimable committed: on a server, from
   * any host (the store's one LISTEN connection, opened with the first watcher); on PGlite, from any store
   * on the same database in this process.
   */
  watch(listener: () => void): () => void {
    if (this.closed) return () => {};
    if (this.board !== undefined) return this.board.subscribe(listener);
    if (this.listener === undefined) {
      const { listen } = this.hearing as { listen: () => Promise<ListenConnection> };
      const handedOff = (text: string | undefined) => {
        this.handoffs.text = text;
      };
      this.listener = import('../adapters/pg-listener.ts').then(({ PgListener: Listener }) => new Listener(listen, claimableChannel(this.lockKey), undefined, handedOff));
    }
    let unsubscribe: (() => void) | undefined;
    let stopped = false;
    void this.listener.then(
      (heard) => {
        if (!stopped && !this.closed) unsubscribe = heard.subscribe(listener);
      },
      // No LISTEN: the workers' poll stays in charge.
      () => undefined,
    );
    return () => {
      stopped = true;
      unsubscribe?.();
    };
  }

  /** Connects and migrates once; a failure rejects the calls waiting for it, and the next call tries again. */
  private whenReady(): Promise<void> {
    if (this.ready === undefined) {
      const attempt = this.migrate();
      this.ready = attempt;
      attempt.catch(() => {
        if (this.ready === attempt) this.ready = undefined;
      });
    }
    return this.ready;
  }

  private async migrate(): Promise<void> {
    // P2, P4: a missing database, a refused role or SSL the server lacks is an OpenError saying what to do.
    const lease = await this.checkout('open', 1).catch((error: unknown) => {
      throw pgOpenErrorOf(this.label, error) ?? error;
    });
    let broken: unknown;
    try {
      await migratePg(lease.runner, this.at(), this.lockKey, this.options.schema);
      const cursor = await lease.runner.query({ text: `SELECT COALESCE(MAX(id), 0) AS v FROM ${this.qualified('events')}`, values: [] });
      this.cursor = Number(cursor.rows[0]?.v ?? 0);
    } catch (error) {
      if (error instanceof NewerSchemaError) throw new OpenError(this.label, 'newer_schema', error.message);
      const refused = pgOpenErrorOf(this.label, error);
      if (refused !== undefined) throw refused;
      const code = connectionCodeOf(error);
      if (breaksConnection(code)) broken = error;
      throw code === undefined ? error : typed('open', error, code, false, 1);
    } finally {
      lease.release(broken);
    }
  }

  private async checkout(operation: string, attempt: number): Promise<PgLease> {
    try {
      return await this.connector.acquire();
    } catch (error) {
      const code = connectionCodeOf(error);
      throw code === undefined ? error : typed(operation, error, code, false, attempt);
    }
  }

  /**
   * One process's writes are taken in call order (each starts once the one before it has settled), as
   * SQLite's are: the advisory lock serialises them anyway, and its waiters are not served in the order
   * the calls were made. Writers of other processes and hosts queue on the lock itself.
   */
  write<T>(operation: string, readClock: () => number, body: TransactionBody<T>): Promise<T> {
    return this.writeAtCommit(operation, readClock, body, undefined);
  }

  /** A read sees every write this store was asked for before it (it starts once they have settled), and waits for no later one. */
  read<T>(operation: string, body: (tx: StoreTx) => Step<T>): Promise<T> {
    return this.readAtCommit(operation, body, undefined);
  }

  /** `write`, telling `atCommit` (if given) the event cursor the moment it committed, before any later transaction ran. @internal */
  writeAtCommit<T>(operation: string, readClock: () => number, body: TransactionBody<T>, atCommit: ((cursor: number) => void) | undefined): Promise<T> {
    const run = () =>
      this.transaction(
        operation,
        // The transaction's id comes back in the same round trip: if the connection is lost while COMMIT
        // is in flight, txid_status on another connection tells whether it committed (commitOutcome).
        `BEGIN; ${this.setPath} ${ASYNC_COMMIT} SELECT pg_advisory_xact_lock(${QUEUE_LOCK_CLASS}, ${this.lockKey}) AS locked, txid_current() AS xid`,
        // The clock is read once the lock is held (the first round trip has returned); the statements
        // get the time too, for what they read ahead by it.
        () => {
          const at = readClock();
          return { at, body: (tx: StoreTx) => body(tx, at) };
        },
        atCommit,
        // What the body reads first (the holder's row of its task, or a claim's holders and heads) goes in
        // the same first round trip, after the lock; the clock read just before it picks a claim's likely row.
        body.readsFirst,
        readClock,
      );
    const next = this.lastWrite.then(run, run);
    this.lastWrite = next.catch(() => undefined);
    return next;
  }

  /** `read`, telling `atCommit` (if given) the event cursor once the read's transaction ended. @internal */
  readAtCommit<T>(operation: string, body: (tx: StoreTx) => Step<T>, atCommit: ((cursor: number) => void) | undefined): Promise<T> {
    const run = () => this.transaction(operation, `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; ${this.setPath}`, () => ({ at: undefined, body }), atCommit);
    return this.lastWrite.then(run, run);
  }

  private async transaction<T>(
    operation: string,
    begin: string,
    start: () => { at: number | undefined; body: (tx: StoreTx) => Step<T> },
    settled: ((cursor: number) => void) | undefined,
    readsFirst?: ReadsFirst,
    readClock?: () => number,
  ): Promise<T> {
    await this.whenReady();
    // A holder's call reads its row before it takes the lock, and checks it unchanged under the lock
    // (the class comment); a change means one more try, taking the lock first.
    let holderFirst = readsFirst?.holderRow !== undefined && readClock !== undefined;
    // A savepoint's RELEASE goes with the next batch, unless a batch that carried one failed: then the
    // transaction runs again with it awaited in the savepoint (PgStatements.deferRelease).
    let deferRelease = true;
    // An enqueue guesses its first reads while the last guess held or its pause after a miss is over.
    let guess = readsFirst?.enqueue !== undefined && readClock !== undefined && this.guesses.any ? this.guesses.next(readClock()) : undefined;
    // W1: a claim takes the handoff heard last, if any, and answers its first reads from it.
    let handoff = readsFirst?.claim !== undefined && readClock !== undefined ? this.takeHandoff() : undefined;
    for (let attempt = 1; ; attempt++) {
      let lease: PgLease;
      try {
        lease = await this.checkout(operation, attempt);
      } catch (error) {
        if (error instanceof ConnectionError && attempt <= this.options.busyRetries) continue;
        throw error;
      }
      let committing = false;
      let broken: unknown;
      let xid: string | undefined;
      let result: T | undefined;
      let statements: PgStatements | undefined;
      const unlocked = holderFirst;
      try {
        const { runner } = lease;
        // A claim's time is only known once the lock is held: the clock read now picks which head's row is read ahead.
        const before = readsFirst?.claim !== undefined && readClock !== undefined ? readClock() : undefined;
        const predicted = guess !== undefined || handoff !== undefined;
        const first = predicted ? [] : PgStatements.readsFirst(readsFirst, before, unlocked);
        let begun: PgResult[];
        if (predicted) {
          // Nothing is sent yet: BEGIN goes with the body's first round trip (predictEnqueue, predictClaim).
          begun = [];
        } else if (first.length === 0) {
          const answer = (await runner.query(begin)) as PgResult | PgResult[];
          // pg answers a text of several statements with one result each.
          begun = Array.isArray(answer) ? answer : [answer];
        } else {
          await runner.prepareIn(first, this.setPath);
          // The transaction gets its id in its first round trip either way (commitOutcome needs it).
          begun = await runner.batch(first, undefined, unlocked ? `BEGIN; ${this.setPath} ${ASYNC_COMMIT} SELECT txid_current() AS xid` : begin);
        }
        // The xid's result is the one just before the first reads' (the last of the BEGIN's statements).
        const xidRow = begun[begun.length - first.length - 1]?.rows[0];
        xid = xidRow?.xid === undefined || xidRow.xid === null ? undefined : String(xidRow.xid);
        const { at, body } = start();
        statements = new PgStatements(runner, at);
        statements.deferRelease = deferRelease;
        if (guess !== undefined) statements.predictEnqueue(readsFirst!.enqueue!, guess, { text: begin, setPath: this.setPath });
        else if (handoff !== undefined) statements.predictClaim(readsFirst!, handoff, { text: begin, setPath: this.setPath });
        else statements.answeredFirst(readsFirst, begun.slice(begun.length - first.length));
        if (unlocked) statements.lockFirst(QUEUE_LOCK_CLASS, this.lockKey);
        result = await drive(body(statements));
        // The writes the body left pending go in COMMIT's own round trip.
        const writes = statements.takePending();
        committing = true;
        // A write transaction's COMMIT flushes its WAL after the lock is released (COMMIT_DURABLY). One that
        // wrote nothing (a claim that found no task, a read) has nothing of its own to flush, unless its
        // answer is one a caller is told is kept (SYNCED_WRITES): a cancel of a task already cancelled.
        // That answer may rest on another connection's commit in the moment before its flush, so the flush
        // goes through that commit too before the call returns. (A resent enqueue answered duplicate sent
        // its insert, which changed nothing: that counts as a write, and it flushed already.)
        const closing = at !== undefined && (statements.wrote || SYNCED_WRITES.has(operation)) ? COMMIT_DURABLY : 'COMMIT';
        // W1: one NOTIFY per transaction, only for one that made a task claimable. PostgreSQL delivers it
        // at COMMIT and not at all on a rollback, and it serialises notifying commits on one lock, so a
        // claim, a heartbeat or a complete does not send one. Its payload is the transaction's id, which
        // names the listener told first (PgListener), then the handoff if the queue has one (claimableNotify).
        const notify = statements.claimable ? [this.notify] : [];
        let handedOff: unknown;
        if (writes.length === 0 && notify.length === 0 && !statements.unbegun) await runner.query(closing);
        else {
          const failing = statements;
          const results = await statements.batchOf([...writes.map((write) => write.config), ...notify], closing).catch((error: unknown) => Promise.reject(failing.failed(error, writes)));
          settlePending(writes, results);
          handedOff = results[writes.length]?.rows[0]?.handoff;
          xid ??= statements.xid;
        }
        // On PGlite the handoff goes to the next claim of any store of the queue (a server's goes by NOTIFY).
        if (this.kind === 'pglite' && notify.length > 0) this.handoffs.text = typeof handedOff === 'string' ? handedOff : undefined;
        if (statements.enqueueSeen !== undefined) this.guesses.saw(statements);
        if (statements.lastEventId !== undefined && statements.lastEventId > this.cursor) this.cursor = statements.lastEventId;
        settled?.(this.cursor);
        if (statements.claimable) this.board?.publish();
        return result;
      } catch (error) {
        const code = connectionCodeOf(error);
        if (breaksConnection(code)) broken = error;
        else {
          try {
            await lease.runner.query('ROLLBACK');
          } catch (rollbackError) {
            broken = rollbackError;
          }
        }
        if ((guess !== undefined || handoff !== undefined || unlocked) && (statements?.rowChanged === true || isRowChanged(error))) {
          // What the body decided on before the lock was not so under it (an enqueue's guess, a claim's
          // handoff, a holder's row read first): nothing was written; it runs again reading, taking the
          // lock first. Not a failure of the server: no attempt spent. A wrong guess pauses guessing.
          if (guess !== undefined) this.guesses.missed(readClock!());
          guess = undefined;
          handoff = undefined;
          holderFirst = false;
          attempt--;
          continue;
        }
        if (code === undefined && statements?.releaseFailed === true && deferRelease) {
          // A batch that carried a savepoint's RELEASE failed, so the body never met the failure inside its
          // savepoint: nothing was written; it runs again with the RELEASE awaited there. No attempt spent.
          deferRelease = false;
          attempt--;
          continue;
        }
        if (code === undefined) throw error;
        // Nothing was committed unless the connection broke while COMMIT was in flight (an error the
        // server answered with aborted the transaction, COMMIT with it). Then the server says which.
        // A predicted enqueue sent its BEGIN with COMMIT, so its id never came back: its inserted row says.
        const inserted = xid === undefined && statements?.predicted === true && statements.slotUsed && readsFirst?.enqueue !== undefined ? { ...readsFirst.enqueue, id: statements.enqueueSeen!.nextId } : undefined;
        // A claim from a handoff likewise: its claimed event says.
        const claimed = xid === undefined && statements?.claimPredicted === true ? statements.claimedEvent : undefined;
        const outcome = committing && breaksConnection(code) ? await this.commitOutcome(inserted ?? claimed ?? xid) : 'aborted';
        if (outcome === 'committed') {
          settled?.(this.cursor);
          if (statements?.claimable === true) this.board?.publish();
          return result as T;
        }
        if (outcome === 'aborted' && attempt <= this.options.busyRetries) continue;
        throw typed(operation, error, code, outcome === 'unknown', attempt);
      } finally {
        lease.release(broken);
      }
    }
  }

  /**
   * Whether the transaction `xid` committed, asked on another connection after its own was lost while
   * COMMIT was in flight: 'committed' or 'aborted' as txid_status answers (a terminated backend's open
   * transaction is aborted), 'unknown' when it cannot tell (still in progress, no xid, no server).
   */
  private async commitOutcome(
    xid: string | { id: number; tenant: string; topic: string; version: number } | { task_id: number; worker_id: string; generation: number } | undefined,
  ): Promise<'committed' | 'aborted' | 'unknown'> {
    if (xid === undefined) return 'unknown';
    let lease: PgLease;
    try {
      lease = await this.connector.acquire();
    } catch {
      return 'unknown';
    }
    let broken: unknown;
    try {
      // Committed may not be flushed yet (the transaction's own flush went with the lost connection): this
      // statement's one-record synchronous transaction flushes the WAL through it before it answers.
      const asked =
        typeof xid === 'string'
          ? { text: COMMIT_OUTCOME, values: [xid] }
          : 'task_id' in xid
            ? { text: CLAIM_OUTCOME(this.qualified('events')), values: [xid.task_id, xid.worker_id, xid.generation] }
            : { text: INSERT_OUTCOME(this.qualified('tasks')), values: [xid.id, xid.tenant, xid.topic, xid.version] };
      const status = (await lease.runner.query(asked)).rows[0]?.status;
      return status === 'committed' ? 'committed' : status === 'aborted' ? 'aborted' : 'unknown';
    } catch (error) {
      broken = error;
      return 'unknown';
    } finally {
      lease.release(broken);
    }
  }

  /** The handoff heard last, read back (PgStatements.handoff), and forgotten: one claim tries it. */
  private takeHandoff(): Handoff | undefined {
    const text = this.handoffs.text;
    if (text === undefined || this.options.handoff === false) return undefined;
    this.handoffs.text = undefined;
    return PgStatements.handoff(text);
  }

    /** A table of this store's schema, named so that no search_path is needed (a statement outside its transactions). */
  private qualified(table: string): string {
    return this.options.schema === undefined ? table : `${quoteIdentifier(this.options.schema)}.${table}`;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.listener !== undefined) await this.listener.then((heard) => heard.close(), () => undefined);
    await this.lastWrite;
    if (this.ready !== undefined) await this.ready.catch(() => undefined);
    await this.connector.end();
  }
}
