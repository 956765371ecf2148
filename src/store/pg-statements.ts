import { InvariantError } from '../queue/errors.ts';
import { PRIORITY_RANGE, scoreSql } from '../queue/scoring.ts';
import { OCCUPYING_SQL } from '../queue/states.ts';
import type { HoldingRow, LevelHeadRow, PauseRow, Step, ReadsFirst, StoreTx } from './store.ts';
import { tenantPauseDelete, tenantPauseInsert, tenantPauseList } from './sql/admission.ts';
import { taskInsertSlot } from './sql/task-writes.ts';
import { counterLive, counterLiveAdjust, taskLatestVersion, taskOlderUnstarted } from './sql/tasks.ts';
import { eventInsert } from './sql/events.ts';
import { COMPLETING_AHEAD, COMPLETING_COLUMNS, holderRow } from './sql/holders.ts';
import { CANDIDATE_COLUMNS, claimCandidate, claimHolding, claimLevelHead, claimReadyHeads, SESSION_BUSY_OF } from './sql/claim.ts';
import { OPERATIONS, type OperationName } from './sql/index.ts';
import { installOperations, type SqlRunner } from './sql/runner.ts';
import { declaredStatementNames, paramValue, StatementError, type Params, type Statement as Declared, type Write } from './sql/statement.ts';

/**
 * PostgreSQL's runner of the statement catalogue (sql/): each statement's PostgreSQL text, with the same
 * filters, the same orders (ties broken by id, NULLs first as in SQLite) and the same arithmetic (every
 * column the maths touches is BIGINT, every parameter an integer, so `$now - enqueued_at` is the same
 * number) as SQLite's. Text columns compare and sort by bytes (COLLATE "C" in pg-migrations.ts), as
 * SQLite's BINARY does. Its own statements (SQL below) are the reads ahead no StoreTx method makes.
 *
 * Every method is a generator that yields one promise per round trip (its query, with any writes still
 * pending before it) and returns the mapped answer once the driver sends the result back; a failed
 * query is thrown into the body at its yield. A write whose answer the body does not wait for yields
 * nothing: it is pending until the next round trip or COMMIT (PgStatements.defer), and one that must
 * change its row fails that batch when it does not (exactlyOne). Each statement has one stable name and
 * is prepared once per connection (as a protocol-level statement, and as `<name>_b` for batches). Time
 * is always a parameter: no statement reads now() or CURRENT_TIMESTAMP.
 *
 * Ids are MAX(id) + 1, as SQLite's rowid: the queue's writers are serialised (pg-store.ts), so two
 * inserts never race for one id, and a refused or rolled-back insert burns none.
 */

/** One statement, as a query runner takes it. `name` is absent for transaction control (SAVEPOINT, ...). */
export interface PgQueryConfig {
  name?: string;
  text: string;
  values: unknown[];
  /** Transaction control (SAVEPOINT, RELEASE) sent in a batch as it is: never prepared, no values. */
  control?: true;
}

export interface PgResult {
  rows: Record<string, unknown>[];
  rowCount: number | null;
}

/** What the statements need of a connection: a pg client, or PGlite behind an adapter. */
export interface PgQuery {
  query(config: PgQueryConfig): Promise<PgResult>;
  /**
   * Several named statements, then `trailer` (transaction control such as COMMIT) if given, in one
   * round trip (batchText); one result per statement, in order (the trailer's is dropped). A statement
   * that fails aborts the rest, the trailer too: the promise rejects with the server's error. `leader`
   * (a BEGIN and its lock) goes first in the same text; its results come before the statements' own,
   * after the one each leader statement gives (the caller takes them from the end).
   */
  batch(configs: readonly PgQueryConfig[], trailer?: string, leader?: string): Promise<PgResult[]>;
  /**
   * Prepares for batches the statements this connection has not prepared yet, in a transaction of its
   * own whose search_path is `setPath` (a SET LOCAL, or '' when the connection's own is the store's):
   * for statements batched behind a BEGIN (leader), which batch() would otherwise prepare before the
   * transaction set its search_path. Once per connection and statement.
   */
  prepareIn(configs: readonly PgQueryConfig[], setPath: string): Promise<void>;
}

/** A statement's name for `EXECUTE` in a batch: its own namespace, apart from the driver's protocol-level names. */
export function batchName(config: PgQueryConfig): string {
  if (config.name === undefined) throw new TypeError('a batched statement needs a name');
  return `${config.name}_b`;
}

/** `PREPARE` of a batched statement (once per connection, before its first batch). */
export function prepareText(config: PgQueryConfig): string {
  return `PREPARE ${batchName(config)} AS ${config.text}`;
}

/** One parameter as a quoted literal (an untyped constant: the server casts it to the parameter's type, as it does a bound value). */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return `'${String(value)}'`;
  if (typeof value === 'string') {
    // PostgreSQL's escape-string form when there is a backslash (as pg's escapeLiteral writes it).
    const doubled = value.replace(/'/g, "''");
    return value.includes('\\') ? `E'${doubled.replace(/\\/g, '\\\\')}'` : `'${doubled}'`;
  }
  throw new TypeError(`a batched statement's parameter must be a number, string, boolean or null, not ${typeof value}`);
}

/**
 * The simple-protocol text of a batch: `EXECUTE name('v1', ...)` for each statement, then the trailer.
 * Each statement is still the one prepared once (prepareText); the values travel as literals, which
 * the server binds to its parameters as it binds a Bind message's text values.
 */
export function batchText(configs: readonly PgQueryConfig[], trailer?: string, leader?: string): string {
  const statements = configs.map((config) =>
    config.control === true ? config.text : config.values.length === 0 ? `EXECUTE ${batchName(config)}` : `EXECUTE ${batchName(config)}(${config.values.map(literal).join(', ')})`,
  );
  if (trailer !== undefined) statements.push(trailer);
  if (leader !== undefined) statements.unshift(leader.trim().replace(/;$/, ''));
  return statements.join(';\n');
}

/** Tells each pending write its result (batch order). */
export function settlePending(writes: readonly PendingWrite[], results: readonly PgResult[]): void {
  writes.forEach((write, i) => write.settled?.(results[i]!));
}

