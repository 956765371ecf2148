import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EnqueueResult, WorkQueue } from '../src/queue/types.ts';
import { canonicalJson, sha256Hex } from '../src/canonical-json.ts';
import type { JsonValue } from './canonical-json.ts';
import { resolveConfig } from '../src/queue/config.ts';
import { SqliteStore } from '../src/store/sqlite-store.ts';
import type { Durability } from '../src/store/durability.ts';
import { PgStore, type PgliteLike as PGlite } from '../src/store/pg-store.ts';
import { openWorkQueue } from '../src/work-queue.ts';
import type { RunOutcome } from '../src/worker/types.ts';
import type { Incarnation } from './actors/incarnation.ts';
import { recordedCall, type ActorQueue } from './actors/gated-queue.ts';
import { freshMemoryDatabase } from './memory-image.ts';
import { ExternalProvider } from './actors/provider.ts';
// T2: types only. The agent mode's code reaches the world through the loaded module (SimAgent.runtime),
// so a world of the built-in agent never loads src/worker/agent.ts (the coverage gate counts what it loads).
import type { AgentParts } from './actors/agent-world.ts';
import type { SimAgent } from './actors/agent-module.ts';
import type { ExternalTwins } from './actors/external-twin.ts';
import { ScriptedModel, scriptOf } from './actors/scripted-model.ts';
import { SimWorker, type SimWorkerEnvironment } from './actors/sim-worker.ts';
import { Supervisor } from './actors/supervisor.ts';
import { simulatedTools } from './actors/tools.ts';
import { EventLoop } from './event-loop.ts';
import { FaultController } from './faults/controller.ts';
import type { FaultWorld, SchedulerHandle } from './faults/injector.ts';
import type { FaultPlan } from './faults/plan.ts';
import { planOf } from './faults/index.ts';
import { needsDisk } from './faults/restart.ts';
import { needsFile } from './faults/busy.ts';
import { RetryableStoreError } from '../src/queue/errors.ts';
import { needsPowerLossTwin } from './faults/power-loss.ts';
import { PowerLossTwin } from './store/power-loss.ts';
import { Fleet, FLEET_DEFAULTS, type BaseStore, type FleetActor } from './store/fleet.ts';
import { needsStorageFaults, StorageFaults } from './store/storage-faults.ts';
import { applicablePlan, freshPglite, inapplicableFaults, type SimStore } from './store/pglite.ts';
import { History } from './history.ts';
import { SeededRandom, type Seed } from './random.ts';
import type { ScenarioSpec } from './scenario.ts';
import { drawArrivals, type Arrival } from './workload.ts';
import { operatorTimes } from './workloads/client-swarm.ts';

/** Where runs that restart the scheduler, or meet a competing writer, keep their database file: tmpfs when the machine has one. */
const SIM_FILES = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();

/** Everything a finished run leaves for the checkers (S7): the history and the final database. */
export interface WorldResult {
  scenario: ScenarioSpec;
  seed: string;
  plan: FaultPlan;
  arrivals: Arrival[];
  enqueued: { arrival: Arrival; result: EnqueueResult }[];
  history: History;
  provider: ExternalProvider;
  final: Awaited<ReturnType<WorkQueue['snapshot']>>;
  events: Awaited<ReturnType<WorkQueue['allEvents']>>;
  checkpoints: Map<number, Awaited<ReturnType<WorkQueue['lastCheckpoint']>>>;
  holds: Awaited<ReturnType<WorkQueue['holds']>>;
  deadLetters: Awaited<ReturnType<WorkQueue['deadLetters']>>;
  effects: Awaited<ReturnType<WorkQueue['effects']>>;
  /** The credit ledger (R4) and the applied migrations, read at the end so checkers read every table the core writes (checkers/tables.ts). */
  creditLedger: Awaited<ReturnType<WorkQueue['creditLedger']>>;
  schemaMigrations: Awaited<ReturnType<WorkQueue['schemaMigrations']>>;
  /**
   * A1, A2 (issue 16): the budget rows (budget_levels, as budgetLevels() reports them at
   * `budgetLevelsAt`, the queue clock's reading then), the reservations, every admission decision and
   * the paused tenants (tenant_pauses). Optional: an older counterexample's result lacks them, and the
   * checkers' rules that need one skip (checkers/tables.ts).
   */
  budgetLevels?: Awaited<ReturnType<WorkQueue['budgetLevels']>>;
  budgetLevelsAt?: number;
  reservations?: Awaited<ReturnType<WorkQueue['reservations']>>;
  admissionDecisions?: Awaited<ReturnType<WorkQueue['admissionDecisions']>>;
  pausedTenants?: Awaited<ReturnType<WorkQueue['pausedTenants']>>;
  /** A3: each tenant's service row (fair share), for I19's books. */
  tenantServices?: Awaited<ReturnType<WorkQueue['tenantServices']>>;
  /**
   * Q17: the incident grouping of every task enqueued in the run, read from the queue at the end
   * (minGroupSize 1: groups of one included; a candidate in the SPEC's sense has two or more).
   */
  incidents?: Awaited<ReturnType<WorkQueue['incidentCandidates']>>;
  outcomes: { incarnation: string; outcome: RunOutcome }[];
  drained: boolean;
  /** Events the discrete-event loop ran: the cost of the run. */
  loopEvents: number;
  startMs: number;
  safetyEndMs: number;
  endMs: number;
  crash?: unknown;
  /** The database the run used: 'sqlite' (the default) or 'pglite' (the PostgreSQL store on PGlite). */
  store?: SimStore;
  /** Faults of the drawn plan the store cannot run (sim/store/pglite.ts), by kind: left out of `plan`, and noted in the history. */
  notApplicable?: Record<string, number>;
  /** T2: the team's agent module the run ran (absent: the built-in scripted model and tools), and its twins' record. */
  agent?: { module: SimAgent; twins: ExternalTwins };
  /**
   * The durability the SQLite store ran at, as the store itself reports it (SqliteStore.durability, the
   * power-loss twin's store's): what a power loss may undo (checkers/i11-no-lost-task.ts). Absent: a
   * database in memory, a file left at synchronous OFF (no fault of the run cuts power), or PGlite.
   */
  durability?: Durability;
}

