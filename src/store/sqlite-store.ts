import Database from 'better-sqlite3';
import type { SqliteDatabase as DatabaseHandle, SqliteStatement as Statement } from './sqlite-handle.ts';
import { closeSync, existsSync, fdatasyncSync, fstatSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { BusyError, ConfigError, OpenError, StorageError, type StorageErrorCode } from '../queue/errors.ts';
import { DEFAULT_DURABILITY, requireDurability, syncedAfterCommit, synchronousFor, type Durability } from './durability.ts';
import { migrate, NewerSchemaError } from './migrations.ts';
import { SqliteStatements } from './statements.ts';
import { noticeBoardOf, privateNoticeBoard, type NoticeBoard } from './notices.ts';
import type { WalWatcher } from '../adapters/wal-watch.ts';
import { runToEnd, type Step, type Store, type StoreTx, type TransactionBody } from './store.ts';

/**
 * The page size of a database file the store creates (SQLite's default is 4096). Measured side by side
 * on this repository's claim → complete cycle (one tenant, WAL, synchronous NORMAL, 12 paired rounds of
 * 500 cycles): 1024-byte pages ran a median 1.14x the cycles of 4096-byte ones.
 */
export const NEW_FILE_PAGE_SIZE = 1024;

const BUSY_CODES = new Set(['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_RECOVERY', 'SQLITE_LOCKED']);

export function isBusy(error: unknown): boolean {
  return typeof error === 'object' && error !== null && BUSY_CODES.has((error as { code?: string }).code ?? '');
}

/**
 * SQLite's codes for a storage that failed beneath the database: SQLITE_FULL (the disk, or max_page_count,
 * left no room) and SQLITE_IOERR with every extended code (SQLITE_IOERR_WRITE, _FSYNC, _SHORT_READ, ...).
 */
export function storageCodeOf(error: unknown): StorageErrorCode | undefined {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (code === 'SQLITE_FULL') return 'disk_full';
  if (typeof code === 'string' && (code === 'SQLITE_IOERR' || code.startsWith('SQLITE_IOERR_'))) return 'io_error';
  return undefined;
}

/** A storage failure as the typed StorageError naming the operation; anything else as it was. */
function typedStorageError(operation: string, error: unknown): unknown {
  const code = storageCodeOf(error);
  if (code === undefined) return error;
  const { code: sqliteCode, message } = error as { code: string; message?: string };
  return new StorageError(operation, code, sqliteCode, String(message ?? sqliteCode));
}

export interface SqliteStoreOptions {
  busyTimeoutMs: number;
  busyRetries: number;
  /**
   * What a commit survives (durability.ts). A path gets DEFAULT_DURABILITY unless this says otherwise;
   * a handle passed in keeps its own synchronous setting unless this is given, and is then the store's
   * to set. In memory nothing survives a crash, so there is nothing to choose and nothing is switched.
   */
  durability?: Durability;
  /**
   * W1: whether `watch` also watches the file for other processes' commits, and whether this store
   * signals its own claimable commits to their watchers (adapters/wal-watch.ts; default true). The
   * simulator says false: its actors share one connection, and a real file-system notice must never
   * reach its virtual loop.
   */
  watchOtherProcesses?: boolean;
  /**
   * How the write-ahead log is synced after the commit of an enqueue (durability.ts SYNCED_AFTER_COMMIT):
   * given the WAL's path, it returns once the file's data is on the disk, or throws. By default an
   * fdatasync of the file; the simulator's power-loss twin passes its own, which also notes the sync.
   * @internal
   */
  syncWal?: (walPath: string) => void;
}

type Level = 'FULL' | 'NORMAL';

/**
 * The embedded store: one SQLite file (or ':memory:'), many processes on one host. A path gets WAL, and
 * readers never block the single writer; its commits are synced as its durability says (by default
 * `acknowledged`: NORMAL, and synced before the answer for the commits whose answer leaves the process:
 * FULL, or an enqueue's WAL synced right after its commit, outside the write lock: durability.ts). A
 * handle passed in keeps its own settings except the busy timeout, which the queue needs (Q18), and the
 * synchronous level when a durability is given.
 */
export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  /** The simulator's seams (store.ts SynchronousSeams): writeNow, readNow, committedEventCursor. @internal */
  readonly seams = 'synchronous';
  private readonly statements: SqliteStatements;
  /** The newest event id this store knows committed: read on open, then kept by every commit that inserted one. */
  private cursor = 0;
  private readonly runner: ReturnType<DatabaseHandle['transaction']>;
  private closed = false;
  /** The connection's synchronous level as the store last set it; undefined when the store leaves it alone. */
  private level: Level | undefined;
  /** `PRAGMA synchronous = ...`, prepared once, for the switch between transactions (syncFor). */
  private readonly switchTo: Record<Level, Statement> | undefined;
  /**
   * The WAL's path, for its sync after an enqueue's commit (durability.ts); undefined in memory and for
   * a handle passed in that is not in WAL mode, whose enqueue commits under FULL instead (syncFor).
   */
  private readonly walPath: string | undefined;
  /** The WAL file, opened for its sync on the first one (defaultSync); closed with the store. */
  private walFd: number | undefined;
  /** W1: the board of this database (by its file's absolute path; a database in memory has its own handle's). */
  private readonly notices: NoticeBoard;
  private readonly dataVersion: Statement;
  /** W1 across processes: this store's watchers, told when another process committed (adapters/wal-watch.ts). */
  private readonly foreign = privateNoticeBoard();
  /** 'loading' while its module is imported: it is loaded on the first watch, so a process that never watches (the simulator) never loads it. */
  private walWatcher: WalWatcher | 'loading' | undefined;
  /**
   * W1 across processes: tells other processes' watchers that a claimable commit is visible
   * (adapters/wal-watch.ts walSignal). Loaded when a file database opens; a commit made before it is
   * loaded is still found by their rechecks.
   */
  private walSignal: (() => void) | undefined;

  private constructor(
    readonly db: DatabaseHandle,
    private readonly owned: boolean,
    private readonly options: SqliteStoreOptions,
    /** The durability in force; undefined for a handle left at its own settings, or a database in memory. */
    readonly durability: Durability | undefined,
  ) {
    this.runner = db.transaction((work: () => unknown) => work());
    this.statements = new SqliteStatements(db);
    this.notices = noticeBoardOf(db.memory ? db : resolve(db.name));
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
    if (durability !== undefined) {
      // SQLite refuses to change the level inside a transaction, so it is set between transactions:
      // once here, and again before a write that needs the other level (syncFor; only `acknowledged`
      // has writes of both). It applies a synchronous pragma when it is prepared, so the switches are
      // prepared first. It opens at a losable write's level (durability.ts LOSABLE_WRITES): a migration
      // that a power loss rolls back runs again at the next open.
      this.switchTo = { FULL: db.prepare('PRAGMA synchronous = FULL'), NORMAL: db.prepare('PRAGMA synchronous = NORMAL') };
      this.level = synchronousFor(durability, 'claim');
      db.pragma(`synchronous = ${this.level}`);
    }
    this.walPath = db.memory || String(db.pragma('journal_mode', { simple: true })).toLowerCase() !== 'wal' ? undefined : `${resolve(db.name)}-wal`;
    if (!db.memory && options.watchOtherProcesses !== false) {
      const path = resolve(db.name);
      void import('../adapters/wal-watch.ts').then(
        ({ walSignal }) => {
          if (!this.closed) this.walSignal = walSignal(path);
        },
        () => undefined,
      );
    }
  }

  /**
   * Opens (or adopts) the handle and brings its schema up to date with `at` as the migration time.
   * Synchronous: better-sqlite3 is, and a queue that opens without an await is simpler to hold.
   */
  static open(target: string | DatabaseHandle, options: SqliteStoreOptions, at: () => number): SqliteStore {
    const path = typeof target === 'string' ? target : (target as DatabaseHandle | null)?.name ?? String(target);
    const durability = requireDurability(options.durability);
    let opened: { db: DatabaseHandle; owned: boolean } | undefined;
    try {
      opened = openHandle(target, options.busyTimeoutMs, options.busyRetries);
      const inForce = opened.db.memory ? undefined : opened.owned ? (durability ?? DEFAULT_DURABILITY) : durability;
      const store = new SqliteStore(opened.db, opened.owned, options, inForce);
      migrate(opened.db, at());
      store.cursor = runToEnd(store.statements.eventCursor());
      return store;
    } catch (error) {
      if (opened?.owned) opened.db.close();
      throw typedOpenError(path, error);
    }
  }

  /**
   * One BEGIN IMMEDIATE transaction (Q5): the write lock is taken up front, so two claimers can never
   * both read the same ready row and then both write it. SQLite already waits up to the busy timeout
   * for the lock; on top of that a bounded number of retries (Q18). When they are spent the caller gets
   * a BusyError; the transaction was rolled back, so nothing was half-written. A full disk or an I/O
   * error (SQLITE_FULL, SQLITE_IOERR*) is not retried here: better-sqlite3 has rolled the transaction back
   * by the time it throws (or SQLite already had), and the caller gets a StorageError.
   */
  write<T>(operation: string, readClock: () => number, body: TransactionBody<T>): Promise<T> {
    // One settled promise and nothing more: the transaction has run by the time the caller gets it.
    try {
      return Promise.resolve(this.writeNow(operation, readClock, body));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The same, synchronously: the SQLite store's transactions never wait on anything but the lock. A simulator's seam. @internal */
  writeNow<T>(operation: string, readClock: () => number, body: TransactionBody<T>): T {
    if (this.durability !== undefined) this.syncFor(this.durability, operation);
    const result = this.commit(operation, readClock, body);
    // An enqueue (durability.ts SYNCED_AFTER_COMMIT) is answered once the WAL is synced through its
    // commit. The commit is visible already, and its notices are out: the next writer (a worker's claim
    // of the task just enqueued) takes the write lock while this sync runs, not after it. One that wrote
    // nothing is synced too: its answer (a duplicate) may rest on another enqueue's commit whose sync
    // has not finished, or failed.
    if (this.walPath !== undefined && this.durability !== undefined && syncedAfterCommit(this.durability, operation)) this.syncWal(operation);
    return result;
  }

  /** One transaction, committed (at the connection's level), with the busy retries; the claimable notices sent after it. */
  private commit<T>(operation: string, readClock: () => number, body: TransactionBody<T>): T {
    for (let attempt = 1; ; attempt++) {
      this.statements.lastEventId = undefined;
      this.statements.claimable = false;
      try {
        const result = this.runner.immediate(() => runToEnd(body(this.statements, readClock()))) as T;
        const inserted = this.statements.lastEventId;
        if (inserted !== undefined && inserted > this.cursor) this.cursor = inserted;
        // W1: after the commit, never before it: a worker woken now must find the task committed.
        if (this.statements.claimable) {
          this.notices.publish();
          this.walSignal?.();
        }
        return result;
      } catch (error) {
        if (!isBusy(error)) throw typedStorageError(operation, error);
        if (attempt > this.options.busyRetries) throw new BusyError(operation, attempt);
      }
    }
  }

  /**
   * The newest event id committed through this store (and, on open, found in the file): the event
   * cursor after its last commit, known without a query. Exact while this store is the database's only
   * writer (the simulator's world); another process's commits on the same file are not seen here. @internal
   */
  committedEventCursor(): number {
    return this.cursor;
  }

  /** W1: every queue of this process on the same database hears this store's claimable commits (store/notices.ts). */
  watch(listener: () => void): () => void {
    if (this.closed) return () => {};
    const unsubscribe = this.notices.subscribe(listener);
    const unsubscribeForeign = this.foreign.subscribe(listener);
    if (!this.db.memory && this.walWatcher === undefined && this.options.watchOtherProcesses !== false) {
      this.walWatcher = 'loading';
      void import('../adapters/wal-watch.ts').then(
        ({ WalWatcher: Watcher }) => {
          if (this.walWatcher !== 'loading' || this.closed) return;
          const watcher = new Watcher(resolve(this.db.name), () => this.readDataVersion(), () => this.foreign.publish());
          this.walWatcher = watcher;
          watcher.start();
        },
        () => {
          // No watch: the counter's poll stays in charge.
          this.walWatcher = undefined;
        },
      );
    }
    return () => {
      unsubscribe();
      unsubscribeForeign();
      if (this.foreign.listeners === 0) this.stopWalWatch();
    };
  }

  private stopWalWatch(): void {
    if (typeof this.walWatcher === 'object') this.walWatcher.stop();
    this.walWatcher = undefined;
  }

  private readDataVersion(): number | undefined {
    if (this.closed) return undefined;
    try {
      return this.dataVersion.get() as number;
    } catch {
      return undefined;
    }
  }

  /**
   * W1: `PRAGMA data_version`, which changes when another connection (another process) committed to the
   * file since this connection last looked: one page read of nothing, so an idle worker can ask often.
   */
  changeCounter(): Promise<number | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    try {
      return Promise.resolve(this.dataVersion.get() as number);
    } catch (error) {
      return Promise.reject(isBusy(error) ? new BusyError('changeCounter', 1) : typedStorageError('changeCounter', error));
    }
  }

  /** Reads need no write lock, but a WAL read can still meet SQLITE_BUSY during recovery. */
  read<T>(operation: string, body: (tx: StoreTx) => Step<T>): Promise<T> {
    try {
      return Promise.resolve(this.readNow(operation, body));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The same, synchronously (an observer that must read at an exact instant, like the simulator's history). @internal */
  readNow<T>(operation: string, body: (tx: StoreTx) => Step<T>): T {
    for (let attempt = 1; ; attempt++) {
      try {
        return runToEnd(body(this.statements));
      } catch (error) {
        if (!isBusy(error)) throw typedStorageError(operation, error);
        if (attempt > this.options.busyRetries) throw new BusyError(operation, attempt);
      }
    }
  }

  /**
   * Sets the level the next commit needs (under `acknowledged` it depends on the operation), and leaves
   * it there, so a run of commits at one level switches once; the connection's level after a commit is
   * the level that commit ran at.
   */
  private syncFor(durability: Durability, operation: string): void {
    // Without a WAL to sync after the commit, a write synced after its commit is synced in it.
    const level = this.walPath === undefined && syncedAfterCommit(durability, operation) ? 'FULL' : synchronousFor(durability, operation);
    if (level === this.level) return;
    this.switchTo![level].run();
    this.level = level;
  }

  /**
   * Syncs the WAL through the commit just made, or throws a StorageError saying the write committed
   * but may not survive a power cut. A sync of the file keeps every frame before it (durability.ts).
   */
  private syncWal(operation: string): void {
    try {
      if (this.options.syncWal !== undefined) this.options.syncWal(this.walPath!);
      else this.defaultSync();
    } catch (error) {
      const code = String((error as { code?: unknown } | null)?.code ?? 'EIO');
      const message = String((error as { message?: unknown } | null)?.message ?? error);
      throw new StorageError(operation, code === 'ENOSPC' || code === 'EDQUOT' ? 'disk_full' : 'io_error', code, message, true);
    }
  }

  /**
   * fdatasync of the WAL, through a descriptor kept open (opened for writing: Windows flushes only such
   * a handle). SQLite removes the WAL only when the last connection closes, and this one is open, but a
   * file removed behind it (unlinked, so no longer the database's) is opened again rather than synced.
   */
  private defaultSync(): void {
    if (this.walFd !== undefined && fstatSync(this.walFd).nlink === 0) {
      closeSync(this.walFd);
      this.walFd = undefined;
    }
    this.walFd ??= openSync(this.walPath!, 'r+');
    fdatasyncSync(this.walFd);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopWalWatch();
    if (this.walFd !== undefined) closeSync(this.walFd);
    this.walFd = undefined;
    if (this.owned) this.db.close();
  }
}

/**
 * `PRAGMA journal_mode = WAL`, waiting for another connection's write lock. SQLite answers SQLITE_BUSY at
 * once, without waiting out the busy timeout, when the switch meets a write in progress in another
 * process: the switch holds a read lock while it asks for the write lock, and waiting for a writer that
 * waits for that read lock to go could deadlock. Several processes opening one new file at once met it
 * (`leasehold work --processes N`; four processes opening a new file at one instant: 4 of 50 rounds on
 * a loaded machine). Each retry first waits for the write lock in an empty transaction, which SQLite's
 * busy handler waits for (up to the busy timeout) since it holds nothing yet; a file already in WAL mode
 * then switches at once.
 */
function enterWal(db: DatabaseHandle, busyRetries: number): void {
  for (let attempt = 1; ; attempt++) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if (!isBusy(error) || attempt > busyRetries) throw error;
      db.exec('BEGIN IMMEDIATE; COMMIT');
    }
  }
}

/** What went wrong on open, as a typed error naming the path; anything else as it was. */
function typedOpenError(path: string, error: unknown): unknown {
  if (error instanceof NewerSchemaError) return new OpenError(path, 'newer_schema', error.message);
  if ((error as { code?: string } | null)?.code === 'SQLITE_NOTADB') return new OpenError(path, 'not_a_database', 'the file is not a SQLite database');
  // Another connection held the lock past the busy timeout while the schema was checked (say a process
  // stopped mid-transaction): retryable, as any busy write is (W2).
  if (isBusy(error)) return new BusyError('open', 1);
  return error;
}

function openHandle(target: string | DatabaseHandle, busyTimeoutMs: number, busyRetries: number): { db: DatabaseHandle; owned: boolean } {
  if (typeof target === 'string') {
    if (target === '') throw new ConfigError('db', 'expected a path, ":memory:" or a better-sqlite3 handle');
    if (target.startsWith('file:')) {
      throw new ConfigError('db', 'better-sqlite3 cannot open file: URIs; pass a plain path so several connections share a real file');
    }
    // better-sqlite3 would throw a bare TypeError; say which folder, and create nothing.
    if (target !== ':memory:' && !existsSync(dirname(resolve(target)))) {
      throw new OpenError(target, 'missing_folder', `the folder ${dirname(resolve(target))} does not exist`);
    }
    const db = new Database(target, { timeout: busyTimeoutMs });
    if (target !== ':memory:') {
      try {
        // A file the store creates gets small pages: a claim or a complete touches a few rows of a few
        // tables, and each page it changes is one WAL frame, so smaller frames write less per commit
        // (measured: NEW_FILE_PAGE_SIZE below). An existing file keeps the page size it has.
        if ((db.pragma('page_count', { simple: true }) as number) === 0) db.pragma(`page_size = ${NEW_FILE_PAGE_SIZE}`);
        enterWal(db, busyRetries);
      } catch (error) {
        db.close();
        throw error;
      }
    }
    return { db, owned: true };
  }
  if (target === null || typeof target !== 'object' || typeof (target as DatabaseHandle).prepare !== 'function') {
    throw new ConfigError('db', 'expected a path, ":memory:" or a better-sqlite3 handle');
  }
  target.pragma(`busy_timeout = ${busyTimeoutMs}`);
  return { db: target, owned: false };
}