/** A write whose answer the body does not wait for: sent with the next statement, or with COMMIT (PgStatements.defer). */
export interface PendingWrite {
  config: PgQueryConfig;
  /** A savepoint's RELEASE left to go with the next batch (PgStatements.savepoint): a failure of that batch is retried with the release awaited. */
  release?: true;
  /** Told the write's result once its batch has run. */
  settled?: (result: PgResult) => void;
  /** A write that must touch exactly one row (what it is, for the error): its statement fails the batch otherwise (exactlyOne). */
  one?: string;
}

/**
 * A write that must change exactly one row, as one statement that fails when it changed none: the
 * division by its row count raises division_by_zero (22012) at run time, in the batch, so a COMMIT
 * sent after it does not run. (No planner folding: the count is only known when the write has run.)
 */
export function exactlyOne(text: string): string {
  return `WITH written AS (${text} RETURNING 1) SELECT 1 / COUNT(*) AS one FROM written`;
}

/** A batch's failure as the core's error: a write of exactlyOne that changed no row is an InvariantError, as transition() raises for one. */
export function batchFailure(error: unknown, writes: readonly PendingWrite[]): unknown {
  const asserted = writes.filter((write) => write.one !== undefined).map((write) => write.one);
  if (asserted.length === 0 || (error as { code?: unknown } | null)?.code !== '22012') return error;
  return new InvariantError(`${asserted.join(' or ')} changed no row: the task changed during its own transaction`);
}

const OCCUPYING = OCCUPYING_SQL;
const CANDIDATE_NAMES = CANDIDATE_COLUMNS.split(', ');
/**
 * The version of a holder's row and what is read ahead with it: the row's xmin (every update of a row
 * writes a new version with a new xmin; a row lock does not), whether a newer version of its topic
 * exists, and the last checkpoint's usage. Equal versions: nothing holderRow (sql/holders.ts) answers changed.
 */
const COMPLETING_VERSION = `read.xmin::text || '/' || read.ahead_newer::text || '/' || COALESCE(md5(read.ahead_usage), '-')`;
/** The marker in the server's message when rowUnchanged fails (see isRowChanged). */
export const ROW_CHANGED = 'leasehold_row_changed';

/** Whether a failure is rowUnchanged's: a holder's row changed between its read and the queue lock. */
export function isRowChanged(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === '22P02' && typeof message === 'string' && message.includes(ROW_CHANGED);
}

/**
 * Each ready tenant's first ready task in the claim's order, whether eligible yet or not, with its
 * not_before, in tenant order: where every head found is eligible at a time, these are READY_HEADS at
 * that time (the first task in order, if eligible, is the first eligible one); where one is not, they
 * say nothing of it. One seek on tasks_ready a tenant: the index is in (tenant, then the claim's order),
 * so the first entry past the last tenant found is both the next tenant and its head. With each head
 * comes the first task below its level (`below_*`, the same seek from the next level down): where it is
 * eligible at that time, or there is none, it answers the claim's next seek of the tenant
 * (claimLevelHead under the head's level, belowKey), which otherwise costs a round trip a tenant. A
 * head at the lowest level has nothing beneath it: that seek is not made (a one-time filter).
 */
const READY_HEADS_ANY_TIME = `WITH RECURSIVE walk(tenant, id, priority, enqueued_at, not_before) AS (
                 (SELECT tenant, id, priority, enqueued_at, not_before FROM tasks WHERE state = 'ready'
                  ORDER BY tenant, priority DESC, enqueued_at, id LIMIT 1)
                 UNION ALL
                 SELECT next.tenant, next.id, next.priority, next.enqueued_at, next.not_before FROM walk CROSS JOIN LATERAL (
                   SELECT t.tenant, t.id, t.priority, t.enqueued_at, t.not_before FROM tasks t WHERE t.state = 'ready' AND t.tenant > walk.tenant
                   ORDER BY t.tenant, t.priority DESC, t.enqueued_at, t.id LIMIT 1) AS next)
               SELECT walk.tenant, walk.id, walk.priority, walk.enqueued_at, walk.not_before,
                 below.id AS below_id, below.priority AS below_priority, below.enqueued_at AS below_enqueued_at, below.not_before AS below_not_before
               FROM walk LEFT JOIN LATERAL (
                 SELECT b.id, b.priority, b.enqueued_at, b.not_before FROM tasks b
                 WHERE walk.priority > ${PRIORITY_RANGE.min} AND b.state = 'ready' AND b.tenant = walk.tenant AND b.priority < walk.priority
                 ORDER BY b.priority DESC, b.enqueued_at, b.id LIMIT 1) AS below ON true
               ORDER BY walk.tenant`;

/** A head's input comes with readyHeadsRows up to this many bytes; a larger one is read with the candidate alone. */
export const AHEAD_INPUT_BYTES = 4096;

/**
 * W1: the columns of a handoff, in its JSON array's order: the row's version (xmin), then what a claim's
 * first reads (readyHeadsRows) say of the head it will pick, so that predictClaim answers them exactly.
 */
const HANDOFF_COLUMNS = ['xmin', ...new Set([...CANDIDATE_NAMES, 'not_before'])];
/** The largest handoff sent: a NOTIFY payload must stay under 8000 bytes, the transaction's id and a space before it. */
const HANDOFF_BYTES = 7900;

/** A task row (`alias`) as a handoff's text: a JSON array of HANDOFF_COLUMNS, xmin first. */
export function handoffJson(alias: string): string {
  return `json_build_array(${HANDOFF_COLUMNS.map((name) => (name === 'xmin' ? `${alias}.xmin::text` : `${alias}.${name}`)).join(', ')})::text`;
}

/**
 * W1: the handoff, the one ready task of an otherwise idle queue (the only live task, so none holds a
 * slot and no other is ready; no paused tenant; its input at most AHEAD_INPUT_BYTES), as a JSON array of
 * HANDOFF_COLUMNS; NULL otherwise. A claim that hears it can answer its own first reads from it and
 * claim in one round trip (PgStore, predictClaim). It is a hint: it reads the live counter, and the
 * claim checks the tables themselves under the lock (claimUnchanged). Its conditions are one-time
 * filters, so a busy queue pays two single-row reads for it, with the NOTIFY every such commit sends.
 */
function handoffRowSql(): string {
  return `(SELECT CASE WHEN octet_length(one.row) <= ${HANDOFF_BYTES} THEN one.row END FROM (
            SELECT ${handoffJson('t')} AS row FROM tasks AS t
            WHERE t.state = 'ready' AND octet_length(t.input) <= ${AHEAD_INPUT_BYTES}
              AND (SELECT value FROM counters WHERE name = 'live') = 1
              AND NOT EXISTS (SELECT 1 FROM tenant_pauses)
            LIMIT 1) AS one)`;
}

