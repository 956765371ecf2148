/**
 * SPEC W1, issue 31 item 1: work starts at once. Each test gives the worker a fallback poll far longer
 * than the test may run (idleWaitMs 10 minutes), so a task that starts at all started because the worker
 * was woken: by its own run's end, by the queue's notice, or by the store's change counter. None of them
 * measures time: a missing wake-up shows as a task that never starts, caught by the hang guard.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { BusyError, SqliteStore, SystemClock, TimerWaiter, Worker, openWorkQueue, type RunOutcome, type WorkQueue } from '../index.ts';
import { claimableChannel, queueLockKey } from '../store/pg-store.ts';
import { Wakeup } from './wakeup.ts';

const NEVER_POLL_MS = 600_000;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempFile(): string {
  const directory = mkdtempSync(join(tmpdir(), 'leasehold-wake-'));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  return join(directory, 'queue.sqlite');
}

function open(db: string, config: Parameters<typeof openWorkQueue>[0]['config'] = {}): WorkQueue {
  const queue = openWorkQueue({ db, clock: new SystemClock(), config: { globalLimit: 8, perTenantLimit: 8, ...config } });
  cleanups.push(() => queue.close());
  return queue;
}

/** A worker whose only agent answers at once; it polls only every 10 minutes. */
function quickWorker(queue: WorkQueue, outcomes: RunOutcome[], options: { slots?: number; changeCheckMs?: number } = {}): Worker {
  const worker = new Worker({
    queue,
    workerId: `w-${cleanups.length}`,
    clock: new SystemClock(),
    waiter: new TimerWaiter(),
    slots: options.slots ?? 1,
    idleWaitMs: NEVER_POLL_MS,
    ...(options.changeCheckMs === undefined ? {} : { changeCheckMs: options.changeCheckMs }),
    tools: [],
    model: { decide: async () => ({ toolCalls: [], final: 'ok', usage: { inputTokens: 1, outputTokens: 1 } }) },
    onOutcome: (outcome) => outcomes.push(outcome),
  });
  const loop = worker.runLoop();
  cleanups.push(async () => {
    worker.stop();
    await loop;
    await worker.drain(5_000);
  });
  return worker;
}

