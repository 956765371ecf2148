import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveConfig } from '../../src/queue/config.ts';
import type { Durability } from '../../src/store/durability.ts';
import { PgStore, type PgliteLike as PGlite } from '../../src/store/pg-store.ts';
import { SqliteStore } from '../../src/store/sqlite-store.ts';
import type { SeamedStore } from '../../src/store/store.ts';
import { openWorkQueue } from '../../src/work-queue.ts';
import type { ActorQueue } from '../actors/gated-queue.ts';
import type { EventLoop } from '../event-loop.ts';
import { TIMED_FAULTS } from '../faults/index.ts';
import type { DatabaseNeed } from '../faults/injector.ts';
import type { FaultPlan } from '../faults/plan.ts';
import type { History } from '../history.ts';
import { freshMemoryDatabase } from '../memory-image.ts';
import type { SeededRandom } from '../random.ts';
import type { ScenarioSpec } from '../scenario.ts';
import { Fleet, FLEET_DEFAULTS, type FleetActor } from '../store/fleet.ts';
import { freshPglite } from '../store/pglite.ts';
import { PowerLossTwin } from '../store/power-loss.ts';
import { StorageFaults } from '../store/storage-faults.ts';

/** Where runs that restart the scheduler, or meet a competing writer, keep their database file: tmpfs when the machine has one. */
const SIM_FILES = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();

/** The share of restart seeds (without a power-loss or busy fault) that run on a real WAL file rather than an image in memory. */
export const RESTART_ON_FILE = 0.125;

/**
 * What the plan's faults need of the database beneath the world, as each fault kind declares it
 * (TimedInjector.needs): state that survives the scheduler's restart, a real file, the power-loss
 * twin, the storage gate.
 */
export function databaseNeeds(plan: FaultPlan): ReadonlySet<DatabaseNeed> {
  const needs = new Set<DatabaseNeed>();
  for (const fault of plan.timed) for (const need of TIMED_FAULTS[fault.kind].needs ?? []) needs.add(need);
  return needs;
}

/**
 * Where a SQLite run's database lives: a power loss needs the twin's real WAL file and a busy fault a
 * second connection on the file ('file'); a restart alone runs on an image in memory, serialized at the
 * close and opened again from it ('memory-image'), except a RESTART_ON_FILE share of those seeds (drawn
 * from a fork of its own, so no other draw moves), which keep a real file and SQLite's recovery on
 * reopen; anything else is plain memory.
 */
export function sqliteDatabaseFor(plan: FaultPlan, random: SeededRandom, durability?: Durability): 'memory' | 'memory-image' | 'file' {
  const needs = databaseNeeds(plan);
  // A durability is what a commit survives on disk: only a file has one (the store leaves a database in memory alone).
  if (durability !== undefined || needs.has('file')) return 'file';
  if (!needs.has('disk')) return 'memory';
  return random.fork('restart-file').chance(RESTART_ON_FILE) ? 'file' : 'memory-image';
}

export interface DatabaseHostOptions {
  scenario: ScenarioSpec;
  /** The plan the run runs (its faults say what the database must offer). */
  plan: FaultPlan;
  /** The world's root stream: the host forks its own ('fleet', 'restart-file', 'power-loss-keep', 'core'). */
  random: SeededRandom;
  loop: EventLoop;
  history: History;
  /** The thread's PGlite database for a world on 'pglite'; absent: SQLite. */
  pglite?: PGlite;
}

/**
 * The database host (S3, S4): the one database of a world and every fault beneath it. It owns where the
 * database lives (SQLite in memory, an image in memory across restarts, a WAL file, the power-loss twin's
 * file, or the PostgreSQL store on PGlite), the storage gate of the disk-full and io-error faults, the
 * fleet of connections every actor's queue runs on, and whether the scheduler is down: a transaction
 * that reaches the fleet's BEGIN while it is down waits or fails there (sim/store/fleet.ts). What it
 * opens follows from what the plan's fault kinds declare they need (databaseNeeds).
 */
export class DatabaseHost {
  /** Where the run's database lives (sqliteDatabaseFor): for reports and tests. */
  readonly database: 'memory' | 'memory-image' | 'file' | 'pglite';
  /** The storage beneath the world's handle (store/storage-faults.ts): the disk-full and io-error faults act on it. */
  readonly storage = new StorageFaults();
  readonly dbPath: string;
  private readonly needs: ReadonlySet<DatabaseNeed>;
  private readonly directory: string | undefined;
  /** A restart seed on an image in memory instead of a file; `image` holds it while the scheduler is down. */
  private readonly restartInMemory: boolean;
  private image: Buffer | undefined;
  private readonly fleet: Fleet;
  /** W1: stops the fleet's subscription to the base store's notices (renewed with each store it opens). */
  private unwatchBase: (() => void) | undefined;
  /** The database handle of a file-backed run, which the host opens and closes around the store. */
  private handle: Database.Database | undefined;
  /** The database as every connection reaches it now: it changes across restarts and power losses. */
  private store!: SeamedStore;
  /**
   * A run with a power-loss fault keeps its database in the power-loss twin (sim/store/power-loss.ts),
   * at the queue's default durability, and maps each commit the twin saw to the history invoke of the
   * call that made it (`commitInvokes[commit.index]`), so a power-loss note can name the calls it undid.
   */
  private twin: PowerLossTwin | undefined;
  private readonly commitInvokes: number[] = [];
  /** How many unsynced commits a `keep: prefix` power loss keeps: its own stream, so other draws stay put. */
  private keepRandom: SeededRandom | undefined;
  private isDown = false;
  private releasePglite: (() => void) | undefined;

