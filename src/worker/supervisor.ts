/**
 * The production supervisor (SPEC W3): it starts N worker processes (src/worker/worker-process.ts, each
 * running the production Worker over openWorkQueue with one agent module), restarts the ones that die,
 * and, because it saw them exit, tells the queue that their uncertain tasks have stopped (Q11). It also
 * runs the queue's periodic duties: lease expiry (Q10) and the reconciler (R5). SIGTERM or SIGINT to it
 * drains the fleet (R8). This is not sim/actors/supervisor.ts, the simulator's trusted layer.
 *
 * Why it may confirm: a worker id is `host:pid:incarnation`, unique to one child it forked. Node reports
 * a child's 'exit' only after the operating system has reaped it, so from then on no process of that
 * worker id can write anything; its uncertain tasks are safe to hand back (Q11), and only those. A child
 * that is alive but slow, or stopped (SIGSTOP, a debugger), produces no exit, so its tasks stay uncertain
 * until it resumes and loses its lease (R9) or an operator decides. A task of a dead child is usually
 * still `running` when the exit is seen (its lease has not run out): the supervisor keeps the dead ids
 * and confirms their tasks once lease expiry has made them uncertain.
 *
 * Time and timers go through the Clock and Waiter ports (S1): every wait is a Waiter sleep, cut into
 * short slices where a stop must not wait for it.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { hostname } from 'node:os';
import { extname } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { SystemClock } from '../adapters/clock.ts';
import { CryptoRandom } from '../adapters/random.ts';
import { TimerWaiter } from '../adapters/waiter.ts';
import type { Clock, Random, Waiter } from '../ports.ts';
import { ConfigError, LeaseholdError } from '../queue/errors.ts';
import type { QueueConfig, WorkQueue } from '../queue/types.ts';
import { openWorkQueue } from '../work-queue.ts';
import { isTypeScriptModule } from './agent.ts';
import type { RunOutcome } from './types.ts';
import { EXIT_AGENT_MODULE, type ChildMessage, type DrainMessage, type StartMessage, type WorkerProcessOptions } from './worker-protocol.ts';

export interface SupervisorOptions {
  /** A SQLite file path or a postgres:// URL: every process opens it itself, so a handle will not do. */
  db: string;
  /** PostgreSQL only: the schema the queue lives in. */
  schema?: string;
  /** The agent module (T2): `.mjs`/`.js`, or `.ts`/`.mts` when tsx is installed. */
  agent: string;
  /** How many worker processes to keep running. */
  processes: number;
  /** Runs each process holds at once (the Worker's slots); default 1. */
  slots?: number;
  /** R8: how long each process lets its runs finish on shutdown before handing them back; default 30 s. */
  drainMs?: number;
  /** How long after drainMs the supervisor waits before it SIGKILLs what is still running; default 5 s. */
  shutdownGraceMs?: number;
  /** How often lease expiry, the reconciler and the confirmations run; default 1 s. */
  scanMs?: number;
  /**
   * Restarts after an exit wait `initialMs * 2^(n-1)`, at most `maxMs`, where n counts the exits in a
   * row of that process slot that came within `stableMs` of their start (a slot that ran longer starts
   * again at initialMs). Defaults 250 ms, 30 s, 10 s.
   */
  restart?: { initialMs?: number; maxMs?: number; stableMs?: number };
  /** After this many failed loads of the agent module in a row, with none loading in between, the supervisor stops the fleet; default 3. */
  maxLoadFailures?: number;
  /** Queue configuration, the same in the supervisor and every process (leaseMs, heartbeatMs, quotas...). */
  config?: Partial<QueueConfig>;
  /** The rest of each process's Worker options. */
  worker?: Omit<WorkerProcessOptions, 'slots'>;
  clock?: Clock;
  waiter?: Waiter;
  random?: Random;
  /** One plain-text line per event (start, ready, exit, restart, confirmation, a process's own log lines). Default: standard error. */
  log?: (line: string) => void;
  /** The same events as data, for tests and metrics. */
  onEvent?: (event: SupervisorEvent) => void;
  /** Node flags for the processes. Default: none, plus `--import tsx` when the entry script or the agent module is TypeScript. */
  execArgv?: readonly string[];
  /** The processes' environment; default this process's. */
  env?: Record<string, string | undefined>;
  /** The host part of worker ids; default os.hostname(). */
  host?: string;
}

