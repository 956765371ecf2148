/**
 * The power-loss twin: the real SQLite store on a real WAL file, plus a model of what the disk has been
 * told to keep, so that `powerLoss()` can put the database back to what a machine that lost power would
 * find. The simulator's power-loss fault drives it; sim/store/power-loss.test.ts is the evidence it
 * gives about the queue's durability (src/store/durability.ts).
 *
 * Usage:
 *
 *     const twin = PowerLossTwin.open({ path, at: () => clock.now() });      // durability: the default
 *     let queue = twin.openQueue({ clock, random });
 *     ... await queue.enqueue(...) ...                                        // every write is one commit
 *     const report = twin.powerLoss();                                        // every process is gone
 *     queue = twin.openQueue({ clock, random });                              // what the disk kept
 *
 * What the disk keeps follows SQLite's documented rules for WAL mode, per commit, at the synchronous
 * level the connection had when the commit ran (read back from the connection after each commit: the
 * store switches levels only between transactions, and leaves the level a commit used in place):
 *
 * - FULL or EXTRA: the WAL is synced at the commit, so this commit and every one before it is kept.
 * - NORMAL: the WAL is synced only before a checkpoint; a commit is kept once a checkpoint ran after it,
 *   or once the store synced the WAL after it (an enqueue under `acknowledged` commits at NORMAL and the
 *   store syncs the WAL before it answers: SqliteStoreOptions.syncWal, which the twin provides, so it
 *   knows how far the file was synced: the WAL's length when the sync ran).
 * - OFF: never synced. The twin keeps nothing after the last sync point (SQLite itself promises less:
 *   an OFF database can be corrupt after a power loss).
 * - A transaction that wrote nothing syncs nothing, whatever the level; the store's sync after an
 *   enqueue that wrote nothing (a resend answered duplicate) still syncs the file, and so every commit
 *   before it.
 *
 * The twin owns checkpoints: `wal_autocheckpoint = 0`, and after a commit that leaves `checkpointPages`
 * or more pages in the WAL it runs `PRAGMA wal_checkpoint(TRUNCATE)`, as SQLite's auto-checkpoint would
 * (at 1000 pages by default), so when a sync happens is known exactly. A checkpoint at NORMAL or above is
 * a sync point: the WAL is synced, copied into the database file, which is synced, and truncated. The
 * twin also checkpoints right after each (re)open: the database it starts from is a synced one.
 *
 * What `powerLoss(keep)` restores: the database file as of the last checkpoint (an image read from disk
 * right after it) and the WAL cut at a commit boundary, then the queue's own open path runs SQLite's WAL
 * recovery on them. By default (keep = 0) the WAL is cut after the last synced commit: the last synced
 * state, the worst a power loss can do, which is what a durability claim must survive. With `keep` a
 * number n, or a Random to draw n from (uniform over 0..unsynced), the first n unsynced commits survive
 * as well: a disk writes unsynced pages in any order, but WAL frames carry cumulative checksums and
 * recovery stops at the first frame that is missing or torn, so what survives is always the synced
 * commits plus a prefix of the unsynced ones (each such state is one the queue really passed through).
 *
 * Assumptions: the twin's connection is the only one on the file (another connection's checkpoint would
 * change what is synced without the twin seeing it; the twin checks that the WAL only grows between its
 * checkpoints), and transactions are small enough never to spill uncommitted pages into the WAL.
 *
 * Deterministic (S1): no time, no randomness but the Random passed in, file sizes only.
 *
 * For the simulator's power-loss fault: a power loss stops every process on the host, so every worker
 * incarnation dies with it (their queue calls now reject with PowerLostError); draw `keep` from a
 * named fork of the seed (say `random.fork('power-loss')`); reopen with `twin.openQueue`, and read the
 * event cursor through `twin.store.readNow`. The store's `close()` (which a queue's close calls) leaves
 * the connection open for the next queue of the same power cycle; `twin.close()` ends it. The syncs are
 * real fsyncs of the file (the model does not need them, SQLite makes them): a path on a RAM filesystem
 * (/dev/shm) makes them cheap without changing what the twin says survives.
 */
