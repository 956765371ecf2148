import Database from 'better-sqlite3';
import type { SqliteDatabase } from '../../src/store/sqlite-handle.ts';
import type { History } from '../history.ts';

/** SQLite's codes for storage that failed beneath the database (restated here: the simulator judges src/, it does not import its decisions). */
export function storageCode(error: unknown): 'disk_full' | 'io_error' | undefined {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (code === 'SQLITE_FULL') return 'disk_full';
  if (typeof code === 'string' && (code === 'SQLITE_IOERR' || code.startsWith('SQLITE_IOERR_'))) return 'io_error';
  return undefined;
}

/**
 * The storage beneath one world's database (S4: disk full, I/O errors), between SQLite and the store.
 * The world hands the database handle it opens to `attach`, and src/store/sqlite-store.ts adopts what
 * comes back, so every fault below meets the store's real code: its transaction rolls back, and its
 * typed StorageError (disk_full, io_error) reaches the worker runtime, the supervisor and the clients.
 *
 * - disk full (faults/disk-full.ts), for real: `PRAGMA max_page_count` is set to the database's page
 *   count, so a statement that needs one more page fails with SQLITE_FULL while writes that fit in the
 *   pages there are go through, as on a full disk. An in-memory database honours max_page_count too, so
 *   no file is needed. The setting belongs to the connection: a handle attached while the disk is full
 *   (the scheduler reopening after a restart) is made full as well.
 * - I/O error (faults/io-error.ts), injected: SQLite's file I/O cannot be made to fail from JavaScript
 *   (better-sqlite3 offers no VFS hook, and a failing block device needs root), so the write statements
 *   the store prepares on the handle are wrapped, and the one the fault counts to throws SqliteError
 *   SQLITE_IOERR_WRITE in place of running, in the middle of its transaction, as a failed write() of the
 *   file would surface. Read-only statements are never failed: the fault is about a write.
 *
 * Once a fault has fired (`watch`), what each failure did is noted in the history, for the checker of
 * atomic writes (checkers/storage-atomic.ts) and the coverage marks: a `storage-failed` note when a write
 * statement fails with a storage code (its SQLite code, whether a transaction was open around it), and a
 * `storage-rollback` note when a transaction ends by such a failure (the event cursor before it began and
 * after it ended: equal when nothing of it remained). Before any fault fires nothing is read or noted,
 * so a run without these faults pays nothing.
 *
 * A world on the power-loss twin (store/power-loss.ts) opens its database there and attaches nothing:
 * these faults then do nothing but their note.
 */
export class StorageFaults {
  private handle: Database.Database | undefined;
  /** While true, the attached connection cannot grow the database. */
  private full = false;
  /** max_page_count as it was before the disk filled, restored when it empties. */
  private roomPages: number | undefined;
  /** Armed I/O errors: each counts down the write statements still to let through, and fails the next one. */
  private readonly armed: { skip: number; onFire: (sql: string) => void }[] = [];
  private stopped = false;
  /** Set when a fault first fires: from then on failures are noted here. */
  private history: History | undefined;
  /** The disk is full until this virtual time (the longest of the overlapping windows). */
  private fullUntilMs = -1;
  private cursorStatement: { handle: Database.Database; statement: Database.Statement } | undefined;

  /** Adopts `target` (a handle; a path is passed on untouched) and returns what the store should open. */
  attach<T extends string | SqliteDatabase>(target: T): T {
    if (typeof target === 'string') return target;
    const handle = target as Database.Database;
    this.handle = handle;
    if (this.full) this.fill();
    return wrapHandle(handle, {
      beforeWrite: (sql) => this.beforeWrite(sql),
      opening: () => (this.history === undefined ? undefined : handle.inTransaction),
      failed: (sql, error, inTransaction) => this.failed(sql, error, inTransaction),
      transaction: (run) => this.transaction(handle, run),
    }) as T;
  }

  /** Failures are noted in `history` from now on. */
  watch(history: History): void {
    this.history = history;
  }

  /** A window of a full disk from `nowMs` to `untilMs`: true while it is the longest one open (the caller empties the disk at its end). */
  fillUntil(nowMs: number, untilMs: number): boolean {
    if (this.stopped || untilMs <= nowMs) return false;
    this.fullUntilMs = Math.max(this.fullUntilMs, untilMs);
    this.fill();
    return true;
  }

  /** A window's end at `nowMs`: the disk empties unless a longer window is still open. */
  windowEnded(nowMs: number): void {
    if (nowMs >= this.fullUntilMs) this.empty();
  }

  /** The disk fills: no new page until `empty()`. False when there is no attached database to fill. */
  fill(): boolean {
    if (this.stopped) return false;
    this.full = true;
    const handle = this.handle;
    if (handle === undefined || !handle.open) return false;
    const pages = handle.pragma('page_count', { simple: true }) as number;
    this.roomPages ??= handle.pragma('max_page_count', { simple: true }) as number;
    handle.pragma(`max_page_count = ${pages}`);
    return true;
  }

  /** Room again: the database may grow as before. */
  empty(): void {
    this.full = false;
    const handle = this.handle;
    if (handle !== undefined && handle.open && this.roomPages !== undefined) handle.pragma(`max_page_count = ${this.roomPages}`);
  }