/** Where a world keeps its database: SQLite (the default), or the PostgreSQL store on the thread's PGlite database. */
export type WorldStore = { kind: 'sqlite' } | { kind: 'pglite'; db: PGlite };

/**
 * The world (S3): one database (SQLite, or with store 'pglite' the PostgreSQL store's own SQL on the
 * thread's PGlite, sim/store/pglite.ts), the core's WorkQueue on the virtual clock, N simulated workers
 * running the production worker runtime, a scripted model, simulated tools, an external provider and
 * a supervisor. Built from a scenario and one root seed; streams are forked per purpose (S2).
 */
/** The share of restart seeds (without a power-loss or busy fault) that run on a real WAL file rather than an image in memory. */
export const RESTART_ON_FILE = 0.125;

/**
 * Where a SQLite run's database lives: a power loss needs the twin's real WAL file and a busy fault a
 * second connection on the file ('file'); a restart alone runs on an image in memory, serialized at the
 * close and opened again from it ('memory-image'), except a RESTART_ON_FILE share of those seeds (drawn
 * from a fork of its own, so no other draw moves), which keep a real file and SQLite's recovery on
 * reopen; anything else is plain memory.
 */
export function sqliteDatabaseFor(plan: FaultPlan, random: SeededRandom, durability?: Durability): 'memory' | 'memory-image' | 'file' {
  // A durability is what a commit survives on disk: only a file has one (the store leaves a database in memory alone).
  if (durability !== undefined || needsFile(plan) || plan.timed.some((fault) => fault.kind === 'power-loss')) return 'file';
  if (!needsDisk(plan)) return 'memory';
  return random.fork('restart-file').chance(RESTART_ON_FILE) ? 'file' : 'memory-image';
}

export class World {
  readonly loop = new EventLoop();
  readonly history = new History(this.loop);
  readonly provider = new ExternalProvider(this.history);
  readonly plan: FaultPlan;
  readonly arrivals: Arrival[];
  readonly workers: SimWorker[] = [];
  private readonly random: SeededRandom;
  private readonly faults: FaultController;
  private readonly supervisor: Supervisor;
  private readonly incarnations = new Map<string, Incarnation>();
  private readonly enqueued: WorldResult['enqueued'] = [];
  /** Q14: each enqueued task's deadline, for the expire-at fault (faults/expire-at.ts). */
  private readonly deadlines = new Map<number, number>();
  private readonly outcomes: WorldResult['outcomes'] = [];
  private readonly directory: string | undefined;
  /** Where the run's database lives (sqliteDatabaseFor): for reports and tests. */
  readonly database: 'memory' | 'memory-image' | 'file' | 'pglite';
  /** A restart seed on an image in memory instead of a file (see the constructor); `image` holds it while the scheduler is down. */
  private readonly restartInMemory: boolean;
  private image: Buffer | undefined;
  private readonly dbPath: string;
  /**
   * The scheduler's own queue: the world's look at the database (the end-of-run reads, the operator's
   * list), on a connection whose transactions never wait. Every actor has a queue of its own (connect).
   */
  private readonly queue: WorkQueue;
  private readonly fleet: Fleet;
  private readonly own: ActorQueue;
  private readonly client: ActorQueue;
  private readonly operator: ActorQueue;
  /** W1: stops the world's subscription to the base store's notices (renewed with each store it opens). */
  private unwatchBase: (() => void) | undefined;
  /** The database handle of a file-backed run, which the world opens and closes around the queue. */
  private handle: Database.Database | undefined;
  /** The world's database as every connection reaches it now: it changes across restarts and power losses. */
  private store!: BaseStore;
  /**
   * A run with a power-loss fault keeps its database in the power-loss twin (sim/store/power-loss.ts),
   * at the queue's default durability, and maps each commit the twin saw to the history invoke of the
   * call that made it (`commitInvokes[commit.index]`), so a power-loss note can name the calls it undid.
   */
  private twin: PowerLossTwin | undefined;
  private readonly commitInvokes: number[] = [];
  /** How many unsynced commits a `keep: prefix` power loss keeps: its own stream, so other draws stay put. */
  private keepRandom: SeededRandom | undefined;
  /** The storage beneath the world's handle (store/storage-faults.ts): the disk-full and io-error faults act on it. */
  private readonly storage = new StorageFaults();
  private readonly enqueuesByTenant = new Map<string, number>();
  /** A2: tenants the operator paused (faults/tenant-pause.ts) and has not resumed: resumed as the liveness phase begins. */
  private readonly pausedTenants = new Set<string>();
  private down = false;
  private loopEvents = 0;
  private crash: unknown;
  /** The PGlite database of a world on 'pglite', and the release of it once the run is over. */
  private readonly pglite: PGlite | undefined;
  private releasePglite: (() => void) | undefined;
  private readonly notApplicable: Record<string, number>;
  /** T2: the twins of the agent module's external systems, shared by every incarnation (a provider outlives its callers). */
  readonly twins: ExternalTwins | undefined;
  /** T2: the tasks the workload drew poison (R6), by tenant, topic and version: an agent's input carries no script to say so. */
  private readonly poisoned = new Set<string>();
  private readonly poisonedTasks = new Set<number>();
  /**
   * T2: what the team's code (a tool, the model) threw that was not a ToolFailure, by incarnation and
   * task, as the worker words a crashed run's error: such a run ends `crashed` in production too
   * (src/worker/worker.ts), and is the team's finding, not a crash of the harness.
   */
  private readonly teamThrows = new Map<string, { where: string; error: string }[]>();

