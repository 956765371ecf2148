import Database from 'better-sqlite3';

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

  /** Adopts `target` (a handle; a path is passed on untouched) and returns what the store should open. */
  attach<T extends string | Database.Database>(target: T): T {
    if (typeof target === 'string') return target;
    const handle = target as Database.Database;
    this.handle = handle;
    if (this.full) this.fill();
    return wrapHandle(handle, (sql) => this.beforeWrite(sql)) as T;
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
    this.empty();
    this.armed.length = 0;
    this.stopped = true;
  }

  private beforeWrite(sql: string): void {
    const armed = this.armed[0];
    if (armed === undefined) return;
    if (armed.skip > 0) {
      armed.skip--;
      return;
    }
    this.armed.shift();
    armed.onFire(sql);
    throw new Database.SqliteError(`disk I/O error (injected beneath the store at: ${sql.replace(/\s+/g, ' ').trim().slice(0, 60)})`, 'SQLITE_IOERR_WRITE');
  }
}

const RUNS = new Set(['run', 'get', 'all', 'iterate']);
/** Statement methods that return the statement itself: they must return the wrapper, or the wrapping is lost. */
const CHAINS = new Set(['pluck', 'expand', 'raw', 'columns', 'bind', 'safeIntegers']);

/**
 * The handle as the store sees it: every property is the handle's own (methods bound to it, so native
 * calls get the real receiver, and better-sqlite3's transaction() keeps its BEGIN and COMMIT on the real
 * handle), except that prepare() returns statements whose writes first ask `beforeWrite`.
 */
function wrapHandle(handle: Database.Database, beforeWrite: (sql: string) => void): Database.Database {
  return new Proxy(handle, {
    get(target, property) {
      if (property === 'prepare') return (source: string) => wrapStatement(target.prepare(source), beforeWrite);
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function wrapStatement(statement: Database.Statement, beforeWrite: (sql: string) => void): Database.Statement {
  if (statement.readonly) return statement;
  const wrapper: Database.Statement = new Proxy(statement, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      if (RUNS.has(String(property))) {
        return (...args: unknown[]) => {
          beforeWrite(target.source);
          return method.apply(target, args);
        };
      }
      return (...args: unknown[]) => {
        const result = method.apply(target, args);
        return CHAINS.has(String(property)) && result === target ? wrapper : result;
      };
    },
  });
  return wrapper;
}