export const SQL = {
  /**
   * What a claim reads first, in the round trip that takes the lock (ReadsFirst.claim), before it knows
   * its time: every ready tenant's head whatever the time (READY_HEADS_ANY_TIME), and the candidate row
   * (CANDIDATE_COLUMNS, its input only up to AHEAD_INPUT_BYTES) and session (sessionBusy) of one head,
   * the one the claim will most likely pick: by Q4's score at $1, the time read just before the round
   * trip was sent ($2 agingCap, $3 agingPeriodMs), among tenants not paused and under their limit ($4
   * perTenantLimit, $5 tenantLimits as JSON). The pick is only what is
   * read ahead: the claim decides in claim.ts, and a candidate it picks otherwise (a tenant at its
   * limit, fair share) is read in a round trip of its own.
   */
  readyHeadsRows: `WITH heads AS (${READY_HEADS_ANY_TIME}),
                   likely AS (SELECT heads.id FROM heads
                              WHERE heads.id IS NOT NULL AND heads.not_before <= $1::bigint AND heads.tenant NOT IN (SELECT tenant FROM tenant_pauses)
                                AND (SELECT COUNT(*) FROM tasks AS h WHERE h.tenant = heads.tenant AND h.${OCCUPYING}) < COALESCE(($5::jsonb ->> heads.tenant)::bigint, $4::bigint)
                              ORDER BY ${scoreSql({ base: 'heads.priority', enqueuedAt: 'heads.enqueued_at', now: '$1::bigint', agingCap: '$2::bigint', agingPeriodMs: '$3::bigint' })} DESC, heads.enqueued_at, heads.id
                              LIMIT 1)
                   SELECT heads.tenant, heads.id, heads.priority, heads.enqueued_at, heads.not_before,
                     heads.below_id, heads.below_priority, heads.below_enqueued_at, heads.below_not_before,
                     c.topic, c.version, c.state, c.generation, c.attempts,
                     CASE WHEN octet_length(c.input) <= ${AHEAD_INPUT_BYTES} THEN c.input END AS input,
                     octet_length(c.input) <= ${AHEAD_INPUT_BYTES} AS ahead_input,
                     c.tier, c.deadline, c.first_claimed_at, c.cancel_requested, c.event_seq, c.hold_state, c.needs, c.critical, c.deferred,
                     CASE WHEN c.id IS NOT NULL THEN ${SESSION_BUSY_OF('c')} END AS ahead_session_busy
                   FROM heads LEFT JOIN tasks AS c ON c.id = heads.id AND c.id IN (SELECT id FROM likely)
                   ORDER BY heads.tenant`,

  // ---- a holder's row read before the queue lock (Q8)
  /**
   * The catalogue's holderRow (sql/holders.ts) read before the queue lock (PgStore's holder calls),
   * with the version of all it read (COMPLETING_VERSION), which rowUnchanged checks once the lock is held.
   */
  completingRowVersioned: `SELECT *, ${COMPLETING_VERSION} AS row_version FROM (SELECT ${COMPLETING_COLUMNS}, xmin, ${COMPLETING_AHEAD} FROM tasks WHERE id = $1) AS read`,
  /**
   * The first statement after the queue lock of a holder's call that read completingRowVersioned before
   * it: fails the transaction (invalid_text_representation, ROW_CHANGED in the message) unless what it
   * read is still so ($2, its row_version; NULL for no row), so no write decided on a stale read commits.
   */
  rowUnchanged: `SELECT (CASE WHEN (SELECT ${COMPLETING_VERSION} FROM (SELECT xmin, ${COMPLETING_AHEAD} FROM tasks WHERE id = $1) AS read)
                         IS NOT DISTINCT FROM $2::text THEN '1' ELSE '${ROW_CHANGED}' END)::int AS unchanged`,
  queueLock: 'SELECT pg_advisory_xact_lock($1::int4, $2::int4) AS locked',
  /**
   * The first statement after the lock of an enqueue whose first reads were predicted (predictEnqueue):
   * fails the transaction as rowUnchanged does unless they hold: no task of the topic ($1 tenant, $2
   * topic), so no version to compare, replace or collide with; $3 the id an insert takes; no paused
   * tenant; $4 the live count.
   */
  enqueueUnchanged: `SELECT (CASE WHEN NOT EXISTS (SELECT 1 FROM tasks WHERE tenant = $1 AND topic = $2)
                                AND (SELECT COALESCE(MAX(id), 0) + 1 FROM tasks) = $3::bigint
                                AND NOT EXISTS (SELECT 1 FROM tenant_pauses)
                                AND (SELECT value FROM counters WHERE name = 'live') = $4::bigint
                           THEN '1' ELSE '${ROW_CHANGED}' END)::int AS unchanged`,

  /**
   * What a transaction that made a task claimable sends before COMMIT (PgStore): NOTIFY on $1 (the
   * queue's channel) with the transaction's id, followed by the handoff when there is one
   * (handoffRowSql), which it also answers, for a store that publishes it itself (PGlite's, in one process).
   */
  claimableNotify: `WITH h AS MATERIALIZED (SELECT ${handoffRowSql()} AS handoff)
                    SELECT pg_notify($1, txid_current()::text || COALESCE(' ' || h.handoff, '')) AS notified, h.handoff FROM h`,
  /** claimableNotify without the handoff (PgStoreOptions.handoff false): the transaction's id alone. */
  claimableNotifyBare: `SELECT pg_notify($1, txid_current()::text) AS notified`,
  /**
   * The first statement after the lock of a claim whose first reads were predicted from a handoff
   * (predictClaim): fails the transaction as rowUnchanged does unless the queue is still as the handoff
   * found it: no task holds a slot, no tenant is paused, no task but $1 is ready, and $1 is ready and
   * its row is exactly the handoff's text ($2: its xmin, so unchanged, and every column the claim
   * decided on, so a notice anyone connected could send decides nothing that is not in the table).
   */
  claimUnchanged: `SELECT (CASE WHEN NOT EXISTS (SELECT 1 FROM tasks WHERE ${OCCUPYING})
                                AND NOT EXISTS (SELECT 1 FROM tenant_pauses)
                                AND NOT EXISTS (SELECT 1 FROM tasks WHERE state = 'ready' AND id <> $1)
                                AND (SELECT ${handoffJson('t')} FROM tasks AS t WHERE t.id = $1 AND t.state = 'ready') = $2::text
                           THEN '1' ELSE '${ROW_CHANGED}' END)::int AS unchanged`,
} as const;