  constructor(private readonly options: DatabaseHostOptions) {
    const { scenario, plan, random, pglite } = options;
    this.needs = databaseNeeds(plan);
    // On PGlite the database outlives a restart in memory: no file is needed. On SQLite a power loss
    // needs the twin's real WAL file and a busy fault a second connection on the file; a restart alone
    // runs on an image in memory (serialized at the close, opened again from it: exactly what was
    // committed), except in a sampled share of its seeds (RESTART_ON_FILE), which keep a real WAL file
    // and SQLite's own recovery on reopen, so that path stays tested. A statement on a file costs about
    // 1.9x one in memory.
    this.database = pglite === undefined ? sqliteDatabaseFor(plan, random, scenario.durability) : 'pglite';
    this.restartInMemory = this.database === 'memory-image';
    this.directory = this.database === 'file' ? mkdtempSync(join(SIM_FILES, 'leasehold-sim-')) : undefined;
    this.dbPath = this.directory === undefined ? ':memory:' : join(this.directory, 'queue.sqlite');
    this.fleet = new Fleet(
      { base: () => this.store, down: () => this.isDown, cursor: this.cursor, committed: (invoke) => this.noteCommits(invoke) },
      random.fork('fleet'),
      scenario.fleet ?? FLEET_DEFAULTS,
    );
    this.openStore();
  }

  /** True while the scheduler is down (a restart, a power loss): nothing reaches the database. */
  get down(): boolean {
    return this.isDown;
  }

  /** Whether what was committed survives the scheduler's restart (a file, an image in memory, PGlite). */
  get onDisk(): boolean {
    return this.dbPath !== ':memory:' || this.options.pglite !== undefined || this.restartInMemory;
  }

  /** The database file, when the run has one (a busy fault's competing writer opens it). */
  get databaseFile(): string | undefined {
    return this.dbPath === ':memory:' ? undefined : this.dbPath;
  }

  /** Whether the plan cuts power (the scheduler handle offers powerLoss only then). */
  get powerLossTwin(): boolean {
    return this.needs.has('power-loss-twin');
  }

  /** A fresh database for the world on the thread's PGlite, migrated as of now (SQLite's migrates at open: the same instant). */
  async prepare(): Promise<void> {
    if (this.options.pglite !== undefined) this.releasePglite = await freshPglite(this.options.pglite, this.options.loop.clock.now());
  }

  /**
   * A queue of its own for `actor` (a worker incarnation, the supervisor, the client, a fault's
   * sender), on a connection of its own to the database (sim/store/fleet.ts), with the core's
   * randomness forked for it: each process of a fleet opens its own queue. `interleaves` false: the
   * connection's transactions never wait (the scheduler's own look, read after the loop has stopped).
   */
  connect(actor: FleetActor, interleaves = true): ActorQueue {
    const connection = this.fleet.connect(actor, interleaves);
    const queue = openWorkQueue({ clock: this.options.loop.clock, random: this.options.random.fork('core').fork(actor.id), config: this.options.scenario.queue, db: connection });
    return { queue, connection };
  }

  /** The scheduler goes down (a restart): down first, so a transaction that reaches the database while it closes meets a scheduler that is down. */
  async shutDown(): Promise<void> {
    this.isDown = true;
    await this.closeStore();
  }

  /** The scheduler comes back: the database opens again with what was committed. False if it was not down. */
  reopen(): boolean {
    if (!this.isDown) return false;
    this.openStore();
    this.isDown = false;
    return true;
  }

  /**
   * S4 power loss (faults/power-loss.ts): the database returns to what the disk kept and the scheduler is
   * down. The note names the commits the cut rolled back and the calls that made them. False: nothing
   * happened (no twin, or the scheduler was already down).
   */
  powerLoss(keep: 'none' | 'prefix', downMs: number): boolean {
    const twin = this.twin;
    if (twin === undefined || this.isDown) return false;
    const report = twin.powerLoss(keep === 'prefix' ? (this.keepRandom ??= this.options.random.fork('power-loss-keep')) : 0);
    this.isDown = true;
    this.store = twin.store;
    const cursor = this.cursor();
    const lost = report.lost.map((commit) => ({ commit: commit.index, operation: commit.operation, synchronous: commit.synchronous, invoke: this.commitInvokes[commit.index] ?? -1 }));
    this.options.history.note('power-loss', 'host', { downMs, keep, synced: report.synced, kept: report.kept, cursor, lost });
    return true;
  }

