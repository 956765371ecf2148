import type { EnqueueResult, WorkQueue } from '../src/queue/types.ts';
import { canonicalJson, sha256Hex } from '../src/canonical-json.ts';
import { resolveConfig } from '../src/queue/config.ts';
import type { Durability } from '../src/store/durability.ts';
import type { PgliteLike as PGlite } from '../src/store/pg-store.ts';
import type { Model, RunOutcome, Tool } from '../src/worker/types.ts';
import type { Incarnation } from './actors/incarnation.ts';
import type { ActorQueue } from './actors/gated-queue.ts';
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
import type { FleetActor } from './store/fleet.ts';
import { applicablePlan, inapplicableFaults, type SimStore } from './store/pglite.ts';
import { Clients } from './world/clients.ts';
import { DatabaseHost } from './world/database-host.ts';
import { runPhases } from './world/phases.ts';
import { History } from './history.ts';
import { SeededRandom, type Seed } from './random.ts';
import type { ScenarioSpec } from './scenario.ts';
import { drawArrivals, type Arrival } from './workload.ts';

export { databaseNeeds, RESTART_ON_FILE, sqliteDatabaseFor } from './world/database-host.ts';

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

/** What a worker slot's incarnations run: a model and tools, made for each incarnation. */
interface SlotAgent {
  model(incarnation: Incarnation): Model;
  tools(incarnation: Incarnation): Tool[];
}

/** Where a world keeps its database: SQLite (the default), or the PostgreSQL store on the thread's PGlite database. */
export type WorldStore = { kind: 'sqlite' } | { kind: 'pglite'; db: PGlite };