/** A handoff read back (PgStatements.handoff): its text as it came, and the task's row as the claim's heads read gives it. */
export interface Handoff {
  text: string;
  row: Record<string, unknown>;
}

/** What an enqueue's first reads answer when its topic has no task yet (PgStatements.predictEnqueue): the id an insert takes, the live count. */
export interface EnqueueGuess {
  nextId: number;
  live: number;
}

/** A statement as PgStatements sends it: its prepared name, its text, and whether it only reads (it keeps what was read ahead). */
interface PgStatement {
  readonly name: string;
  readonly text: string;
  readonly reads: boolean;
}

// A statement of SQL above and one of the catalogue (sql/) must not share a prepared statement's name.
for (const name of Object.keys(SQL)) {
  if (declaredStatementNames().has(name.toLowerCase())) throw new StatementError(name, 'declared in the catalogue (sql/) and in pg-statements.ts');
}

/** The catalogue's statements as sent, by their index (made on first use); and as sendOne sends a write (exactlyOne). */
const declaredForms: PgStatement[] = [];
const oneForms: PgStatement[] = [];
function formOf(declared: Declared<string, unknown>): PgStatement {
  return (declaredForms[declared.index] ??= { name: `leasehold_${declared.name}`, text: declared.postgres.text, reads: !declared.writes });
}

/** A declared statement's answer in its result shape, from the driver's result. */
function answerOf<R>(declared: Declared<string, R>, result: PgResult): R {
  switch (declared.result) {
    case 'rows':
      return result.rows as R;
    case 'one':
      return result.rows[0] as R;
    case 'pluck': {
      const row = result.rows[0];
      return (row === undefined ? undefined : Object.values(row)[0]) as R;
    }
    case 'changes':
      return (result.rowCount ?? 0) as R;
    case 'inserted': {
      const row = result.rows[0];
      return (row === undefined ? undefined : Number(Object.values(row)[0])) as R;
    }
  }
}

/** A declared statement's values, in the order of its `$n` (sql/statement.ts); a missing one is an error (paramValue). */
function valuesOf(declared: Declared<string, unknown>, params: Readonly<Record<string, unknown>>): unknown[] {
  return declared.postgres.order.map((name) => paramValue(declared, params, name));
}

/**
 * The statements of the store interface over one connection (one transaction's worth): the catalogue's
 * operations (sql/index.ts, installed below) over its generic runner (run, send), and the methods not
 * moved there yet.
 */
export interface PgStatements extends Pick<StoreTx, OperationName> {}
export class PgStatements implements StoreTx, SqlRunner {
  /**
   * The id of the newest event this transaction inserted (and kept: an insert inside a savepoint rolled
   * back to is forgotten), or undefined: after COMMIT the store knows the event cursor without a query.
   */
  lastEventId: number | undefined;

  /**
   * Writes the body does not wait for (their methods return nothing): each round trip is most of a
   * statement's cost here, so they go with the next statement that the body does wait for, in one
   * batch, in the order asked (pending writes first), or with COMMIT (the store takes them with
   * takePending). A failure of one surfaces at that batch's yield, still inside the transaction (and
   * inside its savepoint: txSavepoint() sends what its body left before it releases).
   */
  private pending: PendingWrite[] = [];

  /**
   * Reads answered ahead of their call: a read whose next call is known (the claim reads the paused
   * tenants after the holders, a candidate's session after the candidate, a holder's write the newer
   * versions and the last checkpoint's usage after its row) comes back in the round trip of the one
   * before it, and is kept here, by statement and arguments, until the transaction writes anything
   * (any write, pending or sent, and any savepoint rollback forgets them all).
   */
  private ahead = new Map<string, unknown>();

  /**
   * The BEGIN (with the queue lock and the transaction's id) of a transaction not begun yet, an enqueue
   * whose first reads were predicted (predictEnqueue): it goes first in whichever round trip comes
   * first, a read's or COMMIT's, with the search_path its statements are prepared under.
   */
  private leader: { text: string; setPath: string } | undefined;
  /** The transaction's id, when it came back with `leader`. */
  xid: string | undefined;
  /** What an enqueue's first reads found (or were predicted to find, and checked): the store guesses the next enqueue's from it. */
  enqueueSeen: EnqueueGuess & { paused: boolean } | undefined;
  /** An enqueue's first reads were predicted (predictEnqueue): a failed check (rowChanged) means one more try, reading them. */
  predicted = false;
  /** The enqueue inserted its task at the id its first reads gave (taskInsertSlot). */
  slotUsed = false;
  /** A claim's first reads were predicted from a handoff (predictClaim): a failed check (rowChanged) means one more try, reading them. */
  claimPredicted = false;
  /** The claimed event a predicted claim appended: what tells whether it committed when its id never came back (PgStore). */
  claimedEvent: { task_id: number; worker_id: string; generation: number } | undefined;
  /** The version of the holder's row read before the lock (completingRowVersioned): null when there was no row. */
  private readVersion: { id: number; version: string | null } | undefined;
  /** lockFirst's statements are pending and not sent yet. */
  private lockUnsent = false;
  /** A round trip failed because the row read before the lock had changed (rowUnchanged). */
  rowChanged = false;
  /** The body sent or left pending a statement that writes (the store flushes the WAL after COMMIT only then). */
  wrote = false;
  /** W1: the body made a task claimable; the store sends one NOTIFY with its COMMIT (PgStore). */
  claimable = false;
  /**
   * An enqueue's paused tenants and live count, read with the queue lock in its first round trip
   * (ReadsFirst.enqueue), and what this transaction has added to the count since (counterLiveAdjust). They stay
   * good across the enqueue's other writes, unlike `ahead`, because the lock keeps every other writer
   * out and only named statements change them: counterLiveAdjust alone writes the live counter (its delta is
   * kept here), pauseTenant and resumeTenant alone write the pauses (they forget this), and a savepoint
   * rolled back to forgets it too. So an enqueue's admission reads cost no round trip.
   */
  private enqueueBase: { paused: PauseRow[]; live: number; delta: number } | undefined;
  /**
   * Whether txSavepoint() may leave its RELEASE pending, to go with the next batch (COMMIT's, for an
   * enqueue) instead of a round trip of its own. The store turns it off for a transaction run again
   * because such a batch failed (`releaseFailed`): a failure inside a savepoint is then met where the
   * body can catch it, as the StoreTx contract says.
   */
  deferRelease = true;
  /** A batch that carried a savepoint's deferred RELEASE failed (not the connection): the store runs the transaction again with deferRelease off. */
  releaseFailed = false;