  constructor(
    readonly scenario: ScenarioSpec,
    seed: Seed,
    planOverride?: FaultPlan,
    storeChoice: WorldStore = { kind: 'sqlite' },
    /** T2: a team's agent module to run instead of the built-in scripted model and tools. */
    readonly agent?: SimAgent,
  ) {
    this.random = new SeededRandom(seed);
    const { workers } = scenario;
    const drawn = planOverride ?? planOf(scenario, this.random);
    this.pglite = storeChoice.kind === 'pglite' ? storeChoice.db : undefined;
    this.notApplicable = inapplicableFaults(drawn, storeChoice.kind);
    this.plan = applicablePlan(drawn, storeChoice.kind);
    this.arrivals = drawArrivals(this.random.fork('workload'), scenario.workload);
    // T2: the same draws; each task's input is then the agent's (its script removed, so no checker judges it against one).
    if (agent !== undefined) agent.runtime.agentArrivals(this.arrivals, agent, this.poisoned);
    this.twins = agent === undefined ? undefined : new agent.runtime.ExternalTwins(this.history, this.provider, Object.keys(agent.definition.externals), agent.twins);
    // On PGlite the database outlives a restart in memory: no file is needed. On SQLite a power loss
    // needs the twin's real WAL file and a busy fault a second connection on the file; a restart alone
    // runs on an image in memory (serialized at the close, opened again from it: exactly what was
    // committed), except in a sampled share of its seeds (RESTART_ON_FILE), which keep a real WAL file
    // and SQLite's own recovery on reopen, so that path stays tested. A statement on a file costs about
    // 1.9x one in memory.
    this.database = this.pglite === undefined ? sqliteDatabaseFor(this.plan, this.random, scenario.durability) : 'pglite';
    this.restartInMemory = this.database === 'memory-image';
    this.directory = this.database === 'file' ? mkdtempSync(join(SIM_FILES, 'leasehold-sim-')) : undefined;
    this.dbPath = this.directory === undefined ? ':memory:' : join(this.directory, 'queue.sqlite');
    this.fleet = new Fleet(
      { base: () => this.store, down: () => this.down, cursor: this.cursor, committed: (invoke) => this.noteCommits(invoke) },
      this.random.fork('fleet'),
      scenario.fleet ?? FLEET_DEFAULTS,
    );
    this.openStore();
    if (this.pglite !== undefined) this.history.note('store', 'sim', { store: 'pglite', notApplicable: this.notApplicable });
    this.own = this.connect(this.process('scheduler'), false);
    this.queue = this.own.queue;
    this.client = this.connect(this.process('client'));
    this.operator = this.connect(this.process('operator'));
    this.faults = new FaultController(this.plan, this.faultWorld(), this.random);
    const supervisor = this.connect(this.process('supervisor'));
    this.supervisor = new Supervisor(this.loop, this.history, supervisor, () => this.incarnations, scenario.supervisor, () => !this.down, {
      uncertain: (taskId, generation) => this.faults.supervisorSaw('uncertain', taskId, generation),
      confirmed: (taskId, generation) => this.faults.supervisorSaw('confirmed', taskId, generation),
    });
    for (let index = 0; index < workers.count; index++) this.workers.push(this.makeWorker(index));
  }

  /** What faults act on (faults/injector.ts): the workers' processes and the scheduler's. */
  private faultWorld(): FaultWorld {
    const world = this;
    const scheduler: SchedulerHandle = {
      get down() {
        return world.down;
      },
      onDisk: this.dbPath !== ':memory:' || this.pglite !== undefined || this.restartInMemory,
      databaseFile: this.dbPath === ':memory:' ? undefined : this.dbPath,
      ...(needsPowerLossTwin(this.plan) ? { powerLoss: (keep: 'none' | 'prefix', downMs: number) => this.powerLoss(keep, downMs) } : {}),
      shutDown: async () => {
        // Down first: a transaction that reaches the database while it closes meets a scheduler that is down.
        this.down = true;
        await this.closeQueue();
      },
      reopen: () => this.reopen(),
      connect: (id) => this.connect(this.process(id)),
      leaseMs: resolveConfig(this.scenario.queue).leaseMs,
      storage: this.storage,
      ...(Object.keys(resolveConfig(this.scenario.queue).budgets).length > 0
        ? { budgetLevels: async () => (await this.queue.budgetLevels()).map(({ budget, scope, kind, level, limit, updatedAt }) => ({ budget, scope, kind, level, limit, updatedAt })) }
        : {}),
    };
    return {
      loop: this.loop,
      history: this.history,
      workerCount: this.scenario.workers.count,
      kill: (index, reason, reviveAfterMs, atNextAwait, label) => this.kill(this.workers[index], reason, reviveAfterMs, atNextAwait, label),
      pause: (index, durationMs, label, at) => this.pause(index, durationMs, label, at),
      drain: (index, drainMs, reviveAfterMs, label) => this.drain(index, drainMs, reviveAfterMs, label),
      isCurrent: (incarnation) => this.workers[incarnation.worker]?.current === incarnation,
      runningTasks: () => this.workers.map((worker) => worker.running),
      deadlineOf: (taskId) => this.deadlines.get(taskId),
      deliver: (index, task) => this.workers[index]?.deliver(task),
      // A cancel-at fault's cancel runs outside a loop callback: an error it does not expect ends the run as a harness crash.
      cancel: (taskId) => void this.cancel(taskId, 'operator').catch((error: unknown) => this.fail(error)),
      pauseTenant: (tenant, reason) => void this.tenantAction('pauseTenant', [tenant, reason]).catch((error: unknown) => this.fail(error)),
      resumeTenant: (tenant) => void this.tenantAction('resumeTenant', [tenant]).catch((error: unknown) => this.fail(error)),
      scheduler,
    };
  }