export type SupervisorEvent =
  | { type: 'started'; workerId: string; pid: number; slot: number; at: number }
  | { type: 'ready'; workerId: string; pid: number; at: number }
  | { type: 'exited'; workerId: string; pid: number; code: number | null; signal: string | null; planned: boolean; at: number }
  | { type: 'restart_scheduled'; slot: number; delayMs: number; exitsInARow: number; at: number }
  | { type: 'load_failed'; workerId: string; message: string; inARow: number; at: number }
  /**
   * Q11: a confirmation the supervisor made. `exitedAt` is when it saw that worker's process exit;
   * `pidAlive` is what `kill(pid, 0)` said right before (true only if the OS reused the pid for another process).
   */
  | {
      type: 'confirmed';
      taskId: number;
      generation: number;
      workerId: string;
      pid: number;
      exitedAt: number;
      pidAlive: boolean;
      result: { ok: true; next: string } | { ok: false; error: string };
      at: number;
    }
  | { type: 'outcome'; workerId: string; outcome: RunOutcome }
  | { type: 'scan_failed'; message: string; at: number }
  | { type: 'killed'; workerId: string; pid: number; at: number }
  | { type: 'gave_up'; message: string; at: number }
  | { type: 'stopped'; at: number; result: SupervisorResult };

export interface SupervisorResult {
  /** 'stopped': stop() or a signal drained it; 'agent_module_failed': the module never loaded (maxLoadFailures). */
  reason: 'stopped' | 'agent_module_failed';
  message?: string;
  starts: number;
  restarts: number;
  confirmations: number;
  /** Processes SIGKILLed at the shutdown deadline. */
  killed: number;
  /** Tasks of dead processes still running or uncertain when the supervisor stopped (an operator must look at them). */
  leftUncertain: number[];
}

/** A live or exited process of the fleet. */
export interface SupervisedProcess {
  workerId: string;
  pid: number;
  slot: number;
  startedAt: number;
  ready: boolean;
}

interface Child extends SupervisedProcess {
  process: ChildProcess;
  exit?: { code: number | null; signal: string | null; at: number };
  loadFailure?: string;
}

interface Death {
  pid: number;
  code: number | null;
  signal: string | null;
  at: number;
}

/** The longest a wait that a stop must be able to cut short lasts before looking again. */
const SLICE_MS = 100;

export class Supervisor {
  private readonly clock: Clock;
  private readonly waiter: Waiter;
  private readonly log: (line: string) => void;
  private readonly host: string;
  private readonly entry: string;
  private readonly execArgv: string[];
  private readonly drainMs: number;
  private readonly shutdownGraceMs: number;
  private readonly scanMs: number;
  private readonly restart: { initialMs: number; maxMs: number; stableMs: number };
  private readonly maxLoadFailures: number;
  private queue: WorkQueue | undefined;
  private readonly live = new Map<string, Child>();
  /** Worker ids whose process the supervisor saw exit, kept until none of their tasks is running or uncertain. */
  private readonly dead = new Map<string, Death>();
  private readonly exitsInARow = new Map<number, number>();
  private loadFailuresInARow = 0;
  private incarnation = 0;
  private stopping = false;
  private started = false;
  private sweeping: Promise<void> = Promise.resolve();
  private scanLoop: Promise<void> = Promise.resolve();
  private stopped: Promise<SupervisorResult> | undefined;
  private resolveDone!: (result: SupervisorResult) => void;
  private readonly counts = { starts: 0, restarts: 0, confirmations: 0, killed: 0 };
  private failure: { reason: 'agent_module_failed'; message: string } | undefined;
  /** Resolves once the fleet has stopped, after stop(), a signal, or a module that never loads. */
  readonly done: Promise<SupervisorResult>;