  /**
   * @param now the transaction's time, for reads ahead that take it (a write transaction's, read once
   * it holds the queue lock); undefined in a read transaction, which reads nothing ahead by time.
   */
  constructor(
    private readonly runner: PgQuery,
    private readonly now?: number,
  ) {}

  txMarkClaimable(): void {
    this.claimable = true;
  }

  /**
   * The generic runner (sql/runner.ts): any declared statement, in one round trip with the writes
   * pending before it; a read that was read ahead (under its name and values) is answered from that.
   */
  run<K extends string, R>(declared: Declared<K, R>, params: Params<K>): Step<R>;
  run<K extends string, R, M>(declared: Declared<K, R>, params: Params<K>, map: (answer: R) => M): Step<M>;
  *run<K extends string, R, M>(declared: Declared<K, R>, params: Params<K>, map?: (answer: R) => M): Step<R | M> {
    const values = valuesOf(declared, params);
    // Only a pause or a resume writes the pauses the enqueue base keeps: it forgets them.
    if (declared.name === tenantPauseInsert.name || declared.name === tenantPauseDelete.name) this.enqueueBase = undefined;
    const known =
      declared.name === claimLevelHead.name
        ? this.belowHead(params as Params<string>)
        : declared.name === tenantPauseList.name && this.enqueueBase !== undefined
        ? { answer: this.enqueueBase.paused }
        : declared.name === counterLive.name && this.enqueueBase !== undefined
          ? { answer: this.enqueueBase.live + this.enqueueBase.delta }
          : declared.writes || this.ahead.size === 0
          ? undefined
          : this.recall(declared.name, values);
    const answer =
      known !== undefined
        ? (known.answer as R)
        : declared === (claimHolding as Declared<string, unknown>)
          ? ((yield* this.holdingWithAhead()) as R)
          : answerOf(declared, yield* this.q(formOf(declared), values));
    return map === undefined ? answer : map(answer);
  }

  /**
   * The holders, with what a claim asks for next read in the same round trip and kept (see `ahead`):
   * the paused tenants, and every ready tenant's head at the transaction's time (`now`, when the store
   * gave it: a write transaction's).
   */
  private *holdingWithAhead(): Generator<Promise<unknown>, HoldingRow[], unknown> {
    const now = this.now;
    const heads = now === undefined ? [] : [[formOf(claimReadyHeads), valuesOf(claimReadyHeads, { now })] as const];
    const [holding, paused, headRows] = yield* this.together([[formOf(claimHolding), []], [formOf(tenantPauseList), []], ...heads]);
    this.remember(tenantPauseList.name, [], paused!.rows);
    if (now !== undefined) this.remember(claimReadyHeads.name, valuesOf(claimReadyHeads, { now }), headRows!.rows);
    return holding!.rows as unknown as HoldingRow[];
  }

  /** What a statement answers, read with another: kept for its call until the transaction writes (see `ahead`). */
  answeredAhead<K extends string, R>(declared: Declared<K, R>, params: Params<K>, answer: R): void {
    this.remember(declared.name, valuesOf(declared, params), answer);
  }

  /** A write whose answer nobody waits for: pending until the next round trip or COMMIT (defer); `settled` is told its answer then. */
  send<K extends string>(declared: Write<K>, params: Params<K>): void;
  send<K extends string, R>(declared: Declared<K, R>, params: Params<K>, settled: (answer: R) => void): void;
  send<K extends string, R>(declared: Declared<K, R>, params: Params<K>, settled?: (answer: R) => void): void {
    this.defer(formOf(declared), valuesOf(declared, params), settled === undefined ? undefined : (result) => settled(answerOf(declared, result)));
    // The live counter's adjustments are counted on the enqueue base's count (see enqueueBase).
    if (declared.name === counterLiveAdjust.name && this.enqueueBase !== undefined) this.enqueueBase.delta += (params as Params<string>).delta as number;
    if (this.claimPredicted && declared.name === eventInsert.name && (params as Params<string>).type === 'claimed') {
      const { task_id: taskId, worker_id: workerId, generation } = params as Params<string>;
      this.claimedEvent ??= { task_id: taskId as number, worker_id: workerId as string, generation: generation as number };
    }
  }

  /** One statement: yields its query to the driver (with the pending writes before it) and returns the result it sends back. */
  private *q(statement: PgStatement, values: unknown[]): Generator<Promise<unknown>, PgResult, unknown> {
    return (yield* this.together([[statement, values]]))[0]!;
  }

  /** Several statements in one round trip (after the pending writes); their results in order. */
  private *together(statements: readonly (readonly [PgStatement, readonly unknown[]])[]): Generator<Promise<unknown>, PgResult[], unknown> {
    const forms = statements.map(([statement]) => statement);
    if (forms.some((form) => !form.reads)) {
      this.ahead.clear();
      this.wrote = true;
    }
    const configs = forms.map((form, i) => ({ name: form.name, text: form.text, values: [...statements[i]![1]] }));
    if (this.pending.length === 0 && configs.length === 1 && this.leader === undefined) return [(yield this.runner.query(configs[0]!)) as PgResult];
    const writes = this.takePending();
    let results: PgResult[];
    try {
      results = (yield this.batchOf([...writes.map((write) => write.config), ...configs])) as PgResult[];
    } catch (error) {
      throw this.failed(error, writes);
    }
    settlePending(writes, results);
    return results.slice(writes.length);
  }

  private static aheadKey(name: string, values: readonly unknown[]): string {
    return `${name}\u0000${JSON.stringify(values)}`;
  }

  /** Where `ahead` keeps the first ready task under a tenant's head level (readyHeadsRows' below_*), or null for none. */
  private static belowKey(tenant: string, maxPriority: number, now: number): string {
    return PgStatements.aheadKey('claimLevelHead:below', [tenant, maxPriority, now]);
  }