  /** Opens the world's database (or reopens it after a restart): every connection reaches it through `this.store`. */
  private openStore(): void {
    this.openBase();
    // W1: the base store's claimable notices reach the actors that watch, through the fleet (sim/store/fleet.ts).
    this.unwatchBase?.();
    this.unwatchBase = this.store.watch?.(() => this.fleet.notice());
  }

  private openBase(): void {
    // Busy timeout 0: SQLite's busy handler would sleep in real time inside the synchronous call, while the
    // competing writer of a busy fault (faults/busy.ts) lets go only at a loop event. Each attempt meets
    // SQLITE_BUSY at once, and the store's own bounded retries (Q18) run as in production.
    // No watch of the file for other processes (W1): the world's notices reach its actors through the
    // fleet alone, never from a real file-system event.
    const storeOptions = { busyTimeoutMs: 0, busyRetries: resolveConfig(this.scenario.queue).busyRetries, watchOtherProcesses: false };
    // A scenario's durability (scenario.durability) is given to the SQLite store as openWorkQueue would give it.
    const durability = this.scenario.durability === undefined ? {} : { durability: this.scenario.durability };
    if (this.pglite !== undefined) {
      // The PostgreSQL store's production path (pg-store.ts) on PGlite: a restart closes this store and
      // opens a new one on the same database, which keeps exactly what was committed.
      this.store = PgStore.open(this.pglite, { busyRetries: storeOptions.busyRetries }, () => this.loop.clock.now());
      return;
    }
    if (this.dbPath !== ':memory:' && needsPowerLossTwin(this.plan)) {
      // A power loss must find what the disk was told to keep: the twin opens the file through the
      // production path at the scenario's durability, by default the production default ('acknowledged'),
      // never synchronous OFF. A restart (a process crash of the scheduler) reopens the queue on the
      // twin's same connection.
      this.twin ??= PowerLossTwin.open({ path: this.dbPath, at: () => this.loop.clock.now(), ...storeOptions, ...durability });
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
      // committed, as before. The handle is the world's; the store adopts it (the production API).
      // A scenario that states a durability runs at it: the store sets the handle's level (a handle
      // given a durability takes it, as in production).
      target = new Database(this.dbPath);
      target.pragma('journal_mode = WAL');
      if (this.scenario.durability === undefined) target.pragma('synchronous = OFF');
    }
    this.handle = target;
    // The world opens the store itself, so each connection can read the event cursor at the instant its
    // transaction committed (sim/store/fleet.ts); every queue runs on it through the production API.
    // The storage gate (store/storage-faults.ts) wraps every write statement; a seed whose plan has no
    // disk-full or io-error fault never uses it, so its handle goes to the store as it is.
    this.store = SqliteStore.open(needsStorageFaults(this.plan) ? this.storage.attach(target) : target, { ...storeOptions, ...durability }, () => this.loop.clock.now());
  }

  /**
   * A queue of its own for `actor` (a worker incarnation, the supervisor, the client, a fault's
   * sender), on a connection of its own to the world's database (sim/store/fleet.ts), with the core's
   * randomness forked for it: each process of a fleet opens its own queue. `interleaves` false: the
   * connection's transactions never wait (the scheduler's own look, read after the loop has stopped).
   */
  private connect(actor: FleetActor, interleaves = true): ActorQueue {
    const connection = this.fleet.connect(actor, interleaves);
    const queue = openWorkQueue({ clock: this.loop.clock, random: this.random.fork('core').fork(actor.id), config: this.scenario.queue, db: connection });
    return { queue, connection };
  }

  /** An actor that never dies or freezes (the scheduler's own look, the client, the operator, the supervisor, a fault's sender), waiting on the loop. */
  private process(id: string): FleetActor {
    return { id, alive: () => true, waiter: this.loop.waiter };
  }

  /** A write of history call `invoke` ran: the twin's new commits, if any, are that call's (a power-loss note names them). */
  private noteCommits(invoke: number | undefined): void {
    const twin = this.twin;
    if (twin === undefined) return;
    for (let index = this.commitInvokes.length === 0 ? 1 : this.commitInvokes.length; index <= twin.commits.length; index++) this.commitInvokes[index] = invoke ?? -1;
  }

  /**
   * S4 power loss (faults/power-loss.ts): every process on the host stops at once. The database returns
   * to what the disk kept, the scheduler is down for downMs, and every worker incarnation dies and comes
   * back when the power does. The note names the commits the cut rolled back and the calls that made them.
   */
  private powerLoss(keep: 'none' | 'prefix', downMs: number): void {
    const twin = this.twin;
    if (twin === undefined || this.down) return;
    const report = twin.powerLoss(keep === 'prefix' ? (this.keepRandom ??= this.random.fork('power-loss-keep')) : 0);
    this.down = true;
    this.store = twin.store;
    const cursor = this.cursor();
    const lost = report.lost.map((commit) => ({ commit: commit.index, operation: commit.operation, synchronous: commit.synchronous, invoke: this.commitInvokes[commit.index] ?? -1 }));
    this.history.note('power-loss', 'host', { downMs, keep, synced: report.synced, kept: report.kept, cursor, lost });
    for (const worker of this.workers) this.kill(worker, 'power-loss', downMs, false);
    this.loop.after(downMs, () => this.reopen());
  }

