/**
 * The Supervisor's bookkeeping (SPEC W3, Q11, R8) with processes the test plays itself: node's `fork` is
 * replaced by one that hands back a fake child (an EventEmitter with a pid, an IPC channel the test reads
 * and signals it records), so the cases a real process makes hard to stage are staged exactly: a fork that
 * fails, a process that exits 78 without a word, one whose channel is gone at the shutdown, a dead process
 * whose pid another process has now, an operator who confirms a task a moment before the supervisor does.
 * The real-process tests are in supervisor.test.ts. Waits end on states, never on durations.
 */
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { SystemClock } from '../adapters/clock.ts';
import { ConfigError, LeaseholdError } from '../queue/errors.ts';
import type { WorkQueue } from '../queue/types.ts';
import { openWorkQueue } from '../work-queue.ts';
import { Supervisor, type SupervisorEvent, type SupervisorOptions } from './supervisor.ts';
import type { ChildMessage, StartMessage } from './worker-protocol.ts';

/** What the replaced fork and createRequire do; set per test, read when the Supervisor calls them. */
const stage = vi.hoisted(() => ({
  forks: [] as { entry: string; execArgv: readonly string[] }[],
  /** Makes the next child; the default is set below, once FakeChild exists. */
  make: undefined as unknown as (index: number) => unknown,
  /** Whether tsx is missing (createRequire(...).resolve('tsx') throws). */
  noTsx: false,
  /** Wraps the queue the Supervisor opens for itself. */
  wrapQueue: (queue: unknown) => queue,
}));

vi.mock('node:child_process', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:child_process')>();
  return {
    ...actual,
    fork: (entry: string, _args: readonly string[], options: { execArgv: readonly string[] }) => {
      stage.forks.push({ entry, execArgv: options.execArgv });
      return stage.make(stage.forks.length - 1);
    },
  };
});

vi.mock('node:module', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:module')>();
  return {
    ...actual,
    createRequire: (base: string | URL) => {
      const real = actual.createRequire(base);
      if (!stage.noTsx) return real;
      return Object.assign((id: string) => real(id), real, {
        resolve: (id: string) => {
          if (id === 'tsx') throw Object.assign(new Error("Cannot find module 'tsx'"), { code: 'MODULE_NOT_FOUND' });
          return real.resolve(id);
        },
      });
    },
  };
});

vi.mock('../work-queue.ts', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../work-queue.ts')>();
  return { ...actual, openWorkQueue: (options: Parameters<typeof actual.openWorkQueue>[0]) => stage.wrapQueue(actual.openWorkQueue(options)) as WorkQueue };
});

/** A forked process as the Supervisor sees it. SIGTERM or a drain message makes it exit 0; SIGKILL exits by signal. */
class FakeChild extends EventEmitter {
  connected = true;
  readonly stdout = null;
  readonly stderr = null;
  readonly sent: unknown[] = [];
  readonly signals: string[] = [];
  /** Whether SIGTERM and drain messages end it (a hung process ignores them). */
  obeys = true;

  constructor(readonly pid: number | undefined) {
    super();
  }

  get start(): StartMessage {
    return this.sent.find((message) => (message as { type: string }).type === 'start') as StartMessage;
  }

  send(message: unknown, callback?: (error: Error | null) => void): boolean {
    this.sent.push(message);
    callback?.(null);
    if ((message as { type: string }).type === 'drain' && this.obeys) this.exit(0, null);
    return true;
  }

  kill(signal: string): boolean {
    this.signals.push(signal);
    if (signal === 'SIGKILL') this.exit(null, 'SIGKILL');
    else if (this.obeys) this.exit(0, null);
    return true;
  }

  /** The child says something over its channel, as worker-process-run.ts does. */
  say(message: ChildMessage): void {
    this.emit('message', message);
  }

  exit(code: number | null, signal: string | null): void {
    if (this.exited) return;
    this.exited = true;
    setImmediate(() => {
      this.connected = false;
      this.emit('exit', code, signal);
    });
  }

  private exited = false;
}

/** Fake pids start far above what the kernel hands out, so kill(pid, 0) finds no process unless a test means it to. */
let nextPid = 4_000_000;
const children: FakeChild[] = [];
const defaultMake = () => {
  const child = new FakeChild(nextPid++);
  children.push(child);
  return child;
};
stage.make = defaultMake;

