/**
 * The fleet (issue 15, S3): every actor of the world — each worker incarnation, the supervisor, the
 * client, the operator, the stale writer — holds its own connection to the world's database and opens
 * its own WorkQueue on it, as the processes of a production fleet do. The seed decides, at every
 * transaction boundary of the core (BEGIN of each write, and of each read), whether the actor's
 * transaction runs at once or waits while other actors' transactions run first; so a check made in
 * one transaction and acted on in the next is raced by the rest of the fleet, including between the
 * transactions of one worker's step (effectResult, then recordEffect; checkpoint A, then the tool call,
 * then checkpoint B). A worker can also die at a boundary: between two commits of its run.
 *
 * One physical SQLite handle serves every connection. That is indistinguishable from separate
 * connections at the granularity the core works at: every transaction is BEGIN IMMEDIATE and runs to
 * its end synchronously (better-sqlite3), so two transactions never overlap in time, which is exactly
 * what SQLite's single writer gives separate processes; and a read in WAL sees the last commit either
 * way. What separate handles would add is a reader's snapshot held across another's commit, and the
 * core never holds one (a read is one statement batch, no transaction spans an await: Q5). The busy
 * fault (faults/busy.ts) keeps its own real second connection, because the lock it holds must be real.
 *
 * On PGlite (the PostgreSQL store, sim/store/pglite.ts) the same holds with one PGlite database: the
 * store lends it to one transaction at a time, in the order they began, and each runs to its COMMIT in
 * microtask turns inside the loop's drain of the event that began it, so the virtual clock does not move
 * under it; the event cursor a connection records is the one the store knew at that COMMIT.
 *
 * Deterministic (S1): the waits are loop events, their lengths come from one seeded stream per actor,
 * and the order of transactions that wait until the same instant is the loop's scheduling order.
 */
import type { Waiter } from '../../src/ports.ts';
import { BusyError } from '../../src/queue/errors.ts';
import type { SeamedStore, Step, Store, StoreTx, TransactionBody } from '../../src/store/store.ts';
import type { SeededRandom } from '../random.ts';

export interface FleetSpec {
  /**
   * The chance that one transaction of an actor waits at its BEGIN before it runs (0: every
   * transaction runs the moment it is made, as before the fleet; 1: every one waits).
   */
  interleave: number;
  /**
   * The longest wait. 0: a waiting transaction only lets what is due at the same instant run first, so
   * the order of transactions changes and the timeline does not (for scenarios whose expectations name
   * exact instants).
   */
  maxWaitMs: number;
  /**
   * W1: the chance that one claimable notice (NOTIFY, or SQLite's in-process wake) never reaches one
   * watching actor, as a dropped LISTEN connection or a listener added late loses it. The worker's
   * bounded poll must find the work anyway (scenarios/lost-notices.json). Absent: NOTICE_DEFAULTS.
   */
  noticeLoss?: number;
  /** W1: the longest a notice that arrives takes to reach an actor, in ms (each draws 0 up to this). */
  noticeDelayMaxMs?: number;
}

/** The fleet of a scenario that says nothing: a quarter of all transactions wait, none longer than 400 ms. */
export const FLEET_DEFAULTS: FleetSpec = { interleave: 0.25, maxWaitMs: 400 };
/** Notices of a scenario that says nothing: one in ten is lost, the rest arrive within 20 ms. */
export const NOTICE_DEFAULTS = { noticeLoss: 0.1, noticeDelayMaxMs: 20 };

/** @internal */
export interface FleetWorld {
  /**
   * The world's database as the fleet reaches it: the store in force now (it changes across restarts),
   * with its simulator's seams (src/store/store.ts SimulationSeams). SQLite's runs each transaction
   * synchronously (`seams: 'synchronous'`); the PostgreSQL store on PGlite (sim/store/pglite.ts)
   * asynchronously, one transaction at a time in the order they began, and tells the event cursor at
   * its commit (`seams: 'asynchronous'`).
   */
  base(): SeamedStore;
  /** True while the scheduler is down (a restart, a power loss): a transaction that reaches it fails as against a closed database. */
  down(): boolean;
  /** The event cursor now. */
  cursor(): number;
  /** A write transaction of the call recorded at history `invoke` has just committed (or failed). */
  committed(invoke: number | undefined): void;
}