  /**
   * The event cursor now: the newest event id committed (each connection reads it when its transaction
   * commits, sim/store/fleet.ts). Every store here knows it without a query: the world's store is the
   * database's only writer, and tracks the newest event id it committed (read once when it opens).
   */
  private readonly cursor = (): number => this.store.committedEventCursor();

  /** Closes the world's database: every queue on it stays, and meets a scheduler that is down until it reopens. */
  private async closeQueue(): Promise<void> {
    await this.store.close();
    // A restart in memory keeps what was committed as the database's image, as a file would keep it.
    if (this.restartInMemory && this.handle !== undefined && this.handle.open) this.image = this.handle.serialize();
    this.handle?.close();
    this.handle = undefined;
  }

  private makeWorker(index: number): SimWorker {
    if (this.agent !== undefined) return this.makeAgentWorker(index, this.agent, this.twins as ExternalTwins);
    const { scenario, loop, history } = this;
    const latency = this.random.fork(`latency-w${index}`);
    const toolRandom = this.random.fork(`tools-w${index}`);
    return new SimWorker(index, {
      loop,
      history,
      ...scenario.workers,
      makeModel: (incarnation) => {
        this.incarnations.set(incarnation.id, incarnation);
        const model = new ScriptedModel(loop.waiter, latency, scenario.model.latencyMs);
        return {
          decide: async (request) => {
            // R6: a poison task takes its worker down every time it is run, in every phase.
            if (scriptOf(request.input).poison === true) {
              this.kill(this.workers[index], 'poison', 2_000, true);
              return new Promise(() => {});
            }
            return model.decide(request);
          },
        };
      },
      makeTools: (incarnation) =>
        simulatedTools({
          waiter: loop.waiter,
          random: toolRandom,
          latencyMs: scenario.tools.latencyMs,
          ...(scenario.tools.errorClasses === undefined ? {} : { errorClasses: scenario.tools.errorClasses }),
          provider: this.provider,
          actor: () => incarnation.id,
          now: () => loop.now(),
          faults: {
            rates: () => this.faults.rates(),
            afterEffect: () => this.faults.atPoint('after_effect', incarnation, true),
          },
        }),
      ...this.workerProcess(),
    });
  }

  /**
   * T2: a worker slot that runs the team's agent: each incarnation builds the module's model and tools
   * (actors/agent-world.ts) on the virtual clock, a stream of its own and twins of its externals; the
   * rest (its queue, kill points, outcomes, supervisor) is the built-in worker's.
   */
  private makeAgentWorker(index: number, agent: SimAgent, twins: ExternalTwins): SimWorker {
    const { scenario, loop, history } = this;
    const parts = new Map<string, AgentParts>();
    const latency = this.random.fork(`latency-w${index}`);
    const twinRandom = this.random.fork(`twins-w${index}`);
    const partsOf = (incarnation: Incarnation): AgentParts => {
      let made = parts.get(incarnation.id);
      if (made === undefined) {
        made = agent.runtime.agentWorkerParts({
          agent,
          twins,
          incarnation,
          loop,
          history,
          scenario,
          latency,
          twinRandom,
          random: this.random.fork('agent').fork(incarnation.id),
          rates: () => this.faults.rates(),
          afterEffect: () => this.faults.atPoint('after_effect', incarnation, true),
          poisoned: (request) => this.poisonedTasks.has(request.taskId),
          poison: () => this.kill(this.workers[index], 'poison', 2_000, true),
          threw: (taskId, where, error) => {
            const key = `${incarnation.id}:${taskId}`;
            this.teamThrows.set(key, [...(this.teamThrows.get(key) ?? []), { where, error: agent.runtime.crashMessage(error) }]);
          },
        });
        parts.set(incarnation.id, made);
      }
      return made;
    };
    return new SimWorker(index, {
      loop,
      history,
      ...scenario.workers,
      makeModel: (incarnation) => {
        this.incarnations.set(incarnation.id, incarnation);
        return partsOf(incarnation).model;
      },
      makeTools: (incarnation) => [...partsOf(incarnation).tools],
      ...this.workerProcess(),
    });
  }

  /** What every worker slot's incarnations share, built-in or agent: their queue, kill points, outcomes and retry streams. */
  private workerProcess(): Omit<SimWorkerEnvironment, 'loop' | 'history' | 'slots' | 'idleWaitMs' | 'maxSteps' | 'toolTimeoutMs' | 'makeModel' | 'makeTools'> {
    const { loop } = this;
    return {
      queueHooks: (incarnation) => ({
        unavailable: () => this.down,
        after: (op, args, result) => this.faults.afterQueueCall(incarnation, op, args, result),
      }),
      connect: (incarnation) =>
        this.connect({
          id: incarnation.id,
          alive: () => incarnation.alive,
          waiter: incarnation.waiter(loop.waiter),
          boundary: (operation, taskId) => this.faults.atBoundary(incarnation, operation, taskId),
        }),
      // S4 points before a model or tool call: true means the process died there (faults/kill-at.ts).
      killBefore: (point, incarnation) => this.faults.atPoint(point, incarnation, true),
      onOutcome: (incarnation, outcome) => {
        this.outcomes.push({ incarnation: incarnation.id, outcome });
        // A run that met an error it did not expect is a bug of the core or of the world; the worker
        // survives it (src/worker/worker.ts), and the world ends the run as a harness crash (S9 exit 3).
        if (outcome.kind === 'crashed') this.crashed(incarnation, outcome);
        const stopped = outcome.kind === 'lost_lease' || outcome.kind === 'abandoned';
        if (stopped && incarnation.state === 'alive') this.supervisor.reportStopped(outcome.taskId, outcome.generation, incarnation.id);
      },
      onCrash: (error) => this.fail(error),
      randomFor: (incarnation) => this.random.fork('worker-retries').fork(incarnation.id),
    };
  }