  /** Let `skip` write statements through, then fail the next one with SQLITE_IOERR_WRITE; `onFire` hears which. */
  armIoError(skip: number, onFire: (sql: string) => void): void {
    if (!this.stopped) this.armed.push({ skip, onFire });
  }

  /** The safety phase is over (S5): the disk has room, and no armed I/O error fires any more. */
  stop(): void {
    this.fullUntilMs = -1;
    this.empty();
    this.armed.length = 0;
    this.stopped = true;
  }

  /** The event cursor of the committed log, read on the real handle (never failed). */
  private cursor(handle: Database.Database): number {
    if (this.cursorStatement?.handle !== handle) this.cursorStatement = { handle, statement: handle.prepare('SELECT COALESCE(MAX(id), 0) FROM events').pluck() };
    return this.cursorStatement.statement.get() as number;
  }

  /** `inTransaction`: whether a transaction was open when the statement began (SQLite may end it on a failure). */
  private failed(sql: string, error: unknown, inTransaction: boolean | undefined): void {
    const code = storageCode(error);
    if (code === undefined || this.history === undefined) return;
    this.history.note('storage-failed', 'store', { code, sqlite: String((error as { code?: unknown }).code), inTransaction: inTransaction ?? false, sql: brief(sql) });
  }

  private transaction<T>(handle: Database.Database, run: () => T): T {
    const history = this.history;
    if (history === undefined) return run();
    const before = this.cursor(handle);
    try {
      return run();
    } catch (error) {
      const code = storageCode(error);
      if (code !== undefined) history.note('storage-rollback', 'store', { code, before, after: this.cursor(handle), inTransaction: handle.inTransaction });
      throw error;
    }
  }

  private beforeWrite(sql: string): void {
    const armed = this.armed[0];
    // The fault is a write of data that fails: the transaction's own control statements are not counted.
    if (armed === undefined || CONTROL.test(sql)) return;
    if (armed.skip > 0) {
      armed.skip--;
      return;
    }
    this.armed.shift();
    armed.onFire(sql);
    throw new Database.SqliteError(`disk I/O error (injected beneath the store at: ${brief(sql)})`, 'SQLITE_IOERR_WRITE');
  }
}

function brief(sql: string): string {
  return sql.replace(/\s+/g, ' ').trim().slice(0, 60);
}

interface Gate {
  beforeWrite(sql: string): void;
  /** Whether a transaction is open now, once failures are noted (undefined before). */
  opening(): boolean | undefined;
  failed(sql: string, error: unknown, inTransaction: boolean | undefined): void;
  transaction<T>(run: () => T): T;
}

const RUNS = new Set(['run', 'get', 'all', 'iterate']);
/** Statements that open, close or mark a transaction, or set the connection: never failed by the injected I/O error. */
const CONTROL = /^\s*(SAVEPOINT|RELEASE|ROLLBACK|BEGIN|COMMIT|END|PRAGMA)\b/i;
/** Statement methods that return the statement itself: they must return the wrapper, or the wrapping is lost. */
const CHAINS = new Set(['pluck', 'expand', 'raw', 'columns', 'bind', 'safeIntegers']);

/**
 * The handle as the store sees it: every property is the handle's own (methods bound to it, so native
 * calls get the real receiver, and better-sqlite3's transaction() keeps its BEGIN, COMMIT and ROLLBACK on
 * the real handle), except that prepare() returns statements whose writes pass the gate, and a
 * transaction function runs through the gate (each of its variants: default, deferred, immediate, exclusive).
 */
function wrapHandle(handle: Database.Database, gate: Gate): Database.Database {
  return new Proxy(handle, {
    get(target, property) {
      if (property === 'prepare') return (source: string) => wrapStatement(target.prepare(source), gate);
      if (property === 'transaction') {
        return (fn: (...args: unknown[]) => unknown) => {
          const inner = target.transaction(fn);
          const through =
            (variant: (...args: unknown[]) => unknown) =>
            (...args: unknown[]) =>
              gate.transaction(() => variant(...args));
          return Object.assign(through(inner), {
            default: through(inner.default),
            deferred: through(inner.deferred),
            immediate: through(inner.immediate),
            exclusive: through(inner.exclusive),
          });
        };
      }
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function wrapStatement(statement: Database.Statement, gate: Gate): Database.Statement {
  if (statement.readonly) return statement;
  /** Each method's wrapper, made once per statement (a statement runs thousands of times a seed). */
  const wrapped = new Map<PropertyKey, (...args: unknown[]) => unknown>();
  const wrapper: Database.Statement = new Proxy(statement, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      const known = wrapped.get(property);
      if (known !== undefined) return known;
      const method = value as (...args: unknown[]) => unknown;
      const made = RUNS.has(String(property))
        ? (...args: unknown[]) => {
            const inTransaction = gate.opening();
            try {
              gate.beforeWrite(target.source);
              return method.apply(target, args);
            } catch (error) {
              gate.failed(target.source, error, inTransaction);
              throw error;
            }
          }
        : (...args: unknown[]) => {
            const result = method.apply(target, args);
            return CHAINS.has(String(property)) && result === target ? wrapper : result;
          };
      wrapped.set(property, made);
      return made;
    },
  });
  return wrapper;
}