  constructor(private readonly options: SupervisorOptions) {
    if (options === null || typeof options !== 'object') throw new ConfigError('options', 'expected { db, agent, processes, ... }');
    if (typeof options.db !== 'string' || options.db === '') throw new ConfigError('db', 'expected a SQLite file path or a postgres:// URL (each process opens it itself)');
    if (options.db === ':memory:') throw new ConfigError('db', "':memory:' is private to one process; worker processes need a file or a PostgreSQL URL");
    if (typeof options.agent !== 'string' || options.agent === '') throw new ConfigError('agent', 'expected the path of an agent module');
    positive('processes', options.processes);
    if (options.slots !== undefined) positive('slots', options.slots);
    this.clock = options.clock ?? new SystemClock();
    this.waiter = options.waiter ?? new TimerWaiter();
    this.log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
    this.host = options.host ?? hostname();
    this.drainMs = nonNegative('drainMs', options.drainMs ?? 30_000);
    this.shutdownGraceMs = nonNegative('shutdownGraceMs', options.shutdownGraceMs ?? 5_000);
    this.scanMs = positive('scanMs', options.scanMs ?? 1_000);
    this.restart = {
      initialMs: positive('restart.initialMs', options.restart?.initialMs ?? 250),
      maxMs: positive('restart.maxMs', options.restart?.maxMs ?? 30_000),
      stableMs: positive('restart.stableMs', options.restart?.stableMs ?? 10_000),
    };
    this.maxLoadFailures = positive('maxLoadFailures', options.maxLoadFailures ?? 3);
    // The entry script sits beside this file: worker-process.ts in the repository (run under tsx), .js in dist/.
    const self = fileURLToPath(import.meta.url);
    this.entry = fileURLToPath(new URL(`./worker-process${extname(self)}`, import.meta.url));
    this.execArgv = options.execArgv !== undefined ? [...options.execArgv] : this.defaultExecArgv();
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
  }

  /** The processes running now. */
  processes(): SupervisedProcess[] {
    return [...this.live.values()].filter((child) => child.exit === undefined).map(({ workerId, pid, slot, startedAt, ready }) => ({ workerId, pid, slot, startedAt, ready }));
  }

  /** Opens the supervisor's own connection to the queue, starts the processes and the periodic scan. */
  async start(): Promise<void> {
    if (this.started) throw new LeaseholdError('already_started', 'this Supervisor was started already');
    this.started = true;
    this.queue = openWorkQueue({
      db: this.options.db,
      clock: this.clock,
      random: this.options.random ?? new CryptoRandom(),
      config: this.options.config ?? {},
      ...(this.options.schema === undefined ? {} : { schema: this.options.schema }),
    });
    // The queue's own checks (leaseMs >= 3 * heartbeatMs, ...) ran in openWorkQueue, before any process starts.
    this.say(`supervisor: ${this.options.processes} process(es) of agent ${this.options.agent} on ${redact(this.options.db)}, ${this.options.slots ?? 1} slot(s) each`);
    for (let slot = 0; slot < this.options.processes; slot++) this.spawn(slot);
    this.scanLoop = this.runScanLoop();
  }

  /**
   * Installs SIGTERM and SIGINT handlers that drain the fleet (R8); a second signal does not cut the
   * drain short (the hard deadline does). Returns a function that removes them.
   */
  handleSignals(): () => void {
    const onSignal = (signal: NodeJS.Signals) => {
      this.say(`supervisor: ${signal}: draining`);
      void this.stop();
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    return () => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    };
  }

  /**
   * R8: stops the fleet. Each process gets SIGTERM and drains for up to drainMs; whatever still runs
   * shutdownGraceMs later is SIGKILLed. Then the supervisor confirms the tasks its dead processes left
   * (waiting up to leaseMs for their leases to lapse into uncertain), closes its queue and resolves.
   */
  stop(): Promise<SupervisorResult> {
    this.stopped ??= this.shutdown();
    return this.stopped;
  }