  /**
   * A claimLevelHead answered from the first task under the tenant's head level, read ahead with the
   * heads and eligible at the same time: within [minPriority, maxPriority] the head is that task when
   * its level reaches minPriority, and there is none otherwise (its level is the highest eligible one
   * below the head's). Undefined (no answer) when nothing was read ahead for this seek.
   */
  private belowHead(params: Params<string>): { answer: LevelHeadRow | undefined } | undefined {
    const key = PgStatements.belowKey(params.tenant as string, params.maxPriority as number, params.now as number);
    if (!this.ahead.has(key)) return undefined;
    const below = this.ahead.get(key) as LevelHeadRow | null;
    this.ahead.delete(key);
    return { answer: below !== null && below.priority >= (params.minPriority as number) ? { ...below } : undefined };
  }

  /**
   * The statements of what a body reads first (store.ts ReadsFirst), for the round trip that begins the
   * transaction. A claim's are its holders, the paused tenants and the ready heads whatever the time
   * (readyHeadsRows); `before`, the clock read just before the round trip, only picks which head's row
   * comes with them.
   */
  static readsFirst(reads: ReadsFirst | undefined, before?: number, versioned = false): PgQueryConfig[] {
    const config = (name: keyof typeof SQL, values: unknown[]): PgQueryConfig => ({ name: `leasehold_${name}`, text: SQL[name], values });
    const declared = (statement: Declared<string, unknown>, values: unknown[]): PgQueryConfig => ({ name: formOf(statement).name, text: formOf(statement).text, values });
    if (reads?.claim !== undefined && before !== undefined) {
      const { agingCap, agingPeriodMs, perTenantLimit, tenantLimits } = reads.claim;
      return [declared(claimHolding, []), declared(tenantPauseList, []), config('readyHeadsRows', [before, agingCap, agingPeriodMs, perTenantLimit, JSON.stringify(tenantLimits)])];
    }
    if (reads?.enqueue !== undefined) {
      const { tenant, topic, version } = reads.enqueue;
      return [
        declared(taskLatestVersion, valuesOf(taskLatestVersion, { tenant, topic })),
        declared(taskOlderUnstarted, valuesOf(taskOlderUnstarted, { tenant, topic, version })),
        declared(taskInsertSlot, valuesOf(taskInsertSlot, { tenant, topic, version })),
        declared(tenantPauseList, []),
        declared(counterLive, []),
      ];
    }
    if (reads?.holderRow === undefined) return [];
    return [versioned ? config('completingRowVersioned', [reads.holderRow]) : declared(holderRow, valuesOf(holderRow, { task_id: reads.holderRow }))];
  }

  /**
   * Keeps the answers of readsFirst's statements (in its order) for the body's reads. A claim's heads
   * are claimReadyHeads at the transaction's time only when each one is eligible by then (READY_HEADS_ANY_TIME);
   * otherwise the claim reads them at its time in a round trip of their own.
   */
  answeredFirst(reads: ReadsFirst | undefined, results: readonly PgResult[]): void {
    if (reads?.claim !== undefined && results.length === 3 && this.now !== undefined) {
      const [holding, paused, heads] = results;
      this.remember(claimHolding.name, [], holding!.rows);
      this.remember(tenantPauseList.name, [], paused!.rows);
      const now = this.now;
      if (heads!.rows.every((row) => row.id === null || (row.not_before as number) <= now)) {
        this.remember(claimReadyHeads.name, valuesOf(claimReadyHeads, { now }), heads!.rows);
        for (const row of heads!.rows) {
          if (row.id === null || (row.below_id !== null && (row.below_not_before as number) > now)) continue;
          const below = row.below_id === null ? null : { id: row.below_id, priority: row.below_priority, enqueued_at: row.below_enqueued_at };
          this.ahead.set(PgStatements.belowKey(row.tenant as string, (row.priority as number) - 1, now), below);
        }
      }
      for (const row of heads!.rows) {
        if (row.id === null || row.ahead_input !== true) continue; // not the likely pick (no row came), or its input is large
        // Built by assignment, in CANDIDATE_COLUMNS' order: an object spread here cost more than the rest of this method.
        const candidate: Record<string, unknown> = {};
        for (const name of CANDIDATE_NAMES) candidate[name] = row[name];
        candidate.ahead_session_busy = row.ahead_session_busy;
        this.remember(claimCandidate.name, valuesOf(claimCandidate, { task_id: row.id }), candidate);
      }
      return;
    }
    if (reads?.enqueue !== undefined && results.length === 5) {
      const { tenant, topic, version } = reads.enqueue;
      const latest = results[0]!.rows[0];
      this.remember(taskLatestVersion.name, valuesOf(taskLatestVersion, { tenant, topic }), latest === undefined ? undefined : Object.values(latest)[0]);
      this.remember(taskOlderUnstarted.name, valuesOf(taskOlderUnstarted, { tenant, topic, version }), results[1]!.rows);
      this.remember(taskInsertSlot.name, valuesOf(taskInsertSlot, { tenant, topic, version }), results[2]!.rows[0]);
      this.enqueueBase = { paused: results[3]!.rows as unknown as PauseRow[], live: Number(results[4]!.rows[0]?.value), delta: 0 };
      const slot = results[2]!.rows[0];
      if (slot !== undefined) this.enqueueSeen = { live: this.enqueueBase.live, nextId: Number(slot.next_id), paused: results[3]!.rows.length > 0 };
      return;
    }
    if (reads?.holderRow === undefined) return;
    const row = results[0]?.rows[0];
    if (row !== undefined && 'row_version' in row) {
      // The row without its version columns, copied in its order (an object rest costs about three times as much).
      const read: Record<string, unknown> = {};
      for (const key in row) if (key !== 'xmin' && key !== 'row_version') read[key] = row[key];
      this.readVersion = { id: reads.holderRow, version: row.row_version as string };
      this.remember(holderRow.name, valuesOf(holderRow, { task_id: reads.holderRow }), read);
      return;
    }
    if (row === undefined && results[0] !== undefined) this.readVersion = { id: reads.holderRow, version: null };
    this.remember(holderRow.name, valuesOf(holderRow, { task_id: reads.holderRow }), row);
  }