import { closeSync, existsSync, fdatasyncSync, openSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { SqliteDatabase as Database, SqliteStatement as Statement } from '../../src/store/sqlite-handle.ts';
import type { Random } from '../../src/ports.ts';
import type { Durability } from '../../src/store/durability.ts';
import { SqliteStore } from '../../src/store/sqlite-store.ts';
import type { Step, Store, StoreTx, TransactionBody } from '../../src/store/store.ts';
import { openWorkQueue, type OpenWorkQueueOptions } from '../../src/work-queue.ts';
import type { WorkQueue } from '../../src/queue/types.ts';

export interface PowerLossOptions {
  /** The database file. The twin owns it and its -wal and -shm files; its folder must exist. */
  path: string;
  /** The time migrations are stamped with on each (re)open. */
  at: () => number;
  /** The store's durability (src/store/durability.ts); omitted, the production default for a path. */
  durability?: Durability;
  /** Checkpoint once a commit leaves this many pages in the WAL (SQLite's default auto-checkpoint is 1000). */
  checkpointPages?: number;
  busyTimeoutMs?: number;
  busyRetries?: number;
}

export type SynchronousLevel = 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA';

/** One commit of a write transaction, as the twin saw it. */
export interface Commit {
  /** 1-based over the twin's life, across power losses. */
  index: number;
  /** The store operation (enqueue, claim, ...). */
  operation: string;
  /** The connection's synchronous level when the commit ran. */
  synchronous: SynchronousLevel;
  /** Whether it wrote WAL frames; one that wrote none changed nothing and synced nothing. */
  wrote: boolean;
  /** Whether the store synced the WAL after it, before answering (an enqueue under `acknowledged`). */
  syncedAfter: boolean;
  /** The WAL file's length once the commit returned. */
  walBytes: number;
}

export interface PowerLossReport {
  /** Commits with frames since the last checkpoint that were synced, and so kept. */
  synced: number;
  /** Unsynced commits that were kept anyway (the prefix asked for). */
  kept: number;
  /** The commits the power loss rolled back, oldest first (only commits that wrote). */
  lost: Commit[];
}

/** A call on a store whose power was cut: the processes that held it are gone. */
export class PowerLostError extends Error {
  constructor(operation: string) {
    super(`${operation} after a power loss: this store's process is gone; open the queue again`);
    this.name = 'PowerLostError';
  }
}

/** The twin's arguments were wrong (a RangeError-like error naming the field). */
export class PowerLossInputError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = 'PowerLossInputError';
  }
}

/** A state the twin cannot model honestly; it refuses instead of guessing. */
export class PowerLossModelError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PowerLossModelError';
  }
}

const WAL_HEADER_BYTES = 32;
const FRAME_HEADER_BYTES = 24;
const LEVELS: readonly SynchronousLevel[] = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];

export class PowerLossTwin {
  private current!: PowerLossStore;
  private level!: Statement;
  private checkpointStatement!: Statement;
  private pageSize = 0;
  private readonly history: Commit[] = [];
  /** The database file as of the last checkpoint that synced it (or the last open). */
  private image: Buffer = Buffer.alloc(0);
  /** Commits that wrote, since `image`, in commit order. */
  private pending: Commit[] = [];
  /** How many of `pending` are synced (always a prefix: a sync keeps everything before it). */
  private syncedCount = 0;
  /** An unsynced (OFF) checkpoint emptied the WAL: the pending commits' frames are no longer there. */
  private framesGone = false;
  /** The WAL's length after the last commit or checkpoint. */
  private walEnd = 0;
  /** The WAL's length at the store's last sync of it since the last checkpoint (syncWal); 0 for none. */
  private syncedThrough = 0;
  /** The salts of the WAL's header since the twin's last checkpoint; a new pair means someone else restarted it. */
  private walSalt: string | undefined;
  private readonly walPath: string;
  private readonly checkpointPages: number;
  private closed = false;

  private constructor(private readonly options: PowerLossOptions) {
    this.walPath = `${options.path}-wal`;
    this.checkpointPages = options.checkpointPages ?? 1000;
  }