  /**
   * A run ended `crashed`: an error it did not expect reached the worker, which logged it and left the
   * task's lease to lapse (src/worker/worker.ts). When the team's own code threw it (T2: a tool or the
   * model threw something other than a ToolFailure), that is what production does with it too: the
   * history notes it, and the run goes on, the task taken over once its lease lapses. Anything else is
   * a bug of the core or of the world, and ends the run as a harness crash (S9 exit 3).
   */
  private crashed(incarnation: Incarnation, outcome: Extract<RunOutcome, { kind: 'crashed' }>): void {
    const thrown = this.teamThrows.get(`${incarnation.id}:${outcome.taskId}`)?.find((entry) => entry.error === outcome.error);
    if (thrown === undefined) {
      this.fail(new Error(`run of task ${outcome.taskId} (generation ${outcome.generation}) on ${incarnation.id} crashed: ${outcome.error}`));
      return;
    }
    this.history.note('team-code-threw', incarnation.id, { where: thrown.where, error: outcome.error }, { taskId: outcome.taskId, generation: outcome.generation });
  }

  /**
   * `atNextAwait`: the kill was decided inside a synchronous burst of the worker (right after a
   * checkpoint or the terminal write committed). The process finishes that burst and dies before the
   * loop's next event, parked at its awaits, as SIGKILL between two statements would leave it.
   */
  private kill(worker: SimWorker | undefined, reason: string, reviveAfterMs: number, atNextAwait: boolean, label?: string): void {
    if (atNextAwait) {
      this.loop.after(0, () => this.kill(worker, reason, reviveAfterMs, false, label));
      return;
    }
    if (worker?.kill(reason, label) === undefined) return;
    this.loop.after(reviveAfterMs, () => this.revive(worker));
  }

  private revive(worker: SimWorker): void {
    if (worker.current?.state !== 'dead') return;
    this.history.note('revive', `w${worker.index}`);
    worker.start();
  }

  /** R8 (faults/drain.ts): the worker's incarnation drains and exits; a new one starts reviveAfterMs after it exited. */
  private drain(index: number, drainMs: number, reviveAfterMs: number, label?: string): void {
    const worker = this.workers[index];
    worker?.drain(drainMs, () => this.loop.after(reviveAfterMs, () => this.revive(worker)), label);
  }

  private pause(index: number, durationMs: number, label?: string, at?: string): void {
    const worker = this.workers[index];
    if (worker?.current?.state !== 'alive') return;
    worker.pause(label, at);
    this.loop.after(durationMs, () => worker.resume());
  }

  private reopen(): void {
    if (!this.down) return;
    this.openStore();
    this.down = false;
    this.history.note('reopen', 'scheduler');
  }

  private fail(error: unknown): void {
    if (this.crash === undefined) this.crash = error;
    this.loop.stop();
  }

  private scheduleArrivals(startMs: number): void {
    for (const arrival of this.arrivals) {
      this.loop.schedule(startMs + arrival.atMs, () => this.enqueue(arrival, startMs));
    }
  }

  private async enqueue(arrival: Arrival, startMs: number, attempt = 0): Promise<void> {
    const request = arrival.deadlineMs === undefined ? arrival.request : { ...arrival.request, deadline: startMs + arrival.deadlineMs };
    const invoke = this.history.invoke('client', 'enqueue', { data: { tenant: request.tenant, topic: request.topic, version: request.version } });
    if (this.down) {
      // The client retries an enqueue the scheduler could not take; nothing is lost (I11).
      this.history.fail(invoke, 'unavailable');
      this.loop.after(500 * (attempt + 1), () => this.enqueue(arrival, startMs, attempt + 1));
      return;
    }
    let answer: { result: EnqueueResult; ev: number };
    try {
      answer = await recordedCall(this.client.connection, invoke, () => this.client.queue.enqueue(request));
    } catch (error) {
      if (!this.busyFailed(invoke, error)) throw error;
      this.loop.after(500 * (attempt + 1), () => this.enqueue(arrival, startMs, attempt + 1));
      return;
    }
    const { result, ev } = answer;
    this.enqueued.push({ arrival, result });
    if (result.ok && request.deadline !== undefined) this.deadlines.set(result.taskId, request.deadline);
    if (result.ok && this.agent?.runtime.poisoned(this.poisoned, request) === true) this.poisonedTasks.add(result.taskId);
    if (result.ok) this.history.ok(invoke, { taskId: result.taskId, data: { outcome: result.status, ev } });
    else this.history.fail(invoke, result.error, { data: { ev } });
    if (result.ok) await this.readAsTenant(request.tenant);
    if (result.ok && arrival.cancelAtMs !== undefined) {
      const taskId = result.taskId;
      this.loop.schedule(Math.max(this.loop.now(), startMs + arrival.cancelAtMs), () => this.cancel(taskId));
    }
  }

  /**
   * The client swarm's operator (workloads/client-swarm.ts): at each of its times it reads the
   * uncertain tasks and, with its probability, cancels one of them (Q13), from its own stream.
   */
  private scheduleOperator(startMs: number): void {
    const swarm = this.scenario.workload.clientSwarm;
    if (swarm === undefined) return;
    const random = this.random.fork('workload').fork('client-swarm').fork('operator');
    for (const atMs of operatorTimes(swarm)) {
      this.loop.schedule(startMs + atMs, async () => {
        if (this.down) return;
        let uncertain: Awaited<ReturnType<WorkQueue['tasksInState']>>;
        try {
          uncertain = await this.operator.queue.tasksInState('uncertain');
        } catch (error) {
          // Its look waited at BEGIN (sim/store/fleet.ts) and met a scheduler gone down, or a busy database: no cancel this time.
          if (error instanceof RetryableStoreError) return;
          throw error;
        }
        if (uncertain.length > 0 && random.chance(swarm.operatorCancelProbability)) await this.cancel(random.pick(uncertain).id, 'operator');
      });
    }
  }