const scratch = mkdtempSync(join(tmpdir(), 'leasehold-fake-fleet-'));
const AGENT = join(scratch, 'agent.mjs');
const opened: WorkQueue[] = [];
const supervisors: Supervisor[] = [];
afterEach(async () => {
  for (const supervisor of supervisors.splice(0)) await supervisor.stop();
  for (const queue of opened.splice(0)) await queue.close();
  stage.forks.length = 0;
  stage.make = defaultMake;
  stage.noTsx = false;
  stage.wrapQueue = (queue) => queue;
  children.length = 0;
  vi.restoreAllMocks();
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function until(what: string, ready: () => boolean, guardMs = 60_000): Promise<void> {
  const give = Date.now() + guardMs;
  while (!ready()) {
    if (Date.now() > give) throw new Error(`hang guard: still waiting for ${what} after ${guardMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function supervised(options: Partial<SupervisorOptions> = {}) {
  const events: SupervisorEvent[] = [];
  const log: string[] = [];
  const dir = mkdtempSync(join(scratch, 'q-'));
  const supervisor = new Supervisor({
    db: join(dir, 'queue.sqlite'),
    agent: AGENT,
    processes: 1,
    scanMs: 20,
    drainMs: 0,
    shutdownGraceMs: 0,
    host: 'fakehost',
    log: (line) => log.push(line),
    onEvent: (event) => events.push(event),
    ...options,
  });
  supervisors.push(supervisor);
  const ofType = <T extends SupervisorEvent['type']>(type: T) => events.filter((event): event is Extract<SupervisorEvent, { type: T }> => event.type === type);
  return { supervisor, events, log, ofType, db: join(dir, 'queue.sqlite') };
}

describe('Supervisor options', () => {
  it('refuses options that are no object, an empty db, and drain or grace times that are no whole number of milliseconds, naming the field', () => {
    const base = { db: join(scratch, 'q.sqlite'), agent: AGENT, processes: 1 };
    const fieldOf = (make: () => unknown): string | undefined => {
      try {
        make();
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as ConfigError).message;
      }
      return undefined;
    };
    expect(fieldOf(() => new Supervisor(null as never))).toMatch(/^invalid config field 'options': expected \{ db, agent, processes/);
    expect(fieldOf(() => new Supervisor('queue.sqlite' as never))).toMatch(/'options'/);
    expect(fieldOf(() => new Supervisor({ ...base, db: '' }))).toMatch(/^invalid config field 'db': expected a SQLite file path or a postgres:\/\/ URL/);
    expect(fieldOf(() => new Supervisor({ ...base, db: 5 as never }))).toMatch(/'db'/);
    expect(fieldOf(() => new Supervisor({ ...base, drainMs: -1 }))).toBe("invalid config field 'drainMs': must be a whole number of milliseconds, got -1");
    expect(fieldOf(() => new Supervisor({ ...base, shutdownGraceMs: 0.5 }))).toBe("invalid config field 'shutdownGraceMs': must be a whole number of milliseconds, got 0.5");
    // Zero is a whole number: no drain, no grace.
    expect(fieldOf(() => new Supervisor({ ...base, drainMs: 0, shutdownGraceMs: 0 }))).toBeUndefined();
    expect(stage.forks).toEqual([]);
  });

  it('starts the processes with the execArgv given, as given; by default with tsx for the TypeScript entry', async () => {
    const given = supervised({ execArgv: ['--max-old-space-size=64'] });
    await given.supervisor.start();
    expect(stage.forks.map((fork) => fork.execArgv)).toEqual([['--max-old-space-size=64']]);
    await given.supervisor.stop();

    const byDefault = supervised();
    await byDefault.supervisor.start();
    expect(stage.forks[1]!.entry).toMatch(/worker-process\.ts$/);
    expect(stage.forks[1]!.execArgv).toEqual(['--import', expect.stringMatching(/^file:.*tsx/)]);
  });

  it('refuses, before starting anything, a TypeScript fleet where tsx cannot be found: a ConfigError on agent saying what to do', () => {
    stage.noTsx = true;
    let refusal: unknown;
    try {
      new Supervisor({ db: join(scratch, 'q.sqlite'), agent: join(scratch, 'agent.ts'), processes: 1 });
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(ConfigError);
    expect((refusal as ConfigError).message).toMatch(/^invalid config field 'agent': .*agent\.ts is TypeScript, which needs tsx \(npm install tsx\) in the worker processes; or compile it to \.mjs/);
    // execArgv given: the supervisor does not look for tsx at all.
    expect(() => new Supervisor({ db: join(scratch, 'q.sqlite'), agent: join(scratch, 'agent.ts'), processes: 1, execArgv: [] })).not.toThrow();
    expect(stage.forks).toEqual([]);
  });

  it('writes its log to standard error when given no log function', async () => {
    const written: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((text: string | Uint8Array) => (written.push(String(text)), true));
    const supervisor = new Supervisor({ db: join(mkdtempSync(join(scratch, 'q-')), 'queue.sqlite'), agent: AGENT, processes: 1, execArgv: [], scanMs: 20, drainMs: 0, shutdownGraceMs: 0, host: 'fakehost' });
    supervisors.push(supervisor);
    await supervisor.start();
    await supervisor.stop();
    vi.restoreAllMocks();
    expect(written[0]).toMatch(/^supervisor: 1 process\(es\) of agent .*agent\.mjs on .*queue\.sqlite, 1 slot\(s\) each\n$/);
    expect(written.some((line) => /^supervisor: started fakehost:\d+:1 \(slot 0, pid \d+\)\n$/.test(line))).toBe(true);
    expect(written.at(-1)).toMatch(/^supervisor: stopped \(stopped\): 1 start\(s\)/);
  });
});

describe('Supervisor lifecycle', () => {
  it('refuses a second start with a typed error, and starts no second fleet', async () => {
    const { supervisor } = supervised({ execArgv: [] });
    await supervisor.start();
    const second = await supervisor.start().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(second).toBeInstanceOf(LeaseholdError);
    expect((second as LeaseholdError).code).toBe('already_started');
    expect(stage.forks).toHaveLength(1);
  });

  it('stopped before it started: resolves at once with nothing started, and opens no queue', async () => {
    const { supervisor, ofType } = supervised({ execArgv: [] });
    let openedQueue = false;
    stage.wrapQueue = (queue) => ((openedQueue = true), queue);
    const result = await supervisor.stop();
    expect(result).toEqual({ reason: 'stopped', starts: 0, restarts: 0, confirmations: 0, killed: 0, leftUncertain: [] });
    expect(await supervisor.done).toBe(result);
    expect(ofType('stopped')).toHaveLength(1);
    expect(openedQueue).toBe(false);
    expect(stage.forks).toEqual([]);
  });

  it('a fork that fails (no pid) is logged with its error and backs the slot off like an exit; the next start takes its place', async () => {
    stage.make = (index) => {
      if (index > 0) return defaultMake();
      const failed = new FakeChild(undefined);
      setImmediate(() => failed.emit('error', Object.assign(new Error('spawn EAGAIN'), { code: 'EAGAIN' })));
      return failed;
    };
    const { supervisor, log, ofType } = supervised({ execArgv: [], restart: { initialMs: 10 } });
    await supervisor.start();
    await until('the second start', () => ofType('started').length === 1);
    expect(log).toContain('supervisor: starting a process for slot 0 failed: spawn EAGAIN');
    expect(ofType('restart_scheduled').map((event) => [event.slot, event.delayMs, event.exitsInARow])).toEqual([[0, 10, 1]]);
    // The failed fork never got a worker id, a start message or a place among the processes.
    expect(ofType('started').map((event) => event.pid)).toEqual([children[0]!.pid]);
    expect(supervisor.processes().map((child) => child.pid)).toEqual([children[0]!.pid]);
    const result = await supervisor.stop();
    expect(result).toMatchObject({ reason: 'stopped', starts: 2, restarts: 1 });
  });

  it('logs a run failure as a failure, not a load failure; an exit 78 with no word counts as a load failure "exit 78"', async () => {
    const { supervisor, log, ofType } = supervised({ execArgv: [], maxLoadFailures: 1, restart: { initialMs: 10 } });
    await supervisor.start();
    const [first] = children;
    first!.say({ type: 'ready', workerId: first!.start.workerId });
    first!.say({ type: 'fatal', phase: 'run', message: 'the worker loop failed: TypeError: boom' });
    first!.exit(70, null);
    await until('a restart', () => children.length === 2);
    expect(log).toContain(`supervisor: ${first!.start.workerId}: failed: the worker loop failed: TypeError: boom`);
    // A failure while running is no load failure: restarted, not counted towards giving up.
    expect(ofType('load_failed')).toEqual([]);

    const second = children[1]!;
    second.exit(78, null);
    const result = await supervisor.done;
    expect(ofType('load_failed').map((event) => [event.workerId, event.message, event.inARow])).toEqual([[second.start.workerId, 'exit 78', 1]]);
    expect(result.reason).toBe('agent_module_failed');
    expect(result.message).toBe(`the agent module ${AGENT} failed to load 1 time(s) in a row: exit 78`);
  });

  it("a load failure told over the channel after node reported the exit is still the failure it names (the exit waits for the channel to close)", async () => {
    const { supervisor, ofType } = supervised({ execArgv: [], maxLoadFailures: 1 });
    await supervisor.start();
    const [child] = children;
    // As node may order them: the exit first, then the message still in the channel, then its close.
    child!.emit('exit', 78, null);
    expect(ofType('exited')).toEqual([]);
    child!.say({ type: 'fatal', phase: 'load', message: 'AgentModuleError: its default export is number 42' });
    child!.connected = false;
    child!.emit('disconnect');
    const result = await supervisor.done;
    expect(ofType('exited').map((event) => [event.pid, event.code])).toEqual([[child!.pid, 78]]);
    expect(ofType('load_failed').map((event) => event.message)).toEqual(['AgentModuleError: its default export is number 42']);
    expect(result.message).toBe(`the agent module ${AGENT} failed to load 1 time(s) in a row: AgentModuleError: its default export is number 42`);
  });

  it('a stop during a restart backoff starts no new process', async () => {
    const { supervisor, ofType } = supervised({ execArgv: [], restart: { initialMs: 600_000, maxMs: 600_000 } });
    await supervisor.start();
    children[0]!.exit(1, null);
    await until('the restart scheduled', () => ofType('restart_scheduled').length === 1);
    const result = await supervisor.stop();
    expect(result).toMatchObject({ reason: 'stopped', starts: 1, restarts: 0 });
    // The backoff's wait ends with the stop; give it a few slices to come back, and still no process.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(stage.forks).toHaveLength(1);
    expect(ofType('exited').map((event) => [event.code, event.planned])).toEqual([[1, false]]);
  });

  it('a process still starting whose channel is gone gets neither SIGTERM nor a drain message, and is SIGKILLed at the deadline', async () => {
    stage.make = () => {
      const child = defaultMake();
      child.obeys = false;
      return child;
    };
    const { supervisor, ofType } = supervised({ execArgv: [], drainMs: 50, shutdownGraceMs: 50 });
    await supervisor.start();
    const child = children[0]!;
    child.connected = false;
    const result = await supervisor.stop();
    expect(child.sent.map((message) => (message as { type: string }).type)).toEqual(['start']);
    expect(child.signals).toEqual(['SIGKILL']);
    expect(result).toMatchObject({ reason: 'stopped', killed: 1 });
    expect(ofType('killed').map((event) => event.pid)).toEqual([child.pid]);
    expect(ofType('exited').map((event) => [event.signal, event.planned])).toEqual([['SIGKILL', true]]);
  });
});

describe('Supervisor confirmations (Q11)', () => {
  it("confirms a dead process's uncertain task even when its pid is in use again (recorded), and records an operator's earlier confirmation as refused", async () => {
    const config = { leaseMs: 3_000, heartbeatMs: 1_000, globalLimit: 4, perTenantLimit: 4 };
    // This process's own pid: to kill(pid, 0) it is a live process, as a reused pid would be.
    const pid = process.pid;
    stage.make = () => {
      const child = new FakeChild(pid);
      children.push(child);
      return child;
    };
    const { supervisor, log, ofType, db } = supervised({ execArgv: [], config, restart: { initialMs: 600_000 }, clock: { now: () => Date.now() + 60_000 } });
    const workerId = `fakehost:${pid}:1`;
    const queue = openWorkQueue({ db, clock: new SystemClock(), config });
    opened.push(queue);
    const ids: number[] = [];
    for (const topic of ['a', 'b']) {
      const enqueued = await queue.enqueue({ tenant: 'acme', topic, version: 1, priority: 1, input: {} });
      if (!enqueued.ok) throw new Error(enqueued.message);
      ids.push(enqueued.taskId);
      expect((await queue.claim(workerId)).ok).toBe(true);
    }
    const [own, raced] = ids as [number, number];
    // An operator confirms the second task a moment before the supervisor's own confirmation reaches the store.
    stage.wrapQueue = (inner) =>
      new Proxy(inner as WorkQueue, {
        get(target, property, receiver) {
          if (property !== 'confirmStopped') return Reflect.get(target, property, receiver);
          return async (taskId: number, generation: number, source: string) => {
            if (taskId === raced) expect(await queue.confirmStopped(taskId, generation, 'operator')).toMatchObject({ ok: true });
            return target.confirmStopped(taskId, generation, source);
          };
        },
      });
    await supervisor.start();
    // The supervisor's clock is a minute ahead: its scans find the claims' leases lapsed, uncertain.
    await until('the process started', () => ofType('started').length === 1);
    children[0]!.exit(1, null);
    await until('both confirmations', () => ofType('confirmed').length === 2);
    const byTask = new Map(ofType('confirmed').map((event) => [event.taskId, event]));
    expect(byTask.get(own)).toMatchObject({ workerId, pid, pidAlive: true, result: { ok: true, next: 'ready' } });
    expect(byTask.get(raced)).toMatchObject({ workerId, pid, pidAlive: true, result: { ok: false, error: 'not_uncertain' } });
    expect(log).toContain(`supervisor: confirmStopped task ${own} gen 1 of ${workerId} (pid ${pid} exited code 1; kill(pid, 0): a process has that pid again): ready`);
    expect(log).toContain(`supervisor: confirmStopped task ${raced} gen 1 of ${workerId} (pid ${pid} exited code 1; kill(pid, 0): a process has that pid again): not_uncertain`);
    const result = await supervisor.stop();
    // Only the supervisor's own confirmation counts; the raced one was the operator's.
    expect(result.confirmations).toBe(1);
    const confirmedBy = (await queue.allEvents()).filter((event) => event.type === 'stop_confirmed').map((event) => `${event.taskId} ${String(event.data.source)}`);
    expect(confirmedBy.sort()).toEqual([`${own} supervisor`, `${raced} operator`].sort());
  });

  it('does not wait past leaseMs at the stop for a dead process whose lease is still long: it names the tasks left for an operator', async () => {
    // The claim was made under a lease far longer than the supervisor's queue config allows for it.
    const config = { leaseMs: 300, heartbeatMs: 100, globalLimit: 4, perTenantLimit: 4 };
    const { supervisor, log, db } = supervised({ execArgv: [], config, restart: { initialMs: 600_000 } });
    const queue = openWorkQueue({ db, clock: new SystemClock(), config: { ...config, leaseMs: 600_000, heartbeatMs: 1_000 } });
    opened.push(queue);
    await supervisor.start();
    const child = children[0]!;
    const enqueued = await queue.enqueue({ tenant: 'acme', topic: 't', version: 1, priority: 1, input: {} });
    if (!enqueued.ok) throw new Error(enqueued.message);
    expect((await queue.claim(child.start.workerId)).ok).toBe(true);
    child.exit(null, 'SIGKILL');
    await until('the exit seen', () => supervisor.processes().length === 0);
    const result = await supervisor.stop();
    expect(result).toMatchObject({ reason: 'stopped', confirmations: 0, leftUncertain: [enqueued.taskId] });
    expect(log).toContain(`supervisor: tasks of exited processes not yet confirmed: ${enqueued.taskId} (confirm them with confirmStopped once their leases lapse)`);
    // Nothing was done to it: still running under the dead process's lease.
    expect(await queue.get(enqueued.taskId)).toMatchObject({ state: 'running', workerId: child.start.workerId });
  });
});