  /** Opens (creating and migrating if need be) the file through the production open path. */
  static open(options: PowerLossOptions): PowerLossTwin {
    if (options === null || typeof options !== 'object') throw new PowerLossInputError('options', 'expected { path, at, durability?, checkpointPages? }');
    if (typeof options.path !== 'string' || options.path === '' || options.path === ':memory:' || options.path.startsWith('file:')) {
      throw new PowerLossInputError('path', 'expected a file path (the twin models a WAL file)');
    }
    if (typeof options.at !== 'function') throw new PowerLossInputError('at', 'expected a function returning the migration time');
    const pages = options.checkpointPages;
    if (pages !== undefined && (!Number.isSafeInteger(pages) || pages < 1)) throw new PowerLossInputError('checkpointPages', `expected a positive integer, got ${String(pages)}`);
    const twin = new PowerLossTwin(options);
    twin.start();
    return twin;
  }

  /** The store of the current power cycle (pass it to openWorkQueue, or use openQueue). */
  get store(): PowerLossStore {
    return this.current;
  }

  /** The queue on the current store, through the production API. */
  openQueue(options: Omit<OpenWorkQueueOptions, 'db' | 'durability'>): WorkQueue {
    return openWorkQueue({ ...options, db: this.current });
  }

  /** Every commit the twin saw, over its life. */
  get commits(): readonly Commit[] {
    return this.history;
  }

  /** Commits (with frames) a power loss now would roll back, at worst. */
  get unsynced(): number {
    return this.pending.length - this.syncedCount;
  }

  /** The commits (with frames) a power loss now would keep, at least. */
  get synced(): number {
    return this.syncedCount;
  }

  /**
   * Cuts the power: the current store (and every queue on it) is dead from here on, and the files become
   * what the disk kept: the last synced state plus the first `keep` unsynced commits (see the file's
   * header). Then the store is opened again on them through the production open path; `store` and
   * `openQueue` give the new one.
   */
  powerLoss(keep: number | Random = 0): PowerLossReport {
    this.requireOpen('powerLoss');
    const unsynced = this.unsynced;
    const most = this.framesGone ? 0 : unsynced;
    let kept: number;
    if (typeof keep === 'number') {
      if (!Number.isSafeInteger(keep) || keep < 0 || keep > most) {
        throw new PowerLossInputError('keep', `expected an integer in 0..${most} (the unsynced commits whose frames are in the WAL), got ${String(keep)}`);
      }
      kept = keep;
    } else if (keep !== null && typeof keep === 'object' && typeof keep.next === 'function') {
      kept = Math.min(most, Math.floor(keep.next() * (most + 1)));
    } else {
      throw new PowerLossInputError('keep', 'expected a number of unsynced commits or a Random');
    }
    const survivors = this.syncedCount + kept;
    const walBytes = survivors === 0 || this.framesGone ? 0 : this.pending[survivors - 1]!.walBytes;
    const wal = walBytes === 0 ? Buffer.alloc(0) : readFileSync(this.walPath).subarray(0, walBytes);
    const report: PowerLossReport = { synced: this.syncedCount, kept, lost: this.pending.slice(survivors) };

    // Everything in the process goes. Closing the connection checkpoints the WAL into the file; both
    // files are replaced by what the disk kept right after.
    this.current.die();
    this.removeFiles();
    writeFileSync(this.options.path, this.image);
    if (wal.length > 0) writeFileSync(this.walPath, wal);
    this.start();
    return report;
  }

  /** Runs the twin's checkpoint now (what SQLite's auto-checkpoint would do once the WAL is long). */
  checkpoint(): void {
    this.requireOpen('checkpoint');
    this.runCheckpoint();
  }