  /**
   * A5, I22: the monitor (the scenario's `monitor` section) reads queue.signals() every everyMs of the
   * safety phase on its own connection, recorded as its `signals` call with the answer and the event
   * cursor the read ran at, so I22 can recompute every signal from the log at that instant. While the
   * scheduler is down, or the database is busy, a read is skipped (recorded failed).
   */
  private scheduleMonitor(startMs: number): void {
    const monitor = this.scenario.monitor;
    if (monitor === undefined) return;
    const { queue, connection } = this.connect(this.process('monitor'), false);
    for (let atMs = monitor.offsetMs; atMs < this.scenario.phases.safetyMs; atMs += monitor.everyMs) {
      this.loop.schedule(startMs + atMs, async () => {
        const invoke = this.history.invoke('monitor', 'signals');
        if (this.down) {
          this.history.fail(invoke, 'unavailable');
          return;
        }
        try {
          const { result, ev } = await recordedCall(connection, invoke, () => queue.signals());
          this.history.ok(invoke, { data: { signals: result as unknown as JsonValue, ev } });
        } catch (error) {
          if (!this.busyFailed(invoke, error)) throw error;
        }
      });
    }
  }

  /**
   * A client's call met a database that stayed busy past the store's retries (a BusyError, Q18: a
   * competing writer held the lock, faults/busy.ts): recorded as the call's failure, and true, so the
   * client tries again. Anything else is not for the client to handle.
   */
  private busyFailed(invoke: number, error: unknown): boolean {
    if (!(error instanceof RetryableStoreError)) return false;
    this.history.fail(invoke, error.code);
    return true;
  }

  /** The client (or the operator) cancels a task (Q13); while the scheduler is down, or the database stays busy, it tries again. */
  private async cancel(taskId: number, actor = 'client'): Promise<void> {
    const invoke = this.history.invoke(actor, 'cancel', { taskId });
    if (this.down) {
      this.history.fail(invoke, 'unavailable');
      this.loop.after(1_000, () => this.cancel(taskId, actor));
      return;
    }
    let answer: { result: Awaited<ReturnType<WorkQueue['cancel']>>; ev: number };
    try {
      const { queue, connection } = actor === 'operator' ? this.operator : this.client;
      answer = await recordedCall(connection, invoke, () => queue.cancel(taskId));
    } catch (error) {
      if (!this.busyFailed(invoke, error)) throw error;
      this.loop.after(1_000, () => this.cancel(taskId, actor));
      return;
    }
    const { result, ev } = answer;
    if (result.ok) this.history.ok(invoke, { data: { outcome: result.state, ev } });
    else this.history.fail(invoke, result.error, { data: { ev } });
  }

  /**
   * A2: the operator pauses or resumes a tenant (faults/tenant-pause.ts), recorded as its `pauseTenant`
   * (args [tenant, reason]) or `resumeTenant` (args [tenant]) call; while the scheduler is down, or the
   * database stays busy, it tries again.
   */
  private async tenantAction(op: 'pauseTenant' | 'resumeTenant', args: [string, string] | [string], retry = false): Promise<void> {
    const [tenant] = args;
    // A pause still being retried when its tenant was resumed since (by a later resume, or as the liveness phase began) is dropped.
    if (retry && op === 'pauseTenant' && !this.pausedTenants.has(tenant)) return;
    if (op === 'pauseTenant') this.pausedTenants.add(tenant);
    else this.pausedTenants.delete(tenant);
    const invoke = this.history.invoke('operator', op, { data: { tenant, args } });
    if (this.down) {
      this.history.fail(invoke, 'unavailable', { data: { tenant, args } });
      this.loop.after(1_000, () => this.tenantAction(op, args, true));
      return;
    }
    let answer: { result: { ok: boolean; changed?: boolean }; ev: number };
    try {
      const { queue, connection } = this.operator;
      answer = await recordedCall(connection, invoke, () => (op === 'pauseTenant' ? queue.pauseTenant(tenant, args[1]!) : queue.resumeTenant(tenant)));
    } catch (error) {
      if (!this.busyFailed(invoke, error)) throw error;
      this.loop.after(1_000, () => this.tenantAction(op, args, true));
      return;
    }
    const { result, ev } = answer;
    if (result.ok) this.history.ok(invoke, { data: { tenant, args, ev, changed: result.changed === true } });
    else this.history.fail(invoke, 'refused', { data: { tenant, args, ev } });
  }

  /**
   * The tenant's own client reads its task list (Q19) after its 1st, 2nd, 4th, 8th, ... accepted
   * enqueue: I13 checks that a tenant read sees only that tenant's rows. The history keeps which
   * tenants the rows named, not the rows.
   */
  private async readAsTenant(tenant: string): Promise<void> {
    const count = (this.enqueuesByTenant.get(tenant) ?? 0) + 1;
    this.enqueuesByTenant.set(tenant, count);
    if ((count & (count - 1)) !== 0) return;
    const invoke = this.history.invoke('client', 'list-tenant', { data: { tenant } });
    let rows: Awaited<ReturnType<WorkQueue['listForTenant']>>;
    try {
      rows = await this.client.queue.listForTenant(tenant);
    } catch (error) {
      if (!this.busyFailed(invoke, error)) throw error;
      return;
    }
    const tenants = [...new Set(rows.map((row) => row.tenant))].sort();
    this.history.ok(invoke, { data: { tenant, rows: rows.length, tenants } });
  }