  /**
   * For a holder's call whose row was read before the queue lock (completingRowVersioned): the lock, and
   * rowUnchanged of what was read, go first in the next round trip, before anything else the body sends
   * (a savepoint too), so every read after them is made under the lock and every write commits only if
   * what was read before it still holds. A change fails the transaction (isRowChanged, `rowChanged`).
   */
  lockFirst(lockClass: number, lockKey: number): void {
    if (this.readVersion === undefined) throw new TypeError('lockFirst needs the versioned row read first (completingRowVersioned)');
    const { id, version } = this.readVersion;
    this.pending.unshift(
      { config: { name: 'leasehold_queueLock', text: SQL.queueLock, values: [lockClass, lockKey] } },
      { config: { name: 'leasehold_rowUnchanged', text: SQL.rowUnchanged, values: [id, version] } },
    );
    this.lockUnsent = true;
  }

  /**
   * An enqueue in one round trip: its first reads (ReadsFirst.enqueue) are answered from `guess`, what
   * the store saw at its last enqueue (a topic with no task yet, the next id, no paused tenant, the live
   * count), and nothing is sent until the body sends something: then BEGIN and the lock (`leader`), and
   * enqueueUnchanged of the guess as the first statement under the lock, go first in that round trip,
   * COMMIT's when the body read nothing else. A wrong guess fails the transaction with nothing written
   * (rowChanged), and the store runs it again reading them.
   */
  predictEnqueue(reads: NonNullable<ReadsFirst['enqueue']>, guess: EnqueueGuess, leader: { text: string; setPath: string }): void {
    const { tenant, topic, version } = reads;
    this.remember(taskLatestVersion.name, valuesOf(taskLatestVersion, { tenant, topic }), null);
    this.remember(taskOlderUnstarted.name, valuesOf(taskOlderUnstarted, { tenant, topic, version }), []);
    this.remember(taskInsertSlot.name, valuesOf(taskInsertSlot, { tenant, topic, version }), { next_id: guess.nextId, taken: false });
    this.enqueueBase = { paused: [], live: guess.live, delta: 0 };
    this.enqueueSeen = { ...guess, paused: false };
    this.pending.push({ config: { name: 'leasehold_enqueueUnchanged', text: SQL.enqueueUnchanged, values: [tenant, topic, guess.nextId, guess.live] } });
    this.leader = leader;
    this.predicted = true;
  }

  /**
   * A handoff's text (handoffRowSql, as a notice carried it) read back, or undefined when it is not one.
   * Only its shape is checked: what it says is checked against the table under the lock (claimUnchanged).
   */
  static handoff(text: string): Handoff | undefined {
    let values: unknown;
    try {
      values = JSON.parse(text);
    } catch {
      return undefined;
    }
    if (!Array.isArray(values) || values.length !== HANDOFF_COLUMNS.length) return undefined;
    const [xmin, id, tenant] = values as unknown[];
    if (typeof xmin !== 'string' || typeof id !== 'number' || typeof tenant !== 'string') return undefined;
    // The head's row as readyHeadsRows gives it for the only task ready: nothing beneath it, its input
    // read ahead, its session free.
    const row: Record<string, unknown> = { below_id: null, below_priority: null, below_enqueued_at: null, below_not_before: null, ahead_input: true, ahead_session_busy: false };
    for (let i = 1; i < HANDOFF_COLUMNS.length; i++) row[HANDOFF_COLUMNS[i]!] = values[i];
    return { text, row };
  }

  /**
   * A claim in one round trip (W1): its first reads (ReadsFirst.claim) are answered from `handoff`, the
   * one ready task of a queue with nothing else live, as they would answer if the queue is still so (no
   * holder, no pause, that task the only head, with nothing beneath it and its session free), and
   * nothing is sent until the body sends something: then BEGIN and the lock (`leader`), and
   * claimUnchanged, go first in that round trip, COMMIT's when the body read nothing else. A queue that
   * changed meanwhile fails the transaction with nothing written (rowChanged), and the store runs it
   * again reading them.
   */
  predictClaim(reads: ReadsFirst, handoff: Handoff, leader: { text: string; setPath: string }): void {
    // The holders and the pauses read none: fresh arrays, as the driver gives, for the body may keep them.
    this.answeredFirst(reads, [{ rows: [], rowCount: 0 }, { rows: [], rowCount: 0 }, { rows: [handoff.row], rowCount: 1 }]);
    this.pending.push({ config: { name: 'leasehold_claimUnchanged', text: SQL.claimUnchanged, values: [handoff.row.id, handoff.text] } });
    this.leader = leader;
    this.claimPredicted = true;
  }

  /** What the enqueue added to the live count (its counterLiveAdjust; nothing once a savepoint rolled back to forgot them). */
  get liveAdded(): number {
    return this.enqueueBase?.delta ?? 0;
  }

  /** Whether nothing was sent yet (a predicted enqueue that read nothing else): COMMIT's round trip carries the BEGIN too. */
  get unbegun(): boolean {
    return this.leader !== undefined;
  }

  /**
   * One round trip: `configs`, then `trailer` if given; behind the BEGIN of a transaction not begun yet
   * (`leader`, prepared under its search_path first), whose own results are dropped and its id kept.
   */
  batchOf(configs: readonly PgQueryConfig[], trailer?: string): Promise<PgResult[]> {
    const leader = this.leader;
    if (leader === undefined) return this.runner.batch(configs, trailer);
    this.leader = undefined;
    return (async () => {
      await this.runner.prepareIn(configs, leader.setPath);
      const results = await this.runner.batch(configs, trailer, leader.text);
      const begun = results.findIndex((result) => result.rows[0] !== undefined && 'xid' in result.rows[0]);
      const xid = results[begun]?.rows[0]?.xid;
      this.xid = xid === undefined || xid === null ? undefined : String(xid);
      return results.slice(begun + 1);
    })();
  }

  /** Keeps a read's answer for its call to come (see `ahead`). */
  private remember(name: string, values: readonly unknown[], answer: unknown): void {
    this.ahead.set(PgStatements.aheadKey(name, values), answer);
  }

  /** A read's answer if it was read ahead and nothing was written since: `{ answer }`, else undefined. */
  private recall<T>(name: string, values: readonly unknown[]): { answer: T } | undefined {
    const key = PgStatements.aheadKey(name, values);
    if (!this.ahead.has(key)) return undefined;
    const answer = this.ahead.get(key) as T;
    this.ahead.delete(key);
    return { answer };
  }