/** Who holds a connection: an id for its stream, whether it is alive, and how it waits. */
export interface FleetActor {
  readonly id: string;
  /** A dead process sends nothing more: its waiting transactions never run and never settle. */
  alive(): boolean;
  /** How it waits: a worker's gated waiter (a paused process holds its transaction; a dead one never sends it). */
  readonly waiter: Waiter;
  /**
   * Called at each of its transaction boundaries, once the wait (if any) is over and just before
   * BEGIN: true when the process dies right there, between two commits (the boundary points of
   * faults/point-scope.ts, where kill-at, pause-at, clock-jump-at and cancel-at land). `taskId`: the
   * task the call names, if any.
   */
  boundary?(operation: string, taskId: number | undefined): boolean;
}

const NEVER = new Promise<never>(() => {});

/** One transaction on the base store: run synchronously (SQLite), or begun and awaited (PostgreSQL), which calls `atCommit` with the cursor at its commit. */
type Run<T> = (base: SeamedStore, atCommit: (cursor: number) => void) => T | Promise<T>;

/** The cursor at commit of a transaction no recorded call took: nobody asks for it. */
const UNTAGGED = (): void => {};

/**
 * The wait a transaction draws, if any: half of the waits only let what is due at this instant run
 * first, most of the rest are short (up to a tenth of the longest), a few run to the longest.
 */
function drawWait(random: SeededRandom, { interleave, maxWaitMs }: FleetSpec): number | undefined {
  if (interleave <= 0 || !random.chance(interleave)) return undefined;
  const roll = random.next();
  if (roll < 0.5 || maxWaitMs === 0) return 0;
  const short = Math.max(1, Math.floor(maxWaitMs / 10));
  if (roll < 0.9 || short >= maxWaitMs) return random.int(1, short);
  return random.int(short + 1, maxWaitMs);
}

/** One actor's watch of the queue's notices (W1). */
interface Watch {
  actor: FleetActor;
  listener: () => void;
  active: boolean;
}

export class Fleet {
  private readonly watches: Watch[] = [];
  private readonly notices: SeededRandom;

  /** @internal */
  constructor(
    private readonly world: FleetWorld,
    private readonly random: SeededRandom,
    private readonly spec: FleetSpec,
  ) {
    this.notices = random.fork('notices');
  }

  /** W1: an actor's queue watches for claimable notices (WorkQueue.watch through its Connection). */
  watch(actor: FleetActor, listener: () => void): () => void {
    const watch: Watch = { actor, listener, active: true };
    this.watches.push(watch);
    return () => {
      watch.active = false;
      const at = this.watches.indexOf(watch);
      if (at >= 0) this.watches.splice(at, 1);
    };
  }

  /**
   * W1: a transaction that made a task claimable has committed. Each watching actor hears of it after a
   * drawn delay, through its own waiter (a paused process hears it when it resumes, a dead one never),
   * unless the seed loses it on the way; the order of deliveries is the loop's, so it is deterministic.
   */
  notice(): void {
    const loss = this.spec.noticeLoss ?? NOTICE_DEFAULTS.noticeLoss;
    const delayMaxMs = this.spec.noticeDelayMaxMs ?? NOTICE_DEFAULTS.noticeDelayMaxMs;
    for (const watch of [...this.watches]) {
      if (!watch.actor.alive()) continue;
      if (loss > 0 && this.notices.chance(loss)) continue;
      const delayMs = delayMaxMs > 0 ? this.notices.int(0, delayMaxMs) : 0;
      void watch.actor.waiter.sleep(delayMs).then(() => {
        if (watch.active && watch.actor.alive()) watch.listener();
      });
    }
  }

  /** A new connection for `actor`, with its own stream of waits; `interleaves` false: its transactions never wait. */
  connect(actor: FleetActor, interleaves = true): Connection {
    return new Connection(this.world, actor, this.random.fork(actor.id), interleaves ? this.spec : { interleave: 0, maxWaitMs: 0 }, this);
  }
}