  /** A clean shutdown: the store closes (SQLite checkpoints on the last close) and the twin is done. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.current.die();
  }

  // ------------------------------------------------------------------ internals

  /** Opens the store on the files as they are, and takes the synced baseline. */
  private start(): void {
    const { path, at, durability, busyTimeoutMs = 5_000, busyRetries = 3 } = this.options;
    const syncWal = (walPath: string) => this.syncWal(walPath);
    const inner = SqliteStore.open(path, { busyTimeoutMs, busyRetries, syncWal, ...(durability === undefined ? {} : { durability }) }, at);
    const db = inner.db;
    const mode = String(db.pragma('journal_mode', { simple: true })).toLowerCase();
    if (mode !== 'wal') {
      void inner.close();
      throw new PowerLossModelError(`the store opened ${path} in journal_mode ${mode}; the twin models WAL only`);
    }
    db.pragma('wal_autocheckpoint = 0');
    this.pageSize = Number(db.pragma('page_size', { simple: true }));
    this.level = db.prepare('PRAGMA synchronous').pluck();
    this.checkpointStatement = db.prepare('PRAGMA wal_checkpoint(TRUNCATE)');
    this.current = new PowerLossStore(inner, this);
    this.pending = [];
    this.syncedCount = 0;
    this.framesGone = false;
    // What survived the power loss is on the disk now; a checkpoint makes the files say so plainly.
    if (this.currentLevel() === 'OFF') {
      this.current.die();
      throw new PowerLossModelError(`the store opened ${path} at synchronous OFF: nothing it writes is ever synced, so there is no state to return to`);
    }
    this.runCheckpoint();
  }

  /** Called by the store after each committed write transaction. */
  noteCommit(operation: string): void {
    const synchronous = this.currentLevel();
    const walBytes = this.walBytes();
    const before = this.walEnd;
    if (walBytes < before) throw new PowerLossModelError(`the WAL shrank from ${before} to ${walBytes} bytes at ${operation}: another connection checkpointed it`);
    if (walBytes > 0) {
      const salt = this.readSalt();
      if (this.walSalt !== undefined && salt !== this.walSalt) throw new PowerLossModelError(`the WAL was restarted behind the twin at ${operation}: another connection checkpointed it`);
      this.walSalt = salt;
    }
    const frames = walBytes - (walBytes === 0 ? 0 : WAL_HEADER_BYTES);
    if (frames % (this.pageSize + FRAME_HEADER_BYTES) !== 0) throw new PowerLossModelError(`the WAL is ${walBytes} bytes at ${operation}, not a whole number of frames`);
    const wrote = walBytes > before;
    this.walEnd = walBytes;
    const synced = this.syncedThrough;
    this.syncedThrough = 0;
    const commit: Commit = { index: this.history.length + 1, operation, synchronous, wrote, walBytes, syncedAfter: synced > 0 };
    this.history.push(commit);
    if (wrote) this.pending.push(commit);
    // The store's sync after the commit kept every commit whose frames it found in the file.
    if (synced > 0) {
      if (this.framesGone) throw new PowerLossModelError(`a synced commit (${operation}) after an unsynced checkpoint is not modelled`);
      while (this.syncedCount < this.pending.length && this.pending[this.syncedCount]!.walBytes <= synced) this.syncedCount++;
    }
    if (!wrote) return;
    if (synchronous === 'FULL' || synchronous === 'EXTRA') {
      if (this.framesGone) throw new PowerLossModelError(`a synced commit (${operation}) after an unsynced checkpoint is not modelled`);
      this.syncedCount = this.pending.length;
    }
    if (frames / (this.pageSize + FRAME_HEADER_BYTES) >= this.checkpointPages) this.runCheckpoint();
  }

  /**
   * The store's sync of a file after a commit (SqliteStoreOptions.syncWal): a real fdatasync, and, when
   * the file is this database's WAL, how far it reached. A sync of any other file keeps no commit.
   */
  private syncWal(walPath: string): void {
    const fd = openSync(walPath, 'r+');
    try {
      fdatasyncSync(fd);
    } finally {
      closeSync(fd);
    }
    if (resolve(walPath) === resolve(this.walPath)) this.syncedThrough = this.walBytes();
  }