  private async shutdown(): Promise<SupervisorResult> {
    this.stopping = true;
    // R8: SIGTERM to a process that is running its Worker; one still starting may not have its handler
    // yet (SIGTERM would kill it outright), so every process also gets the same request as a message.
    for (const child of this.running()) {
      if (child.ready) child.process.kill('SIGTERM');
      if (child.process.connected) child.process.send({ type: 'drain' } satisfies DrainMessage, () => {});
    }
    const deadline = this.clock.now() + this.drainMs + this.shutdownGraceMs;
    await this.sleepWhile(deadline - this.clock.now(), () => this.running().length > 0);
    for (const child of this.running()) {
      this.say(`supervisor: ${child.workerId} (pid ${child.pid}) still running at the shutdown deadline: SIGKILL`);
      this.emit({ type: 'killed', workerId: child.workerId, pid: child.pid, at: this.clock.now() });
      this.counts.killed++;
      child.process.kill('SIGKILL');
    }
    // SIGKILL cannot be caught; the exit follows as soon as the kernel has torn the process down.
    while (this.running().length > 0) await this.waiter.sleep(SLICE_MS);
    await this.scanLoop;
    const queue = this.queue;
    let leftUncertain: number[] = [];
    if (queue !== undefined) {
      // A process that was killed left its runs `running` until their leases lapse: wait for that (at
      // most leaseMs and two scans) so their confirmations are made now, not by whoever comes next.
      const settleBy = this.clock.now() + queue.config.leaseMs + 2 * this.scanMs;
      for (;;) {
        await this.sweep();
        leftUncertain = await this.tasksOfDead().catch(() => leftUncertain);
        if (leftUncertain.length === 0 || this.clock.now() >= settleBy) break;
        await this.waiter.sleep(Math.min(this.scanMs, SLICE_MS * 5));
      }
      if (leftUncertain.length > 0) this.say(`supervisor: tasks of exited processes not yet confirmed: ${leftUncertain.join(', ')} (confirm them with confirmStopped once their leases lapse)`);
      await queue.close();
    }
    const result: SupervisorResult = { reason: this.failure?.reason ?? 'stopped', ...(this.failure === undefined ? {} : { message: this.failure.message }), ...this.counts, leftUncertain };
    this.say(`supervisor: stopped (${result.reason}): ${result.starts} start(s), ${result.restarts} restart(s), ${result.confirmations} confirmation(s), ${result.killed} killed`);
    this.emit({ type: 'stopped', at: this.clock.now(), result });
    this.resolveDone(result);
    return result;
  }

  private running(): Child[] {
    return [...this.live.values()].filter((child) => child.exit === undefined);
  }

  private spawn(slot: number): void {
    const incarnation = ++this.incarnation;
    const child = fork(this.entry, [], {
      execArgv: this.execArgv,
      env: this.options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      serialization: 'json',
      // Its own process group: a Ctrl-C at the terminal reaches the supervisor alone, which drains the
      // fleet in order (R8); a supervisor that dies closes the IPC channel, and each process drains on that.
      detached: true,
    });
    const at = this.clock.now();
    this.counts.starts++;
    if (child.pid === undefined) {
      // The fork itself failed (say EAGAIN); 'error' says why. Count it as an exit so the slot backs off.
      child.once('error', (error) => this.say(`supervisor: starting a process for slot ${slot} failed: ${error.message}`));
      this.scheduleRestart(slot, at);
      return;
    }
    const workerId = `${this.host}:${child.pid}:${incarnation}`;
    const record: Child = { workerId, pid: child.pid, slot, startedAt: at, ready: false, process: child };
    this.live.set(workerId, record);
    for (const stream of [child.stdout, child.stderr]) {
      if (stream !== null) createInterface({ input: stream }).on('line', (line) => this.log(`[${workerId}] ${line}`));
    }
    child.on('error', (error) => this.say(`supervisor: ${workerId} (pid ${child.pid}): ${error.message}`));
    child.on('message', (message: ChildMessage) => this.onMessage(record, message));
    // Node may report the exit before the last messages the process sent (its load failure, just before
    // it exited 78): while the channel is still open, the exit is acted on once it closes, which is after
    // every message on it was delivered.
    child.once('exit', (code, signal) => {
      if (child.connected) child.once('disconnect', () => this.onExit(record, code, signal));
      else this.onExit(record, code, signal);
    });
    const start: StartMessage = {
      type: 'start',
      workerId,
      db: this.options.db,
      ...(this.options.schema === undefined ? {} : { schema: this.options.schema }),
      agent: this.options.agent,
      drainMs: this.drainMs,
      config: this.options.config ?? {},
      worker: { ...this.options.worker, slots: this.options.slots ?? 1 },
    };
    child.send(start);
    this.say(`supervisor: started ${workerId} (slot ${slot}, pid ${child.pid})`);
    this.emit({ type: 'started', workerId, pid: child.pid, slot, at });
  }