/**
 * One actor's connection: a Store the actor's own WorkQueue runs on. A recorded call tags the
 * connection with its history invoke just before it calls the queue; every queue call starts its one
 * transaction synchronously, so the transaction takes the tag, and the cursor read when it commits is
 * the call's own (`take`), however long the transaction waited and whatever ran before it.
 */
export class Connection implements Store {
  /** The kind of the world's database behind it: 'sqlite', or 'pglite' for the PostgreSQL store on PGlite. */
  get kind(): string {
    return this.world.base().kind;
  }
  private tag: { invoke: number; taskId: number | undefined } | undefined;
  private readonly cursors = new Map<number, number>();

  /** @internal */
  constructor(
    private readonly world: FleetWorld,
    readonly actor: FleetActor,
    private readonly random: SeededRandom,
    private readonly spec: FleetSpec,
    private readonly fleet?: Fleet,
  ) {}

  /** W1: the actor hears the queue's claimable notices through the fleet, late or not at all as the seed says. */
  watch(listener: () => void): () => void {
    return this.fleet?.watch(this.actor, listener) ?? (() => {});
  }

  /** The next transaction made on this connection is the one of history call `invoke` (about task `taskId`, if it names one). */
  tagNext(invoke: number, taskId?: number): void {
    this.tag = { invoke, taskId };
  }

  /** Clears a tag no transaction took (the call failed before its transaction, say on a bad argument). */
  untag(): void {
    this.tag = undefined;
  }

  /** The event cursor now (for a call that made no transaction). */
  cursorNow(): number {
    return this.world.cursor();
  }

  /** The event cursor right after the transaction of call `invoke` ran, once. */
  take(invoke: number): number | undefined {
    const ev = this.cursors.get(invoke);
    this.cursors.delete(invoke);
    return ev;
  }

  write<T>(operation: string, readClock: () => number, body: TransactionBody<T>): Promise<T> {
    return this.transaction(
      operation,
      (base, atCommit) => (base.seams === 'synchronous' ? base.writeNow(operation, readClock, body) : base.writeAtCommit(operation, readClock, body, atCommit)),
      true,
    );
  }

  read<T>(operation: string, body: (tx: StoreTx) => Step<T>): Promise<T> {
    return this.transaction(operation, (base, atCommit) => (base.seams === 'synchronous' ? base.readNow(operation, body) : base.readAtCommit(operation, body, atCommit)), false);
  }

  /** The world closes the database itself; an actor's queue closing leaves it to the others. */
  close(): Promise<void> {
    return Promise.resolve();
  }

  private transaction<T>(operation: string, run: Run<T>, writing: boolean): Promise<T> {
    const tag = this.tag;
    this.tag = undefined;
    const wait = drawWait(this.random, this.spec);
    if (wait === undefined) return this.now(operation, tag, run, writing);
    return this.actor.waiter.sleep(wait).then(() => this.now(operation, tag, run, writing));
  }

  /** BEGIN now: unless the process died waiting (or dies at this boundary), or the database is down. */
  private now<T>(operation: string, tag: Connection['tag'], run: Run<T>, writing: boolean): Promise<T> {
    const invoke = tag?.invoke;
    if (!this.actor.alive()) return NEVER;
    if (this.actor.boundary?.(operation, tag?.taskId) === true) return NEVER;
    if (this.world.down()) return Promise.reject(new BusyError(operation, 1));
    const base = this.world.base();
    if (base.seams === 'asynchronous') {
      // The PostgreSQL store: the transaction begins now (in call order behind the ones before it) and
      // the store tells the cursor at its COMMIT, before any later transaction ran.
      const atCommit = invoke === undefined ? UNTAGGED : (cursor: number): void => void this.cursors.set(invoke, cursor);
      const pending = run(base, atCommit) as Promise<T>;
      if (!writing) return pending;
      return pending.then(
        (result) => {
          this.world.committed(invoke);
          return result;
        },
        (error: unknown) => {
          this.world.committed(invoke);
          throw error;
        },
      );
    }
    let result: T;
    try {
      result = run(base, UNTAGGED) as T;
    } catch (error) {
      if (writing) this.world.committed(invoke);
      return Promise.reject(error);
    }
    if (writing) this.world.committed(invoke);
    if (invoke !== undefined) this.cursors.set(invoke, this.world.cursor());
    return Promise.resolve(result);
  }
}