/** Resolves once `done()` holds; a hang guard only (generous, never a measure of speed). */
async function until(what: string, done: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: the worker was not woken`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Lets the worker's first claim (empty) happen, so it is idle in its long wait when the work arrives. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

const task = (topic: string) => ({ tenant: 'acme', topic, version: 1, priority: 10, input: { topic } });

describe('Wakeup', () => {
  it('ends a wait when woken, keeps one wake that came while nobody waited, and reports a timeout as not woken', async () => {
    const wakeup = new Wakeup();
    const waiter = { sleep: () => new Promise<void>(() => {}) };
    const waiting = wakeup.wait(waiter);
    wakeup.wake();
    expect(await waiting).toBe(true);
    wakeup.wake();
    wakeup.wake();
    expect(await wakeup.wait(waiter)).toBe(true);
    expect(await wakeup.wait({ sleep: () => Promise.resolve() }, 5)).toBe(false);
  });

  it("uses a waiter's cancellable timer when it has one: a wake lets go of it, its firing ends the wait as not woken", async () => {
    const wakeup = new Wakeup();
    const timers: { ms: number; fire: () => void; cancelled: boolean }[] = [];
    const waiter = {
      sleep: () => Promise.reject(new Error('sleep is not used when the waiter has timer()')),
      timer(ms: number, fire: () => void) {
        const timer = { ms, fire, cancelled: false };
        timers.push(timer);
        return () => void (timer.cancelled = true);
      },
    };
    const woken = wakeup.wait(waiter, 8_000);
    wakeup.wake();
    expect(await woken).toBe(true);
    expect(timers).toMatchObject([{ ms: 8_000, cancelled: true }]);
    const timedOut = wakeup.wait(waiter, 1_000);
    timers[1]!.fire();
    expect(await timedOut).toBe(false);
    expect(timers[1]).toMatchObject({ ms: 1_000, cancelled: true });
    // A wake after the timer fired is kept for the next wait, as any wake that found nobody waiting.
    wakeup.wake();
    expect(await wakeup.wait(waiter, 1_000)).toBe(true);
  });
});

describe('W1: work starts at once (SQLite)', () => {
  it('a free slot claims the next task the moment a run ends, with no sleep between runs', async () => {
    const queue = open(tempFile());
    for (let i = 0; i < 5; i++) expect((await queue.enqueue(task(`backlog-${i}`))).ok).toBe(true);
    const outcomes: RunOutcome[] = [];
    quickWorker(queue, outcomes, { slots: 1 });
    await until('five runs one after another on one slot', () => outcomes.length === 5);
    expect(outcomes.every((outcome) => outcome.kind === 'completed')).toBe(true);
  });

  it('an enqueue by another queue of the same process on the same file wakes an idle worker (the in-process notice)', async () => {
    const file = tempFile();
    const outcomes: RunOutcome[] = [];
    // changeCheckMs far beyond the test: only the in-process notice can wake it.
    quickWorker(open(file), outcomes, { changeCheckMs: NEVER_POLL_MS });
    await settle();
    expect((await open(file).enqueue(task('from-another-queue'))).ok).toBe(true);
    await until('the task to run', () => outcomes.length === 1);
    expect(outcomes[0]).toMatchObject({ kind: 'completed' });
  });

  it.each([
    ['the kernel\'s notice that the WAL changed (fs.watch), checked against PRAGMA data_version', NEVER_POLL_MS],
    ['PRAGMA data_version, read every changeCheckMs', 10],
  ])('an enqueue by another process wakes an idle worker through %s', async (_how, changeCheckMs) => {
    const file = tempFile();
    const queue = open(file);
    const outcomes: RunOutcome[] = [];
    quickWorker(queue, outcomes, { changeCheckMs });
    await settle();
    // A process of its own: its commit reaches this one only through the file.
    const script = `import { openWorkQueue, SystemClock } from ${JSON.stringify(join(process.cwd(), 'src/index.ts'))};
      const queue = openWorkQueue({ db: ${JSON.stringify(file)}, clock: new SystemClock() });
      const answer = await queue.enqueue({ tenant: 'acme', topic: 'from-another-process', version: 1, priority: 10, input: {} });
      if (!answer.ok) { console.error(JSON.stringify(answer)); process.exit(1); }
      await queue.close();`;
    execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: 'pipe' });
    await until('the task to run', () => outcomes.length === 1);
    expect(outcomes[0]).toMatchObject({ kind: 'completed' });
  });

  it('the change counter moves for another connection\'s commit, not for the reader\'s own', async () => {
    const file = tempFile();
    const reader = open(file);
    const writer = open(file);
    const before = await reader.changeCounter();
    expect(typeof before).toBe('number');
    await reader.enqueue(task('own'));
    expect(await reader.changeCounter()).toBe(before);
    await writer.enqueue(task('other'));
    expect(await reader.changeCounter()).not.toBe(before);
  });

  it('a worker that stopped and drained leaves no timer behind: tool timeouts, heartbeats and idle waits are all let go', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const before = timers();
    const queue = openWorkQueue({ db: ':memory:', clock: new SystemClock() });
    for (let i = 0; i < 3; i++) await queue.enqueue(task(`t-${i}`));
    const outcomes: RunOutcome[] = [];
    const worker = new Worker({
      queue,
      workerId: 'w',
      clock: new SystemClock(),
      waiter: new TimerWaiter(),
      idleWaitMs: NEVER_POLL_MS,
      tools: [{ name: 'lookup', readOnly: true, call: async () => 'found' }],
      model: {
        decide: async ({ step }) =>
          step === 0 ? { toolCalls: [{ id: 'c', tool: 'lookup', args: {} }], usage: { inputTokens: 1, outputTokens: 1 } } : { toolCalls: [], final: 'ok', usage: { inputTokens: 1, outputTokens: 1 } },
      },
      onOutcome: (outcome) => outcomes.push(outcome),
    });
    const loop = worker.runLoop();
    await until('three runs', () => outcomes.length === 3);
    worker.stop();
    await loop;
    await worker.drain(1_000);
    await queue.close();
    // Each run raced a 30 s tool timeout and slept for 10 s heartbeats; the loop waited 10 minutes for news.
    expect(timers()).toBeLessThanOrEqual(before);
  });

  it('a worker stopped while idle leaves its long wait at once', async () => {
    const queue = open(tempFile());
    const worker = new Worker({ queue, workerId: 'w', clock: new SystemClock(), waiter: new TimerWaiter(), idleWaitMs: NEVER_POLL_MS, tools: [], model: { decide: async () => ({ toolCalls: [], final: 1, usage: { inputTokens: 1, outputTokens: 1 } }) } });
    const loop = worker.runLoop();
    await settle();
    worker.stop();
    await until('the loop to end', async () => (await Promise.race([loop.then(() => true), settle().then(() => false)])) === true);
  });
});

function serverUrl(): string {
  const url = process.env.LEASEHOLD_PG_URL;
  if (url === undefined || url === '') throw new Error('LEASEHOLD_PG_URL is not set: vitest.config.ts globalSetup should have set it');
  return url;
}

async function sql(text: string, values: unknown[] = []): Promise<pg.QueryResultRow[]> {
  const client = new pg.Client({ connectionString: serverUrl() });
  await client.connect();
  try {
    return (await client.query(text, values)).rows;
  } finally {
    await client.end();
  }
}

let schemas = 0;
async function freshSchema(): Promise<string> {
  const schema = `lh_wake_${process.pid}_${++schemas}`;
  await sql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  cleanups.push(async () => void (await sql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)));
  return schema;
}

function openPg(schema: string): WorkQueue {
  const queue = openWorkQueue({ db: serverUrl(), schema, clock: new SystemClock(), config: { globalLimit: 8, perTenantLimit: 8 } });
  cleanups.push(() => queue.close());
  return queue;
}

describe('W1: work starts at once (PostgreSQL, LISTEN/NOTIFY)', () => {
  it('an enqueue through another pool wakes an idle worker by NOTIFY, sent in the enqueue\'s transaction', async () => {
    const schema = await freshSchema();
    const outcomes: RunOutcome[] = [];
    quickWorker(openPg(schema), outcomes);
    await settle();
    expect((await openPg(schema).enqueue(task('notified'))).ok).toBe(true);
    await until('the task to run', () => outcomes.length === 1);
    expect(outcomes[0]).toMatchObject({ kind: 'completed' });
  });

  it('a queue opened on a pg Pool the caller keeps listens on a client of that pool, given back destroyed when the worker stops', async () => {
    const schema = await freshSchema();
    const pool = new pg.Pool({ connectionString: serverUrl() });
    cleanups.push(() => pool.end());
    const queue = openWorkQueue({ db: pool, schema, clock: new SystemClock(), config: { globalLimit: 8, perTenantLimit: 8 } });
    cleanups.push(() => queue.close());
    const outcomes: RunOutcome[] = [];
    quickWorker(queue, outcomes);
    await settle();
    expect((await openPg(schema).enqueue(task('through-a-pool'))).ok).toBe(true);
    await until('the task to run', () => outcomes.length === 1);
    expect(pool.totalCount).toBeGreaterThan(0);
  });

  it('notifies once per transaction that makes a task claimable, and never for a claim, a heartbeat, a complete or a repeat', async () => {
    const schema = await freshSchema();
    const queue = openPg(schema);
    await queue.snapshot();
    const heard: string[] = [];
    const listener = new pg.Client({ connectionString: serverUrl() });
    await listener.connect();
    cleanups.push(() => listener.end());
    listener.on('notification', (message) => heard.push(message.channel));
    const channel = claimableChannel(queueLockKey(schema));
    await listener.query(`LISTEN ${channel}`);
    const count = async () => {
      // A round trip on the listening connection delivers what arrived before it.
      await listener.query('SELECT 1');
      return heard.length;
    };
    const payloads: (string | undefined)[] = [];
    listener.on('notification', (message) => payloads.push(message.payload));
    expect((await queue.enqueue(task('a'))).ok).toBe(true);
    await until('the enqueue\'s notice', async () => (await count()) === 1);
    // Its payload is the transaction's id, which names the listener told first (PgListener), then the
    // handoff: the task is the only one live, so its row comes too, for a claim in one round trip.
    expect(payloads[0]).toMatch(/^\d+ \["\d+", \d+, "acme", "a", 1, "ready", 0, 0,/);
    expect((await queue.enqueue(task('a'))).ok).toBe(true);
    const claimed = await queue.claim('w1');
    if (!claimed.ok) throw new Error('nothing claimed');
    await queue.heartbeat(claimed.task.id, 'w1', claimed.task.generation);
    await queue.complete(claimed.task.id, 'w1', claimed.task.generation, 'ok');
    await queue.pauseTenant('acme', 'test');
    expect(await count()).toBe(1);
    await queue.resumeTenant('acme');
    await until('the resume\'s notice', async () => (await count()) === 2);
    // One transaction, one notice, however many tasks it made claimable: a supersede's replacement is one enqueue.
    expect((await queue.enqueue({ ...task('b'), version: 1 })).ok).toBe(true);
    expect((await queue.enqueue({ ...task('b'), version: 2 })).ok).toBe(true);
    await until('the two enqueues\' notices', async () => (await count()) === 4);
    expect(new Set(heard)).toEqual(new Set([channel]));
  });

  it('a LISTEN connection the server terminates reconnects, and the worker still starts new work', async () => {
    const schema = await freshSchema();
    const outcomes: RunOutcome[] = [];
    quickWorker(openPg(schema), outcomes);
    const producer = openPg(schema);
    await settle();
    expect((await producer.enqueue(task('before'))).ok).toBe(true);
    await until('the first task', () => outcomes.length === 1);
    // The LISTEN connection names itself after its channel (PgListener's roster).
    const named = `application_name = 'leasehold:${claimableChannel(queueLockKey(schema))}'`;
    const killed = await sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE ${named} AND pid <> pg_backend_pid()`);
    expect(killed.length).toBeGreaterThan(0);
    // Whether this notice finds the new connection or the reconnect's own look finds the task, it runs.
    expect((await producer.enqueue(task('after'))).ok).toBe(true);
    await until('the task enqueued after the LISTEN connection was killed', () => outcomes.length === 2);
    await until('LISTEN to be back', async () => (await sql(`SELECT 1 FROM pg_stat_activity WHERE ${named}`)).length > 0);
    expect((await producer.enqueue(task('after-reconnect'))).ok).toBe(true);
    await until('the task enqueued after the reconnect', () => outcomes.length === 3);
    expect(outcomes.every((outcome) => outcome.kind === 'completed')).toBe(true);
  });
});