  private onMessage(child: Child, message: ChildMessage): void {
    switch (message.type) {
      case 'ready':
        child.ready = true;
        this.loadFailuresInARow = 0;
        this.say(`supervisor: ${child.workerId} ready`);
        this.emit({ type: 'ready', workerId: child.workerId, pid: child.pid, at: this.clock.now() });
        return;
      case 'fatal':
        if (message.phase === 'load') child.loadFailure = message.message;
        this.say(`supervisor: ${child.workerId}: ${message.phase === 'load' ? 'the agent module failed to load' : 'failed'}: ${message.message}`);
        return;
      case 'log':
        this.log(`[${child.workerId}] ${message.line}`);
        return;
      case 'outcome':
        this.emit({ type: 'outcome', workerId: child.workerId, outcome: message.outcome });
        return;
      case 'drained':
        this.say(`supervisor: ${child.workerId} drained (${message.interrupted} run(s) handed back interrupted)`);
        return;
      case 'bye':
        return;
    }
  }

  private onExit(child: Child, code: number | null, signal: NodeJS.Signals | null): void {
    const at = this.clock.now();
    child.exit = { code, signal, at };
    this.live.delete(child.workerId);
    // Q11: from here on no process of this worker id exists; its tasks may be confirmed stopped.
    this.dead.set(child.workerId, { pid: child.pid, code, signal, at });
    this.say(`supervisor: ${child.workerId} exited (${signal === null ? `code ${code}` : `signal ${signal}`})${this.stopping ? '' : ', unplanned'}`);
    this.emit({ type: 'exited', workerId: child.workerId, pid: child.pid, code, signal, planned: this.stopping, at });
    void this.sweep();
    if (this.stopping) return;
    if (code === EXIT_AGENT_MODULE || child.loadFailure !== undefined) {
      this.loadFailuresInARow++;
      const message = child.loadFailure ?? `exit ${EXIT_AGENT_MODULE}`;
      this.emit({ type: 'load_failed', workerId: child.workerId, message, inARow: this.loadFailuresInARow, at });
      if (this.loadFailuresInARow >= this.maxLoadFailures) {
        this.failure = { reason: 'agent_module_failed', message: `the agent module ${this.options.agent} failed to load ${this.loadFailuresInARow} time(s) in a row: ${message}` };
        this.say(`supervisor: giving up: ${this.failure.message}`);
        this.emit({ type: 'gave_up', message: this.failure.message, at });
        void this.stop();
        return;
      }
    }
    this.scheduleRestart(child.slot, child.startedAt);
  }

  private scheduleRestart(slot: number, startedAt: number): void {
    const ranFor = this.clock.now() - startedAt;
    const inARow = ranFor >= this.restart.stableMs ? 1 : (this.exitsInARow.get(slot) ?? 0) + 1;
    this.exitsInARow.set(slot, inARow);
    const delayMs = Math.min(this.restart.maxMs, this.restart.initialMs * 2 ** Math.min(30, inARow - 1));
    this.say(`supervisor: restarting slot ${slot} in ${delayMs} ms (${inARow} exit(s) in a row within ${this.restart.stableMs} ms of a start)`);
    this.emit({ type: 'restart_scheduled', slot, delayMs, exitsInARow: inARow, at: this.clock.now() });
    void this.sleepWhile(delayMs, () => !this.stopping).then(() => {
      if (this.stopping) return;
      this.counts.restarts++;
      this.spawn(slot);
    });
  }

  private async runScanLoop(): Promise<void> {
    while (!this.stopping) {
      await this.sweep();
      await this.sleepWhile(this.scanMs, () => !this.stopping);
    }
  }

  /** One scan, after any scan in progress (exits ask for one too, so their confirmations come promptly). */
  private sweep(): Promise<void> {
    this.sweeping = this.sweeping.then(() => this.sweepOnce());
    return this.sweeping;
  }