/**
 * The world (S3): one database (SQLite, or with store 'pglite' the PostgreSQL store's own SQL on the
 * thread's PGlite, sim/store/pglite.ts), the core's WorkQueue on the virtual clock, N simulated workers
 * running the production worker runtime, a scripted model, simulated tools, an external provider and
 * a supervisor. Built from a scenario and one root seed; streams are forked per purpose (S2).
 */
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
  /** Q14: each enqueued task's deadline, for the expire-at fault (faults/expire-at.ts). */
  private readonly deadlines = new Map<number, number>();
  private readonly outcomes: WorldResult['outcomes'] = [];
  /** The database and every fault beneath it (world/database-host.ts). */
  private readonly host: DatabaseHost;
  /**
   * The scheduler's own queue: the world's look at the database (the end-of-run reads, the operator's
   * list), on a connection whose transactions never wait. Every actor has a queue of its own (connect).
   */
  private readonly queue: WorkQueue;
  private readonly own: ActorQueue;
  /** The client, the operator and the monitor (world/clients.ts). */
  private readonly clients: Clients;
  private loopEvents = 0;
  /** Worker slots whose process a scheduler restart took down: started again when the scheduler reopens. */
  private readonly restarting = new Set<SimWorker>();
  private crash: unknown;
  /** The PGlite database of a world on 'pglite'. */
  private readonly pglite: PGlite | undefined;
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
    this.host = new DatabaseHost({ scenario, plan: this.plan, random: this.random, loop: this.loop, history: this.history, ...(this.pglite === undefined ? {} : { pglite: this.pglite }) });
    if (this.pglite !== undefined) this.history.note('store', 'sim', { store: 'pglite', notApplicable: this.notApplicable });
    this.own = this.connect(this.process('scheduler'), false);
    this.queue = this.own.queue;
    this.clients = new Clients({
      loop: this.loop,
      history: this.history,
      scenario,
      random: this.random,
      down: () => this.down,
      connect: (id, interleaves) => this.connect(this.process(id), interleaves),
      accepted: (request, taskId) => {
        if (this.agent?.runtime.poisoned(this.poisoned, request) === true) this.poisonedTasks.add(taskId);
        if (request.deadline !== undefined) this.deadlines.set(taskId, request.deadline);
      },
    });
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
        return world.host.down;
      },
      onDisk: this.host.onDisk,
      databaseFile: this.host.databaseFile,
      ...(this.host.powerLossTwin ? { powerLoss: (keep: 'none' | 'prefix', downMs: number) => this.powerLoss(keep, downMs) } : {}),
      shutDown: (processes) => this.restartScheduler(processes === true),
      reopen: () => this.reopen(),
      connect: (id) => this.connect(this.process(id)),
      leaseMs: resolveConfig(this.scenario.queue).leaseMs,
      storage: this.host.storage,
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
      cancel: (taskId) => void this.clients.cancel(taskId, 'operator').catch((error: unknown) => this.fail(error)),
      pauseTenant: (tenant, reason) => void this.clients.tenantAction('pauseTenant', [tenant, reason]).catch((error: unknown) => this.fail(error)),
      resumeTenant: (tenant) => void this.clients.tenantAction('resumeTenant', [tenant]).catch((error: unknown) => this.fail(error)),
      scheduler,
    };
  }

  /**
   * A queue of its own for `actor` (a worker incarnation, the supervisor, the client, a fault's
   * sender), on a connection of its own to the world's database (sim/store/fleet.ts), with the core's
   * randomness forked for it: each process of a fleet opens its own queue. `interleaves` false: the
   * connection's transactions never wait (the scheduler's own look, read after the loop has stopped).
   */
  private connect(actor: FleetActor, interleaves = true): ActorQueue {
    return this.host.connect(actor, interleaves);
  }

  /** An actor that never dies or freezes (the scheduler's own look, the client, the operator, the supervisor, a fault's sender), waiting on the loop. */
  private process(id: string): FleetActor {
    return { id, alive: () => true, waiter: this.loop.waiter };
  }

  /**
   * S4 power loss (faults/power-loss.ts): every process on the host stops at once. The database returns
   * to what the disk kept, the scheduler is down for downMs, and every worker incarnation dies and comes
   * back when the power does. The note names the commits the cut rolled back and the calls that made them.
   */
  private powerLoss(keep: 'none' | 'prefix', downMs: number): void {
    if (!this.host.powerLoss(keep, downMs)) return;
    for (const worker of this.workers) this.kill(worker, 'power-loss', downMs, false);
    this.loop.after(downMs, () => this.reopen());
  }

  /**
   * A worker slot: the production worker runtime (actors/sim-worker.ts) whose incarnations share their
   * queue, kill points, outcomes and retry streams (workerProcess), and run the slot's agent: the
   * built-in scripted model and simulated tools, or (T2) the team's module.
   */
  private makeWorker(index: number): SimWorker {
    const { scenario, loop, history } = this;
    const agent = this.agent === undefined ? this.builtInAgent(index) : this.moduleAgent(index, this.agent, this.twins as ExternalTwins);
    return new SimWorker(index, {
      loop,
      history,
      ...scenario.workers,
      makeModel: (incarnation) => {
        this.incarnations.set(incarnation.id, incarnation);
        return agent.model(incarnation);
      },
      makeTools: (incarnation) => agent.tools(incarnation),
      ...this.workerProcess(),
    });
  }

  /** The built-in agent of a worker slot: a scripted model and simulated tools per incarnation, on the slot's latency and tool streams. */
  private builtInAgent(index: number): SlotAgent {
    const { scenario, loop } = this;
    const latency = this.random.fork(`latency-w${index}`);
    const toolRandom = this.random.fork(`tools-w${index}`);
    return {
      model: (incarnation) => {
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
      tools: (incarnation) =>
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
    };
  }

  /**
   * T2: the agent of a worker slot that runs the team's module: each incarnation builds the module's
   * model and tools (actors/agent-world.ts) on the virtual clock, a stream of its own and twins of its
   * externals.
   */
  private moduleAgent(index: number, agent: SimAgent, twins: ExternalTwins): SlotAgent {
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
    return { model: (incarnation) => partsOf(incarnation).model, tools: (incarnation) => [...partsOf(incarnation).tools] };
  }

  /** What every worker slot's incarnations share, built-in or agent: their queue, kill points, outcomes and retry streams. */
  private workerProcess(): Omit<SimWorkerEnvironment, 'loop' | 'history' | 'slots' | 'idleWaitMs' | 'maxSteps' | 'toolTimeoutMs' | 'makeModel' | 'makeTools'> {
    const { loop } = this;
    return {
      queueHooks: (incarnation) => ({
        after: (op, args, result) => this.faults.afterQueueCall(incarnation, op, args, result),
      }),
      connect: (incarnation) =>
        this.connect({
          id: incarnation.id,
          alive: () => incarnation.alive,
          waiter: incarnation.waiter(loop.waiter),
          boundary: (operation, taskId) => this.faults.atBoundary(incarnation, operation, taskId),
        }),
      // S4 points before a model or tool call: true means the process died there (faults/kill-at.ts),
      // `{ fails }` that the call fails at once (faults/error-at.ts).
      beforeCall: (point, incarnation, tenant) => this.faults.atPoint(point, incarnation, true, undefined, tenant),
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
    if (!this.host.reopen()) return;
    this.history.note('reopen', 'scheduler');
    // Issue 35 (5b): the processes a scheduler restart took down start again with it, each a new incarnation that opens its own queue.
    for (const worker of this.restarting) this.revive(worker);
    this.restarting.clear();
  }

  /**
   * S4 scheduler restart (faults/restart.ts): the database closes. With `processes` (issue 35, 5b) the
   * machine's scheduler restarts with its processes: every worker process dies with it (a SIGKILL: no
   * drain, no terminal write), and when the scheduler reopens each starts again as a new incarnation
   * that opens its queue afresh, so what a process does when it opens its queue runs at a restart too,
   * not only for a process that died on its own. The supervisor, the clients and the monitor are not
   * the scheduler's processes.
   */
  private async restartScheduler(processes: boolean): Promise<void> {
    if (processes) for (const worker of this.workers) if (worker.kill('scheduler-restart') !== undefined) this.restarting.add(worker);
    await this.host.shutDown();
  }

  /** True while the scheduler is down (a restart, a power loss): the database host says. */
  private get down(): boolean {
    return this.host.down;
  }

  /** Where the run's database lives (sqliteDatabaseFor): for reports and tests. */
  get database(): DatabaseHost['database'] {
    return this.host.database;
  }

  private fail(error: unknown): void {
    if (this.crash === undefined) this.crash = error;
    this.loop.stop();
  }

  private async isDrained(): Promise<boolean> {
    if (this.down || this.clients.enqueued.length < this.arrivals.length) return false;
    return (await this.queue.liveCount()) === 0;
  }

  /** Safety phase with faults, then the liveness phase (S5, world/phases.ts): faults stop, everyone recovers, it must drain. */
  async run(): Promise<WorldResult> {
    const { loop, scenario } = this;
    const startMs = loop.now();
    try {
      const { safetyEndMs, drained } = await runPhases(
        {
          loop,
          phases: scenario.phases,
          // A fresh database for this world on the thread's PGlite, migrated as of now (SQLite's migrates at open: the same instant).
          prepare: () => this.host.prepare(),
          start: () => {
            this.clients.scheduleArrivals(this.arrivals, startMs);
            this.clients.scheduleOperator(startMs);
            this.clients.scheduleMonitor(startMs);
            this.faults.schedule(startMs);
            this.supervisor.start((error) => this.fail(error));
            for (const worker of this.workers) worker.start();
          },
          isDrained: () => this.isDrained(),
          crashed: () => this.crash !== undefined,
          beginLiveness: () => this.beginLiveness(),
          ran: (events) => {
            this.loopEvents += events;
          },
        },
        startMs,
      );
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
    for (const tenant of this.clients.stillPaused()) void this.clients.tenantAction('resumeTenant', [tenant]).catch((error: unknown) => this.fail(error));
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
      enqueued: this.clients.enqueued,
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
    const durability = this.host.durability();
    if (durability !== undefined) result.durability = durability;
    if (this.pglite !== undefined) {
      result.store = 'pglite';
      result.notApplicable = this.notApplicable;
    }
    // S6/I14: the trace hash covers the history; this note makes it cover what the run left in the
    // database too, so nondeterminism that reaches only stored data (an event time, a result) shows.
    const stored = { tasks: final.tasks, events: result.events, checkpoints: [...checkpoints].map(([id, checkpoint]) => [id, checkpoint ?? null]), holds: result.holds, deadLetters: result.deadLetters, effects: result.effects };
    this.history.note('final-database', 'sim', { sha256: sha256Hex(canonicalJson(stored)) });
    await this.host.dispose();
    return result;
  }
}