  /** A write whose result the body does not need now: sent with the next statement or with COMMIT. */
  private defer(form: PgStatement, values: unknown[], settled?: (result: PgResult) => void): void {
    this.ahead.clear();
    this.wrote = true;
    this.pending.push({ config: { name: form.name, text: form.text, values }, ...(settled === undefined ? {} : { settled }) });
  }

  /**
   * A write the core has decided on under the queue lock, having read its row in this transaction, so
   * it must change exactly that row (transition() raises InvariantError when a state write misses):
   * it rides with the next statement or COMMIT like a deferred write, and its batch fails, COMMIT
   * unsent, if it changed none.
   */
  sendOne<K extends string>(declared: Write<K>, params: Params<K>, what: () => string): boolean {
    this.ahead.clear();
    this.wrote = true;
    const form = (oneForms[declared.index] ??= { name: `leasehold_${declared.name}_one`, text: exactlyOne(declared.postgres.text), reads: false });
    this.pending.push({ config: { name: form.name, text: form.text, values: valuesOf(declared, params) }, one: what() });
    return true;
  }

  /** A read's answer if it was read ahead and nothing was written since (see `ahead`), without a round trip; forgotten once used. */
  recalled<K extends string, R>(declared: Declared<K, R>, params: Params<K>): { answer: R } | undefined {
    const recalled = this.ahead.size === 0 ? undefined : this.recall<R>(declared.name, valuesOf(declared, params));
    // taskCreate inserts at the id it read ahead when the key was free (sql/task-writes.ts).
    if (declared.name === taskInsertSlot.name && (recalled?.answer as { taken?: boolean } | undefined)?.taken === false) this.slotUsed = true;
    return recalled;
  }

  /** Sends the pending writes now (one round trip), then `trailer` in the same round trip if given; nothing when neither is there. */
  private *flush(trailer?: string): Generator<Promise<unknown>, void, unknown> {
    if (this.pending.length === 0 && trailer === undefined) return;
    const writes = this.takePending();
    let results: PgResult[];
    try {
      results = (yield this.batchOf(writes.map((write) => write.config), trailer)) as PgResult[];
    } catch (error) {
      throw this.failed(error, writes);
    }
    settlePending(writes, results);
  }

  /**
   * What a failed batch of `writes` means, with the marks the store acts on: the row read before the
   * lock changed (rowChanged), or a savepoint's deferred RELEASE went down with it (releaseFailed). The
   * error to throw is returned.
   */
  failed(error: unknown, writes: readonly PendingWrite[]): unknown {
    if (isRowChanged(error)) this.rowChanged = true;
    if (writes.some((write) => write.release === true)) this.releaseFailed = true;
    return batchFailure(error, writes);
  }

  /** The writes not sent yet, handed over (the store sends them with COMMIT and calls settlePending). */
  takePending(): PendingWrite[] {
    const writes = this.pending;
    this.pending = [];
    this.lockUnsent = false;
    return writes;
  }

  private *control(text: string): Generator<Promise<unknown>, void, unknown> {
    // The lock and its check go before a savepoint, so that no savepoint can catch the check's failure.
    if (this.lockUnsent) yield* this.flush();
    this.ahead.clear();
    yield this.runner.query({ text, values: [] });
  }

  /**
   * A failed statement aborts a PostgreSQL transaction until the savepoint before it is rolled back to,
   * so the core's caught errors (an InvariantError, a refused insert) leave the rest of the transaction
   * usable, exactly as SQLite's savepoint does. A lost connection leaves nothing to roll back to: the
   * original error is what the caller must see.
   */
  *txSavepoint<T>(body: () => Step<T>): Step<T> {
    // The lock and its check go before a savepoint, so that no savepoint can catch the check's failure.
    if (this.lockUnsent) yield* this.flush();
    // SAVEPOINT costs no round trip of its own: it waits in the pending writes, after those the body
    // left before it (which stay outside the savepoint), and goes with the next statement. It changes
    // no data, so what was read ahead stays good.
    const marker: PendingWrite = { config: { text: 'SAVEPOINT leasehold_step', values: [], control: true } };
    this.pending.push(marker);
    const eventsBefore = this.lastEventId;
    let result: T;
    try {
      result = yield* body();
    } catch (error) {
      yield* this.rollbackTo(marker, eventsBefore);
      throw error;
    }
    if (this.pending.at(-1) === marker) {
      // The body sent and left nothing: there is no savepoint to make or release.
      this.pending.pop();
      return result;
    }
    if (this.deferRelease) {
      // The RELEASE waits with what the body left, for the next batch (an enqueue's COMMIT): no round
      // trip of its own. Should that batch fail, the store runs the whole transaction again with the
      // RELEASE awaited here (releaseFailed), so a failure inside the savepoint is still met where its
      // body can catch it; a failure with nothing pending inside it is the transaction's anyway.
      this.pending.push({ config: { text: 'RELEASE SAVEPOINT leasehold_step', values: [], control: true }, release: true });
      return result;
    }
    // What the body left pending (with the SAVEPOINT itself if the body sent nothing) is sent inside the
    // savepoint, with the RELEASE in the same round trip: a failure of one of them is caught here, and
    // the RELEASE is not run.
    try {
      yield* this.flush('RELEASE SAVEPOINT leasehold_step');
    } catch (error) {
      yield* this.rollbackTo(marker, eventsBefore);
      throw error;
    }
    return result;
  }

  /**
   * Undoes a savepoint's body: its pending writes are dropped (those from before the savepoint are
   * kept), and the server rolls back to the savepoint if it was sent.
   */
  private *rollbackTo(marker: PendingWrite, eventsBefore: number | undefined): Generator<Promise<unknown>, void, unknown> {
    this.lastEventId = eventsBefore;
    this.ahead.clear();
    this.enqueueBase = undefined;
    // An insert at the id read ahead is undone with the savepoint.
    this.slotUsed = false;
    const unsent = this.pending.indexOf(marker);
    if (unsent >= 0) {
      this.pending.length = unsent;
      return;
    }
    this.pending = [];
    try {
      yield* this.control('ROLLBACK TO SAVEPOINT leasehold_step');
      yield* this.control('RELEASE SAVEPOINT leasehold_step');
    } catch {
      // The transaction is gone (the connection was lost, or the batch that carried the savepoint failed
      // before it): the driver rolls back, the body's error stands.
    }
  }

}

installOperations(PgStatements.prototype, OPERATIONS);