  /**
   * The durability the SQLite store ran at, as the store itself reports it (the power-loss twin's
   * store's): absent for a database in memory, a file left at synchronous OFF, or PGlite.
   */
  durability(): Durability | undefined {
    return this.twin?.store.durability ?? (this.store instanceof SqliteStore ? this.store.durability : undefined);
  }

  /** The run is over: the database closes, the PGlite database is given back, the twin and the file go. */
  async dispose(): Promise<void> {
    await this.closeStore();
    this.releasePglite?.();
    this.twin?.close();
    if (this.directory !== undefined) rmSync(this.directory, { recursive: true, force: true });
  }

  /**
   * The event cursor now: the newest event id committed (each connection reads it when its transaction
   * commits, sim/store/fleet.ts). Every store here knows it without a query: the host's store is the
   * database's only writer, and tracks the newest event id it committed (read once when it opens): the
   * seam CommitCursorSeam of src/store/store.ts.
   */
  private readonly cursor = (): number => this.store.committedEventCursor();

  /** A write of history call `invoke` ran: the twin's new commits, if any, are that call's (a power-loss note names them). */
  private noteCommits(invoke: number | undefined): void {
    const twin = this.twin;
    if (twin === undefined) return;
    for (let index = this.commitInvokes.length === 0 ? 1 : this.commitInvokes.length; index <= twin.commits.length; index++) this.commitInvokes[index] = invoke ?? -1;
  }

  /** Opens the database (or reopens it after a restart): every connection reaches it through `this.store`. */
  private openStore(): void {
    this.openBase();
    // W1: the base store's claimable notices reach the actors that watch, through the fleet (sim/store/fleet.ts).
    this.unwatchBase?.();
    this.unwatchBase = this.store.watch?.(() => this.fleet.notice());
  }

  private openBase(): void {
    const { scenario, loop, pglite } = this.options;
    // Busy timeout 0: SQLite's busy handler would sleep in real time inside the synchronous call, while the
    // competing writer of a busy fault (faults/busy.ts) lets go only at a loop event. Each attempt meets
    // SQLITE_BUSY at once, and the store's own bounded retries (Q18) run as in production.
    // No watch of the file for other processes (W1): the world's notices reach its actors through the
    // fleet alone, never from a real file-system event.
    const storeOptions = { busyTimeoutMs: 0, busyRetries: resolveConfig(scenario.queue).busyRetries, watchOtherProcesses: false };
    // A scenario's durability (scenario.durability) is given to the SQLite store as openWorkQueue would give it.
    const durability = scenario.durability === undefined ? {} : { durability: scenario.durability };
    if (pglite !== undefined) {
      // The PostgreSQL store's production path (pg-store.ts) on PGlite: a restart closes this store and
      // opens a new one on the same database, which keeps exactly what was committed.
      this.store = PgStore.open(pglite, { busyRetries: storeOptions.busyRetries }, () => loop.clock.now());
      return;
    }
    if (this.dbPath !== ':memory:' && this.needs.has('power-loss-twin')) {
      // A power loss must find what the disk was told to keep: the twin opens the file through the
      // production path at the scenario's durability, by default the production default ('acknowledged'),
      // never synchronous OFF. A restart (a process crash of the scheduler) reopens the queue on the
      // twin's same connection.
      this.twin ??= PowerLossTwin.open({ path: this.dbPath, at: () => loop.clock.now(), ...storeOptions, ...durability });
      this.store = this.twin.store;
      return;
    }
    let target: Database.Database;
    if (this.dbPath === ':memory:') {
      target = this.image === undefined ? freshMemoryDatabase() : new Database(this.image);
      this.image = undefined;
    } else {
      // The simulated machine never loses power, so a commit needs no fsync: the file keeps WAL (as in
      // production) but synchronous OFF. A restart closes and reopens it, keeping exactly what was
      // committed, as before. The handle is the host's; the store adopts it (the production API).
      // A scenario that states a durability runs at it: the store sets the handle's level (a handle
      // given a durability takes it, as in production).
      target = new Database(this.dbPath);
      target.pragma('journal_mode = WAL');
      if (scenario.durability === undefined) target.pragma('synchronous = OFF');
    }
    this.handle = target;
    // The host opens the store itself, so each connection can read the event cursor at the instant its
    // transaction committed (sim/store/fleet.ts); every queue runs on it through the production API.
    // The storage gate (store/storage-faults.ts) wraps every write statement; a seed whose plan has no
    // fault that needs it never uses it, so its handle goes to the store as it is.
    this.store = SqliteStore.open(this.needs.has('storage-gate') ? this.storage.attach(target) : target, { ...storeOptions, ...durability }, () => loop.clock.now());
  }

  /** Closes the database: every queue on it stays, and meets a scheduler that is down until it reopens. */
  private async closeStore(): Promise<void> {
    await this.store.close();
    // A restart in memory keeps what was committed as the database's image, as a file would keep it.
    if (this.restartInMemory && this.handle !== undefined && this.handle.open) this.image = this.handle.serialize();
    this.handle?.close();
    this.handle = undefined;
  }
}