  private async sweepOnce(): Promise<void> {
    const queue = this.queue;
    if (queue === undefined) return;
    try {
      await queue.expireLeases();
      await queue.reconcile();
      if (this.dead.size === 0) return;
      for (const task of await queue.tasksInState('uncertain')) {
        const death = task.workerId === undefined ? undefined : this.dead.get(task.workerId);
        if (death === undefined || task.workerId === undefined) continue;
        // The exit is what entitles the confirmation; the pid probe is recorded beside it for audit.
        const pidAlive = isPidAlive(death.pid);
        const answer = await queue.confirmStopped(task.id, task.generation, 'supervisor');
        const result = answer.ok ? { ok: true as const, next: answer.next } : { ok: false as const, error: answer.error };
        if (answer.ok) this.counts.confirmations++;
        this.say(
          `supervisor: confirmStopped task ${task.id} gen ${task.generation} of ${task.workerId} (pid ${death.pid} exited ${death.signal ?? `code ${death.code}`}; kill(pid, 0): ${pidAlive ? 'a process has that pid again' : 'no such process'}): ${answer.ok ? answer.next : answer.error}`,
        );
        this.emit({ type: 'confirmed', taskId: task.id, generation: task.generation, workerId: task.workerId, pid: death.pid, exitedAt: death.at, pidAlive, result, at: this.clock.now() });
      }
      await this.forgetSettledDead(queue);
    } catch (error) {
      // A store outage or a closed queue stops one scan, never the supervisor: the next scan tries again.
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      this.say(`supervisor: scan failed: ${message}`);
      this.emit({ type: 'scan_failed', message, at: this.clock.now() });
    }
  }

  /**
   * A dead id is kept until none of its tasks is running or uncertain, and for at least two lease
   * periods after its exit: on PostgreSQL a claim whose COMMIT the dying process had already sent can
   * become visible a moment after the exit, and its task must still be recognised.
   */
  private async forgetSettledDead(queue: WorkQueue): Promise<void> {
    const holders = new Set((await this.heldTasks(queue)).map((task) => task.workerId));
    const keepFor = 2 * queue.config.leaseMs;
    for (const [workerId, death] of this.dead) {
      if (!holders.has(workerId) && this.clock.now() - death.at > keepFor) this.dead.delete(workerId);
    }
  }

  private async heldTasks(queue: WorkQueue): Promise<{ id: number; workerId: string | undefined }[]> {
    return [...(await queue.tasksInState('running')), ...(await queue.tasksInState('uncertain'))].map((task) => ({ id: task.id, workerId: task.workerId }));
  }

  /** Ids of the running or uncertain tasks that a process the supervisor saw exit still holds. */
  private async tasksOfDead(): Promise<number[]> {
    if (this.queue === undefined) return [];
    return (await this.heldTasks(this.queue)).filter((task) => task.workerId !== undefined && this.dead.has(task.workerId)).map((task) => task.id);
  }

  /** Sleeps up to `ms` through the Waiter in short slices, returning early once `go()` turns false. */
  private async sleepWhile(ms: number, go: () => boolean): Promise<void> {
    const until = this.clock.now() + ms;
    while (go() && this.clock.now() < until) await this.waiter.sleep(Math.max(1, Math.min(SLICE_MS, until - this.clock.now())));
  }

  private defaultExecArgv(): string[] {
    if (!isTypeScriptModule(this.entry) && !isTypeScriptModule(this.options.agent)) return [];
    const tsx = resolveTsx([import.meta.url, pathToFileURL(this.options.agent).href]);
    if (tsx === undefined) {
      throw new ConfigError('agent', `${this.options.agent} is TypeScript, which needs tsx (npm install tsx) in the worker processes; or compile it to .mjs`);
    }
    return ['--import', tsx];
  }

  private say(line: string): void {
    this.log(line);
  }

  private emit(event: SupervisorEvent): void {
    this.options.onEvent?.(event);
  }
}

/** `kill(pid, 0)`: true when some process has that pid (EPERM: it exists but belongs to another user). */
function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** tsx's loader as a file URL for `--import`, resolved from Leasehold's own location or the agent module's. */
function resolveTsx(from: readonly string[]): string | undefined {
  for (const base of from) {
    try {
      return pathToFileURL(createRequire(base).resolve('tsx')).href;
    } catch {
      // Not installed where this base looks; try the next.
    }
  }
  return undefined;
}

/** A URL's password stays out of the log. */
function redact(db: string): string {
  return db.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
}

function positive(field: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new ConfigError(field, `must be a positive integer, got ${String(value)}`);
  return value;
}

function nonNegative(field: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new ConfigError(field, `must be a whole number of milliseconds, got ${String(value)}`);
  return value;
}