  private async isDrained(): Promise<boolean> {
    if (this.down || this.enqueued.length < this.arrivals.length) return false;
    return (await this.queue.liveCount()) === 0;
  }

  /** Safety phase with faults, then the liveness phase (S5): faults stop, everyone recovers, it must drain. */
  async run(): Promise<WorldResult> {
    const { loop, scenario } = this;
    const startMs = loop.now();
    try {
      // A fresh database for this world on the thread's PGlite, migrated as of now (SQLite's migrates at open: the same instant).
      if (this.pglite !== undefined) this.releasePglite = await freshPglite(this.pglite, loop.clock.now());
      this.scheduleArrivals(startMs);
      this.scheduleOperator(startMs);
      this.scheduleMonitor(startMs);
      this.faults.schedule(startMs);
      this.supervisor.start((error) => this.fail(error));
      for (const worker of this.workers) worker.start();
      // The safety phase ends at its bound, or earlier once everything that arrived is terminal:
      // faults left in the plan would only hit idle workers.
      let drainedEarly = false;
      void (async () => {
        while (!drainedEarly && this.crash === undefined && loop.now() < startMs + scenario.phases.safetyMs) {
          await loop.sleep(1_000);
          if ((await this.isDrained())) drainedEarly = true;
        }
        if (drainedEarly) loop.stop();
      })();
      this.loopEvents += (await loop.run({ untilMs: startMs + scenario.phases.safetyMs })).events;
      drainedEarly = true;
      const safetyEndMs = loop.now();
      if (this.crash === undefined) this.beginLiveness();
      let drained = false;
      const watch = async () => {
        while (!drained && this.crash === undefined) {
          await loop.sleep(1_000);
          drained = await this.isDrained();
        }
        loop.stop();
      };
      if (this.crash === undefined) {
        void watch();
        this.loopEvents += (await loop.run({ untilMs: safetyEndMs + scenario.phases.livenessMs })).events;
      }
      return this.finish(startMs, safetyEndMs, drained);
    } catch (error) {
      this.crash ??= error;
      return this.finish(startMs, loop.now(), false);
    }
  }

  private beginLiveness(): void {
    this.history.note('phase', 'sim', { phase: 'liveness' });
    // Faults stop, and a scheduler a restart left down comes back (faults/restart.ts).
    this.faults.stop();
    // A2: the operator resumes every tenant it left paused, so their work drains (faults/tenant-pause.ts).
    for (const tenant of [...this.pausedTenants].sort()) void this.tenantAction('resumeTenant', [tenant]).catch((error: unknown) => this.fail(error));
    for (const worker of this.workers) {
      if (worker.current?.state === 'paused') worker.resume();
      else if (worker.current?.state === 'dead') this.revive(worker);
    }
  }

  private async finish(startMs: number, safetyEndMs: number, drained: boolean): Promise<WorldResult> {
    this.faults.end();
    for (const worker of this.workers) worker.stop();
    this.supervisor.stop();
    if (this.down) this.reopen();
    const final = await this.queue.snapshot();
    const checkpoints: WorldResult['checkpoints'] = new Map();
    for (const task of final.tasks) checkpoints.set(task.id, await this.queue.lastCheckpoint(task.id));
    const result: WorldResult = {
      scenario: this.scenario,
      seed: this.random.seed,
      plan: this.plan,
      arrivals: this.arrivals,
      enqueued: this.enqueued,
      history: this.history,
      provider: this.provider,
      final,
      events: await this.queue.allEvents(),
      checkpoints,
      holds: await this.queue.holds(),
      deadLetters: await this.queue.deadLetters(),
      effects: await this.queue.effects(),
      creditLedger: await this.queue.creditLedger(),
      schemaMigrations: await this.queue.schemaMigrations(),
      budgetLevelsAt: this.loop.clock.now(),
      budgetLevels: await this.queue.budgetLevels(),
      reservations: await this.queue.reservations(),
      admissionDecisions: await this.queue.admissionDecisions(),
      pausedTenants: await this.queue.pausedTenants(),
      tenantServices: await this.queue.tenantServices(),
      incidents: await this.queue.incidentCandidates({ from: 0, to: Number.MAX_SAFE_INTEGER, minGroupSize: 1 }),
      outcomes: this.outcomes,
      drained,
      loopEvents: this.loopEvents,
      startMs,
      safetyEndMs,
      endMs: this.loop.now(),
    };
    if (this.crash !== undefined) result.crash = this.crash;
    if (this.agent !== undefined && this.twins !== undefined) result.agent = { module: this.agent, twins: this.twins };
    const durability = this.twin?.store.durability ?? (this.store instanceof SqliteStore ? this.store.durability : undefined);
    if (durability !== undefined) result.durability = durability;
    if (this.pglite !== undefined) {
      result.store = 'pglite';
      result.notApplicable = this.notApplicable;
    }
    // S6/I14: the trace hash covers the history; this note makes it cover what the run left in the
    // database too, so nondeterminism that reaches only stored data (an event time, a result) shows.
    const stored = { tasks: final.tasks, events: result.events, checkpoints: [...checkpoints].map(([id, checkpoint]) => [id, checkpoint ?? null]), holds: result.holds, deadLetters: result.deadLetters, effects: result.effects };
    this.history.note('final-database', 'sim', { sha256: sha256Hex(canonicalJson(stored)) });
    await this.closeQueue();
    this.releasePglite?.();
    this.twin?.close();
    if (this.directory !== undefined) rmSync(this.directory, { recursive: true, force: true });
    return result;
  }
}