describe('W1 at the edges', () => {
  const answer = { decide: async () => ({ toolCalls: [], final: 'ok', usage: { inputTokens: 1, outputTokens: 1 } }) };

  it('refuses a random that is not a Random', () => {
    const queue = open(':memory:');
    expect(() => new Worker({ queue, workerId: 'w', clock: new SystemClock(), waiter: new TimerWaiter(), tools: [], model: answer, random: {} as never })).toThrow(/random must be a Random/);
  });

  it('a queue that cannot be watched, or whose change counter fails, is polled: the task still runs', async () => {
    for (const variant of ['no watch, no counter', 'counter busy'] as const) {
      const real = open(':memory:');
      await real.enqueue(task(variant));
      const queue = new Proxy(real, {
        get(target, property, receiver) {
          if (variant === 'no watch, no counter' && (property === 'watch' || property === 'changeCounter')) return undefined;
          if (variant === 'counter busy' && property === 'changeCounter') return () => Promise.reject(new BusyError('changeCounter', 1));
          return Reflect.get(target, property, receiver);
        },
      }) as WorkQueue;
      const outcomes: RunOutcome[] = [];
      const worker = new Worker({ queue, workerId: 'w', clock: new SystemClock(), waiter: new TimerWaiter(), idleWaitMs: 10, tools: [], model: answer, onOutcome: (o) => outcomes.push(o) });
      const loop = worker.runLoop();
      await until(`the task to run (${variant})`, () => outcomes.length === 1);
      worker.stop();
      await loop;
    }
  });

  it('a claim that fails with an error the store does not call retryable ends the loop with it', async () => {
    const real = open(':memory:');
    const queue = new Proxy(real, {
      get(target, property, receiver) {
        if (property === 'claim') return () => Promise.reject(new TypeError('a bug in the claim'));
        return Reflect.get(target, property, receiver);
      },
    }) as WorkQueue;
    const worker = new Worker({ queue, workerId: 'w', clock: new SystemClock(), waiter: new TimerWaiter(), tools: [], model: answer });
    await expect(worker.runLoop()).rejects.toThrow('a bug in the claim');
  });

  it('a SQLite store keeps watching the file while one watcher is left, and a closed one watches and counts nothing', async () => {
    const file = tempFile();
    const queue = openWorkQueue({ db: file, clock: new SystemClock() });
    let heard = 0;
    const first = queue.watch(() => heard++);
    const second = queue.watch(() => heard++);
    first();
    await open(file).enqueue(task('heard by the one left'));
    expect(heard).toBe(1);
    second();
    await queue.close();
    expect(queue.watch(() => heard++)).toBeTypeOf('function');
    await expect(queue.changeCounter()).rejects.toThrow(/closed/);
    const store = SqliteStore.open(file, { busyTimeoutMs: 100, busyRetries: 0 }, () => 0);
    await store.close();
    expect(await store.changeCounter()).toBeUndefined();
    expect(store.watch(() => heard++)).toBeTypeOf('function');
  });
});