  private runCheckpoint(): void {
    const synchronous = this.currentLevel();
    const [row] = this.checkpointStatement.all() as { busy: number; log: number; checkpointed: number }[];
    if (row === undefined || row.busy !== 0) throw new PowerLossModelError('the checkpoint could not finish: another connection holds the file');
    this.walEnd = this.walBytes();
    this.walSalt = undefined;
    this.syncedThrough = 0;
    if (this.walEnd !== 0) throw new PowerLossModelError(`the WAL is ${this.walEnd} bytes after a TRUNCATE checkpoint`);
    if (synchronous === 'OFF') {
      // Not a sync point: the frames left the WAL for an unsynced database file.
      if (this.syncedCount > 0) throw new PowerLossModelError('an unsynced checkpoint after a synced commit is not modelled');
      if (this.pending.length > 0) this.framesGone = true;
      return;
    }
    this.image = readFileSync(this.options.path);
    this.pending = [];
    this.syncedCount = 0;
    this.framesGone = false;
  }

  private currentLevel(): SynchronousLevel {
    const value = Number(this.level.get());
    const level = LEVELS[value];
    if (level === undefined) throw new PowerLossModelError(`PRAGMA synchronous returned ${value}`);
    return level;
  }

  /** The WAL header's two salts (bytes 16..23), which SQLite draws anew each time it restarts the WAL. */
  private readSalt(): string {
    const header = Buffer.alloc(WAL_HEADER_BYTES);
    const fd = openSync(this.walPath, 'r');
    try {
      readSync(fd, header, 0, WAL_HEADER_BYTES, 0);
    } finally {
      closeSync(fd);
    }
    return header.subarray(16, 24).toString('hex');
  }

  private walBytes(): number {
    return existsSync(this.walPath) ? statSync(this.walPath).size : 0;
  }

  private removeFiles(): void {
    for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${this.options.path}${suffix}`, { force: true });
  }

  private requireOpen(operation: string): void {
    if (this.closed) throw new PowerLossInputError('twin', `${operation} after close()`);
  }
}

/**
 * The store of one power cycle: the real SqliteStore, told nothing, with the twin watching its
 * commits. After the power loss every call fails with PowerLostError.
 */
export class PowerLossStore implements Store {
  readonly kind = 'sqlite';
  /** The simulator's seams of the SQLite store beneath (store.ts SynchronousSeams). @internal */
  readonly seams = 'synchronous';
  private alive = true;

  constructor(
    private readonly inner: SqliteStore,
    private readonly twin: PowerLossTwin,
  ) {}

  /** This power cycle's connection, for reads and pragmas; a write through it is not seen by the twin. */
  get db(): Database {
    return this.inner.db;
  }

  /** The durability the store runs at (SqliteStore.durability). */
  get durability(): Durability | undefined {
    return this.inner.durability;
  }

  write<T>(operation: string, readClock: () => number, body: TransactionBody<T>): Promise<T> {
    try {
      return Promise.resolve(this.writeNow(operation, readClock, body));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** SqliteStore.writeNow, with the commit noted by the twin. @internal */
  writeNow<T>(operation: string, readClock: () => number, body: TransactionBody<T>): T {
    this.requireAlive(operation);
    const result = this.inner.writeNow(operation, readClock, body);
    this.twin.noteCommit(operation);
    return result;
  }

  read<T>(operation: string, body: (tx: StoreTx) => Step<T>): Promise<T> {
    try {
      return Promise.resolve(this.readNow(operation, body));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** SqliteStore.readNow. @internal */
  readNow<T>(operation: string, body: (tx: StoreTx) => Step<T>): T {
    this.requireAlive(operation);
    return this.inner.readNow(operation, body);
  }

  /** The newest event id committed in this power cycle's store (SqliteStore.committedEventCursor). @internal */
  committedEventCursor(): number {
    return this.inner.committedEventCursor();
  }

  /** A queue's close after the power loss has nothing left to close. */
  close(): Promise<void> {
    return Promise.resolve();
  }

  /** Ends this power cycle: the connection closes, and nothing more can be done through this store. */
  die(): void {
    if (!this.alive) return;
    this.alive = false;
    void this.inner.close();
    if (this.inner.db.open) throw new PowerLossModelError('the store did not close its connection synchronously');
  }

  private requireAlive(operation: string): void {
    if (!this.alive) throw new PowerLostError(operation);
  }
}
