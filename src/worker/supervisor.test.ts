/**
 * The shipped Supervisor with real processes (SPEC W3, Q11, R8, W4): a fleet of worker processes on a
 * SQLite file and on PostgreSQL runs 2,000 short tasks of two tenants, one write tool each whose effect
 * goes to a provider stub (src/worker/__test-helpers__/provider-agent.ts) with the tool's requestKey as
 * the idempotency key, while the test kills a live process with SIGKILL 20 times, spread over the run by
 * progress (not by time). One of those processes is first paused with SIGSTOP until its tasks have gone
 * uncertain: the supervisor must not confirm them while it is paused (Q11), and does once it is killed.
 *
 * Then every task ends done (after a liveness drain: under the default 'hold' policy a task whose live
 * process lost its lease stays uncertain until that process exits, so the fleet is stopped, which
 * confirms them, and a second fleet finishes them); nothing is doubled (one ledger effect per task; the
 * provider executed each requestKey once and saw exactly one key per task); every confirmation names a
 * process the supervisor had seen exit, both in its own events and in the queue's stop_confirmed events;
 * every run outcome is typed. Nothing here depends on the machine's speed: the timeouts only guard against
 * a hang.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SystemClock } from '../adapters/clock.ts';
import { ConfigError } from '../queue/errors.ts';
import type { QueueConfig, WorkQueue } from '../queue/types.ts';
import { dropSchema, freshSchemaName, PG_URL } from '../store/__test-helpers__/pg-test-store.ts';
import { openWorkQueue } from '../work-queue.ts';
import { Supervisor, type SupervisorEvent, type SupervisorOptions, type SupervisorResult } from './supervisor.ts';

const AGENT = join(import.meta.dirname, '__test-helpers__', 'provider-agent.ts');
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-supervisor-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Real timers in the test itself (test files are exempt from S1): polling, never asserting on time. */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `ready()` until it holds; the deadline is a hang guard, never an assertion about speed. */
async function until(what: string, ready: () => boolean | Promise<boolean>, guardMs = 240_000): Promise<void> {
  const give = Date.now() + guardMs;
  while (!(await ready())) {
    if (Date.now() > give) throw new Error(`hang guard: still waiting for ${what} after ${guardMs} ms`);
    await sleep(50);
  }
}

const OUTCOME_KINDS = new Set(['completed', 'failed', 'retry', 'cancelled', 'expired', 'budget_exhausted', 'lost_lease', 'abandoned', 'crashed', 'skipped']);

/** A fleet under test: its supervisor, the events it reported, and a plain-text log. */
function fleet(options: Omit<SupervisorOptions, 'agent' | 'log' | 'onEvent'>, events: SupervisorEvent[], log: string[]): Supervisor {
  return new Supervisor({ ...options, agent: AGENT, log: (line) => log.push(line), onEvent: (event) => events.push(event) });
}

interface Store {
  name: string;
  db: string;
  schema?: string;
  cleanup(): Promise<void>;
}

function sqliteStore(): Store {
  const dir = mkdtempSync(join(scratch, 'sqlite-'));
  return { name: 'sqlite', db: join(dir, 'queue.sqlite'), cleanup: async () => {} };
}

function postgresStore(): Store {
  const schema = freshSchemaName();
  return { name: 'postgres', db: PG_URL, schema, cleanup: () => dropSchema(schema) };
}

const TASKS = 2_000;
const KILLS = 20;
const PROCESSES = 4;
const CONFIG: Partial<QueueConfig> = {
  capacity: 2 * TASKS,
  globalLimit: 16,
  perTenantLimit: 8,
  // Short leases so a killed process's tasks come back soon; long enough that a busy two-core machine
  // keeps its heartbeats in time (a lost lease is still survived: see the liveness drain).
  leaseMs: 6_000,
  heartbeatMs: 1_000,
  // A task may be in flight at several of the 20 kills; it must still end done, not failed (Q11 counts attempts).
  maxAttempts: 20,
  maxDeliveries: 20,
};

describe('Supervisor: a supervised fleet under kill -9 (W3, Q11, W4)', () => {
  it.each([['sqlite'], ['postgres']])('%s: 2,000 tasks, 20 kills, one paused process: all done once, confirmations only for exited processes', async (storeName) => {
    const store = storeName === 'sqlite' ? sqliteStore() : postgresStore();
    const providerDb = join(mkdtempSync(join(scratch, 'provider-')), 'provider.sqlite');
    const queue = openWorkQueue({ db: store.db, clock: new SystemClock(), config: CONFIG, ...(store.schema === undefined ? {} : { schema: store.schema }) });
    const events: SupervisorEvent[] = [];
    const log: string[] = [];
    const startedAt = Date.now();
    try {
      for (let i = 0; i < TASKS; i++) {
        const answer = await queue.enqueue({ tenant: i % 2 === 0 ? 'acme' : 'globex', topic: `ticket-${i}`, version: 1, priority: i % 7, input: { i } });
        expect(answer.ok).toBe(true);
      }
      const options = {
        db: store.db,
        ...(store.schema === undefined ? {} : { schema: store.schema }),
        processes: PROCESSES,
        slots: 4,
        config: CONFIG,
        scanMs: 200,
        drainMs: 10_000,
        restart: { initialMs: 50, maxMs: 1_000 },
        worker: { idleWaitMs: 10, maxIdleWaitMs: 50 },
        env: { ...process.env, PROVIDER_DB: providerDb },
      };
      const first = fleet(options, events, log);
      await first.start();
      const completed = () => events.filter((event) => event.type === 'outcome' && event.outcome.kind === 'completed').length;
      const readyCount = () => first.processes().filter((child) => child.ready).length;

      let paused: { workerId: string; pid: number } | undefined;
      const victims: string[] = [];
      for (let kill = 0; kill < KILLS; kill++) {
        // Spread over the run by progress: kill k once k/(KILLS+2) of the tasks are done and a process is up to kill.
        await until(`progress for kill ${kill + 1}`, () => completed() >= ((kill + 1) * TASKS) / (KILLS + 2) && readyCount() > 0);
        if (kill === KILLS / 2) {
          // Q11: a paused process is alive. Pause one that holds running tasks, wait until they are uncertain
          // and a few scans have passed: none may be confirmed while it is paused.
          // On SQLite a process paused inside a write transaction holds the database's lock, and then no one,
          // the supervisor included, can expire its leases: let it go on and pause it again until its tasks
          // do go uncertain (PostgreSQL has no such wait: the paused connection's rows are its own).
          let holder = first.processes()[0]!;
          let held: number[] = [];
          for (let attempt = 0; ; attempt++) {
            if (attempt === 20) throw new Error('could not pause a process outside a write transaction in 20 tries');
            const running = await queue.tasksInState('running');
            holder = first.processes().find((child) => child.ready && running.some((task) => task.workerId === child.workerId)) ?? holder;
            held = running.filter((task) => task.workerId === holder.workerId).map((task) => task.id);
            process.kill(holder.pid, 'SIGSTOP');
            const pausedAt = Date.now();
            let wentUncertain = false;
            await until("the paused process's tasks to go uncertain", async () => {
              const uncertain = new Set((await queue.tasksInState('uncertain').catch(() => [])).map((task) => task.id));
              wentUncertain = held.every((id) => uncertain.has(id));
              return wentUncertain || Date.now() - pausedAt > 3 * CONFIG.leaseMs!;
            });
            if (wentUncertain) break;
            process.kill(holder.pid, 'SIGCONT');
            await sleep(200);
          }
          paused = { workerId: holder.workerId, pid: holder.pid };
          const pausedAt = Date.now();
          await until('a few scans while paused', () => Date.now() - pausedAt > 5 * options.scanMs);
          expect(events.filter((event) => event.type === 'confirmed' && event.workerId === holder.workerId)).toEqual([]);
          // Still uncertain, still its own (an earlier try may have left more of its tasks uncertain too).
          expect((await queue.tasksInState('uncertain')).filter((task) => task.workerId === holder.workerId).map((task) => task.id)).toEqual(expect.arrayContaining(held));
          victims.push(holder.workerId);
          process.kill(holder.pid, 'SIGKILL');
          // Wait for its exit, as for every kill, so the next kill cannot pick it again.
          await until(`the exit of ${holder.workerId}`, () => events.some((event) => event.type === 'exited' && event.workerId === holder.workerId));
          continue;
        }
        log.push(`test: kill ${kill + 1} at ${((Date.now() - startedAt) / 1000).toFixed(1)} s, ${completed()} completed`);
        const live = first.processes().filter((child) => child.ready);
        const victim = live[Math.floor(Math.random() * live.length)]!;
        victims.push(victim.workerId);
        process.kill(victim.pid, 'SIGKILL');
        await until(`the exit of ${victim.workerId}`, () => events.some((event) => event.type === 'exited' && event.workerId === victim.workerId));
      }

      await until('the fleet to be whole again after the last kill', () => readyCount() === PROCESSES);
      // Liveness drain, first part: wait until nothing is ready or running (what is left is done or uncertain).
      await until('the first fleet to run out of work', async () => {
        const counts = (await queue.snapshot()).countsByState;
        return counts.ready === 0 && counts.running === 0;
      });
      log.push(`test: first fleet out of work at ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
      const firstResult = await first.stop();
      // Second part: the stop confirmed what the exited processes left; a second fleet finishes it.
      const second = fleet({ ...options, processes: 2 }, events, log);
      await second.start();
      await until('every task done', async () => (await queue.snapshot()).countsByState.done === TASKS);
      const secondResult = await second.stop();
      const seconds = (Date.now() - startedAt) / 1000;

      await checkFleet(queue, events, [firstResult, secondResult], providerDb, paused, victims);
      // The figure for the brief; not an assertion.
      console.log(`${store.name}: ${TASKS} tasks, ${KILLS} kills in ${seconds.toFixed(1)} s; ${firstResult.confirmations + secondResult.confirmations} confirmations; ${firstResult.restarts} restarts`);
    } catch (error) {
      console.error(log.slice(-60).join('\n'));
      throw error;
    } finally {
      await queue.close();
      await store.cleanup();
    }
  }, 600_000);
});

async function checkFleet(queue: WorkQueue, events: SupervisorEvent[], results: SupervisorResult[], providerDb: string, paused: { workerId: string; pid: number } | undefined, victims: string[]): Promise<void> {
  // Every task ended done.
  const snapshot = await queue.snapshot();
  expect(snapshot.tasks.filter((task) => task.state !== 'done').map((task) => `${task.id}:${task.state}`)).toEqual([]);

  // Nothing doubled: one ledger effect per task (R3), and the provider executed one key per task (W4).
  const effects = await queue.effects();
  const effectsPerTask = new Map<number, number>();
  for (const effect of effects) effectsPerTask.set(effect.taskId, (effectsPerTask.get(effect.taskId) ?? 0) + 1);
  expect(effects).toHaveLength(TASKS);
  expect([...effectsPerTask.values()].every((n) => n === 1)).toBe(true);
  const provider = new Database(providerDb, { readonly: true });
  try {
    const executions = provider.prepare('SELECT key, task_id AS taskId FROM executions').all() as { key: string; taskId: number }[];
    expect(executions).toHaveLength(TASKS);
    expect(new Set(executions.map((row) => row.taskId)).size).toBe(TASKS);
    expect(new Set(executions.map((row) => row.key))).toEqual(new Set(effects.map((effect) => effect.requestKey)));
    const calls = (provider.prepare('SELECT COUNT(*) AS n FROM calls').get() as { n: number }).n;
    // W4: a kill between the provider's answer and recordEffect makes the takeover call again with the same key.
    expect(calls).toBeGreaterThanOrEqual(TASKS);
  } finally {
    provider.close();
  }

  // Q11: every confirmation the supervisors made names a process they had seen exit, before it.
  const exits = new Map(events.filter((event) => event.type === 'exited').map((event) => [event.workerId, event.at]));
  const confirmations = events.filter((event): event is Extract<SupervisorEvent, { type: 'confirmed' }> => event.type === 'confirmed');
  expect(confirmations.length).toBeGreaterThan(0);
  for (const confirmation of confirmations) {
    expect({ task: confirmation.taskId, exitSeen: exits.has(confirmation.workerId) }).toEqual({ task: confirmation.taskId, exitSeen: true });
    expect(exits.get(confirmation.workerId)!).toBeLessThanOrEqual(confirmation.at);
    expect(confirmation.pidAlive).toBe(false);
  }
  // The queue's own record agrees: each stop_confirmed event is the supervisor's, for the generation a
  // process it saw exit had claimed, and there are as many as the supervisors reported.
  const all = await queue.allEvents();
  const claimer = new Map(all.filter((event) => event.type === 'claimed').map((event) => [`${event.taskId}:${event.generation ?? event.data.generation}`, event.workerId ?? String(event.data.workerId)]));
  const stopConfirmed = all.filter((event) => event.type === 'stop_confirmed');
  expect(stopConfirmed).toHaveLength(confirmations.filter((confirmation) => confirmation.result.ok).length);
  for (const event of stopConfirmed) {
    expect(event.data.source).toBe('supervisor');
    const worker = claimer.get(`${event.taskId}:${event.data.generation}`);
    expect({ task: event.taskId, worker, exitSeen: worker !== undefined && exits.has(worker) }).toEqual({ task: event.taskId, worker, exitSeen: true });
    expect(exits.get(worker!)!).toBeLessThanOrEqual(event.at);
  }
  if (paused !== undefined) {
    const ofPaused = confirmations.filter((confirmation) => confirmation.workerId === paused.workerId);
    expect(ofPaused.every((confirmation) => confirmation.at >= exits.get(paused.workerId)!)).toBe(true);
  }

  // Every run outcome is typed, and none is a crash.
  const outcomes = events.filter((event) => event.type === 'outcome').map((event) => event.outcome.kind);
  expect(outcomes.filter((kind) => !OUTCOME_KINDS.has(kind))).toEqual([]);
  expect(outcomes.filter((kind) => kind === 'crashed')).toEqual([]);

  // The kills were seen as unplanned exits (SIGKILL), and the first fleet restarted every process that exited unplanned.
  const unplanned = events.filter((event): event is Extract<SupervisorEvent, { type: 'exited' }> => event.type === 'exited' && !event.planned);
  expect(victims).toHaveLength(KILLS);
  expect(unplanned.filter((event) => victims.includes(event.workerId)).map((event) => event.signal)).toEqual(victims.map(() => 'SIGKILL'));
  expect(unplanned.filter((event) => !victims.includes(event.workerId)).map((event) => `${event.workerId} ${event.code} ${event.signal}`)).toEqual([]);
  expect(results[0]!.restarts).toBe(unplanned.length);
  const planned = events.filter((event) => event.type === 'exited' && event.planned);
  expect(planned.every((event) => event.type === 'exited' && event.code === 0)).toBe(true);
  expect(results.map((result) => [result.reason, result.killed, result.leftUncertain])).toEqual(results.map(() => ['stopped', 0, []]));
}

describe('Supervisor: restarts, the shutdown deadline and bad options', () => {
  it('backs off restarts of a module that never loads, and stops after maxLoadFailures with the module\'s error', async () => {
    const dir = mkdtempSync(join(scratch, 'broken-'));
    const agent = join(dir, 'broken-agent.mjs');
    writeFileSync(agent, 'export const agent = 1;\n');
    const events: SupervisorEvent[] = [];
    const log: string[] = [];
    const supervisor = new Supervisor({
      db: join(dir, 'queue.sqlite'),
      agent,
      processes: 1,
      restart: { initialMs: 50, maxMs: 120 },
      maxLoadFailures: 4,
      log: (line) => log.push(line),
      onEvent: (event) => events.push(event),
    });
    await supervisor.start();
    const result = await supervisor.done;
    expect(result.reason).toBe('agent_module_failed');
    expect(result.message).toMatch(/broken-agent\.mjs failed to load 4 time\(s\) in a row: AgentModuleError: agent module .*broken-agent\.mjs: it has no default export \(it exports agent\)/);
    // Capped exponential backoff: 50, 100, then the cap, never a spin.
    expect(events.filter((event) => event.type === 'restart_scheduled').map((event) => event.type === 'restart_scheduled' && event.delayMs)).toEqual([50, 100, 120]);
    expect(events.filter((event) => event.type === 'exited').map((event) => event.type === 'exited' && event.code)).toEqual([78, 78, 78, 78]);
    expect(log.some((line) => line.startsWith('supervisor: giving up: the agent module'))).toBe(true);
  });

  it('SIGKILLs a process that is still there at the shutdown deadline (here: paused), and still confirms its tasks once their leases lapse', async () => {
    const dir = mkdtempSync(join(scratch, 'deadline-'));
    const db = join(dir, 'queue.sqlite');
    const config: Partial<QueueConfig> = { globalLimit: 4, perTenantLimit: 4, leaseMs: 1_500, heartbeatMs: 500 };
    const queue = openWorkQueue({ db, clock: new SystemClock(), config });
    const events: SupervisorEvent[] = [];
    const log: string[] = [];
    try {
      for (let i = 0; i < 3; i++) await queue.enqueue({ tenant: 'acme', topic: `t${i}`, version: 1, priority: 1, input: { i } });
      const supervisor = fleet(
        { db, processes: 1, slots: 4, config, scanMs: 100, drainMs: 200, shutdownGraceMs: 200, worker: { idleWaitMs: 10, toolTimeoutMs: 600_000 }, env: { ...process.env, PROVIDER_DB: join(dir, 'provider.sqlite'), PROVIDER_DELAY_MS: '600000' } },
        events,
        log,
      );
      await supervisor.start();
      await until('three running tasks', async () => (await queue.tasksInState('running')).length === 3);
      const [child] = supervisor.processes();
      process.kill(child!.pid, 'SIGSTOP');
      const result = await supervisor.stop();
      expect(result).toMatchObject({ reason: 'stopped', killed: 1, confirmations: 3, leftUncertain: [] });
      const killedAt = events.find((event) => event.type === 'killed')!.at;
      const confirmations = events.filter((event) => event.type === 'confirmed');
      expect(confirmations).toHaveLength(3);
      expect(confirmations.every((event) => event.at >= killedAt && event.type === 'confirmed' && event.workerId === child!.workerId)).toBe(true);
      expect((await queue.snapshot()).countsByState.ready).toBe(3);
    } finally {
      await queue.close();
    }
  });

  it('drains on stop (R8): runs in flight finish, the processes exit 0', async () => {
    const dir = mkdtempSync(join(scratch, 'drain-'));
    const db = join(dir, 'queue.sqlite');
    // A lease far longer than the drain needs: what is judged is the drain, and a loaded machine that
    // starves a worker process past a 30 s lease would make it a test of the machine instead.
    const config: Partial<QueueConfig> = { globalLimit: 4, perTenantLimit: 4, leaseMs: 120_000 };
    const queue = openWorkQueue({ db, clock: new SystemClock(), config });
    const events: SupervisorEvent[] = [];
    try {
      for (let i = 0; i < 8; i++) await queue.enqueue({ tenant: 'acme', topic: `t${i}`, version: 1, priority: 1, input: { i } });
      const supervisor = fleet(
        { db, processes: 2, slots: 2, config, scanMs: 100, drainMs: 60_000, worker: { idleWaitMs: 10 }, env: { ...process.env, PROVIDER_DB: join(dir, 'provider.sqlite'), PROVIDER_DELAY_MS: '1000' } },
        events,
        [],
      );
      await supervisor.start();
      await until('four running tasks', async () => (await queue.tasksInState('running')).length === 4);
      const running = (await queue.tasksInState('running')).map((task) => task.id);
      const result = await supervisor.stop();
      expect(result).toMatchObject({ reason: 'stopped', killed: 0, confirmations: 0 });
      for (const id of running) expect((await queue.get(id))?.state).toBe('done');
      expect(events.filter((event) => event.type === 'exited').map((event) => event.type === 'exited' && [event.code, event.planned])).toEqual([[0, true], [0, true]]);
      expect((await queue.allEvents()).filter((event) => event.type === 'interrupted')).toEqual([]);
    } finally {
      await queue.close();
    }
  });

  it('refuses options it cannot run with a typed error naming the field', () => {
    const base = { db: join(scratch, 'q.sqlite'), agent: AGENT, processes: 1 };
    expect(() => new Supervisor({ ...base, db: ':memory:' })).toThrow(ConfigError);
    expect(() => new Supervisor({ ...base, db: ':memory:' })).toThrow(/private to one process/);
    expect(() => new Supervisor({ ...base, processes: 0 })).toThrow("invalid config field 'processes': must be a positive integer, got 0");
    expect(() => new Supervisor({ ...base, slots: 1.5 })).toThrow(/'slots'/);
    expect(() => new Supervisor({ ...base, agent: '' })).toThrow(/'agent'/);
    expect(() => new Supervisor({ ...base, restart: { maxMs: -1 } })).toThrow(/'restart\.maxMs'/);
  });
});
