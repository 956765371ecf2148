/**
 * The work queue against real OS processes (Q5, Q6, Q15, Q18; I1, I3, I11). No simulation here: each
 * child is `node --import tsx src/queue/__test-helpers__/fixtures/<name>.ts` with its own better-sqlite3 connection to one
 * real file database in a fresh temporary directory (better-sqlite3 cannot share `:memory:` across
 * connections). Children are released together by a `go` line on stdin and report every write they saw
 * commit as a JSON line on stdout; the test then checks those reports against the database and its event
 * log.
 *
 * How the event log is ordered. Event timestamps are integer ms taken from each process's clock, so a
 * release in one process and a claim in another often share a millisecond, and the queue reads the clock
 * before it waits for the write lock, so timestamps across processes can even run backwards against
 * commit order. Replaying by `at` would therefore either invent overlaps (closed intervals) or hide them
 * (half-open intervals). The implementation exposes a total order instead: `events.id` is an INTEGER
 * PRIMARY KEY assigned inside the writing transaction, and writers are serialised by BEGIN IMMEDIATE, so
 * it is the commit order. The replay reads each task's events through `queue.events(id)` and places them
 * by that id; it checks the id agrees with the per-task `seq`, and reports (without failing) how many
 * same-millisecond ties and timestamp inversions the id resolved.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { openWorkQueue, SystemClock } from '../index.ts';
import type { Clock } from '../ports.ts';
import type { QueueConfig, TaskEvent, TaskState, TaskView, WorkQueue } from './types.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '..', '..');

type Message = { type: string; [key: string]: unknown };

/** One fixture process and the JSON lines it printed. */
class Child {
  readonly messages: Message[] = [];
  stderr = '';
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly process: ChildProcessWithoutNullStreams;
  private readonly listeners = new Set<() => void>();

  constructor(
    readonly name: string,
    readonly args: string[],
  ) {
    this.process = spawn(process.execPath, ['--import', 'tsx', path.join(here, '__test-helpers__', 'fixtures', `${name}.ts`), ...args], {
      cwd: repoRoot,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    live.add(this);
    this.process.stdin.on('error', () => {}); // a killed child closes its stdin; later writes must not throw
    this.process.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    createInterface({ input: this.process.stdout }).on('line', (line) => {
      let message: Message;
      try {
        message = JSON.parse(line) as Message;
      } catch {
        message = { type: 'raw', line };
      }
      this.messages.push(message);
      for (const listener of this.listeners) listener();
    });
    this.closed = new Promise((resolve) => {
      this.process.on('close', (code, signal) => {
        this.exit = { code, signal };
        live.delete(this);
        for (const listener of this.listeners) listener();
        resolve(this.exit);
      });
    });
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  send(line: string): void {
    if (this.exit === undefined) this.process.stdin.write(`${line}\n`);
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (this.exit === undefined) this.process.kill(signal);
  }

  ofType(type: string): Message[] {
    return this.messages.filter((message) => message.type === type);
  }

  /** Resolves with the first message matching `predicate`; rejects on timeout or if the child ends first. */
  waitFor(predicate: (message: Message) => boolean, timeoutMs: number, what: string): Promise<Message> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        const found = this.messages.find(predicate);
        if (found) {
          finish();
          resolve(found);
          return true;
        }
        if (this.exit !== undefined) {
          finish();
          reject(new Error(`${this.describe()} ended before ${what}`));
          return true;
        }
        return false;
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what} from ${this.describe()}`));
      }, timeoutMs);
      const finish = (): void => {
        clearTimeout(timer);
        this.listeners.delete(listener);
      };
      const listener = (): void => void check();
      this.listeners.add(listener);
      check();
    });
  }

  describe(): string {
    const errors = this.ofType('error').map((message) => JSON.stringify(message));
    return `${this.name} ${this.args.join(' ')} (pid ${this.pid}, exit ${JSON.stringify(this.exit)})\n${errors.join('\n')}\nstderr: ${this.stderr.slice(-2000)}`;
  }
}

const live = new Set<Child>();
const tempDirs: string[] = [];

afterEach(async () => {
  const children = [...live];
  for (const child of children) child.kill('SIGKILL');
  await Promise.all(children.map((child) => child.closed));
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function freshDatabasePath(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leasehold-processes-'));
  tempDirs.push(dir);
  return path.join(dir, 'queue.sqlite');
}

/**
 * SPEC P1: the tests below that race processes run against both stores. A target is a `db` every
 * process opens (a SQLite file, or a PostgreSQL URL whose connections use a schema of the test's own)
 * and the store's own check that the database is intact.
 */
const STORES = ['sqlite', 'postgres'] as const;
type StoreName = (typeof STORES)[number];

interface Target {
  db: string;
  /** SQLite: PRAGMA integrity_check; PostgreSQL: the server keeps its own pages, nothing to check from here. */
  intact(): void;
}

const schemas: string[] = [];

/** The test run's PostgreSQL server (LEASEHOLD_PG_URL, or the throwaway one vitest's global setup started). */
function postgresUrl(): string {
  const url = process.env.LEASEHOLD_PG_URL;
  if (url === undefined || url === '') throw new Error('LEASEHOLD_PG_URL is not set: vitest.config.ts globalSetup should have set it');
  return url;
}

async function withPostgres<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function freshTarget(store: StoreName): Promise<Target> {
  if (store === 'sqlite') {
    const databasePath = freshDatabasePath();
    return { db: databasePath, intact: () => expect(integrityCheck(databasePath)).toEqual([{ integrity_check: 'ok' }]) };
  }
  const schema = `lh_processes_${process.pid}_${schemas.length}_${Math.floor(Math.random() * 1e9).toString(36)}`;
  schemas.push(schema);
  await withPostgres((client) => client.query(`CREATE SCHEMA ${schema}`));
  const base = postgresUrl();
  const db = `${base}${base.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  return { db, intact: () => {} };
}

afterEach(async () => {
  const dropped = schemas.splice(0);
  if (dropped.length > 0) await withPostgres(async (client) => void (await client.query(dropped.map((schema) => `DROP SCHEMA IF EXISTS ${schema} CASCADE;`).join(' '))));
});

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function expectCleanExit(child: Child): Promise<void> {
  const exit = await child.closed;
  expect(exit, child.describe()).toEqual({ code: 0, signal: null });
  expect(child.ofType('error'), child.describe()).toEqual([]);
}

/** Every task id from 1 to the highest (task ids are an AUTOINCREMENT, never reused). */
async function allTasks(queue: WorkQueue): Promise<TaskView[]> {
  return (await queue.snapshot()).tasks.slice().sort((a, b) => a.id - b.id);
}

function integrityCheck(databasePath: string): unknown[] {
  const raw = new Database(databasePath, { readonly: true });
  try {
    return raw.pragma('integrity_check', { simple: false }) as unknown[];
  } finally {
    raw.close();
  }
}

/** The table and index definitions: what the migrations built. */
function schemaFingerprint(databasePath: string): string {
  const raw = new Database(databasePath, { readonly: true });
  try {
    const rows = raw.prepare(`SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name`).all();
    const migrations = raw.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all();
    return JSON.stringify({ rows, migrations });
  } finally {
    raw.close();
  }
}

/** Q15: seq is contiguous from 1 for every task. */
function expectContiguousSeq(taskId: number, events: TaskEvent[]): void {
  expect(
    events.map((event) => event.seq),
    `task ${taskId} event seqs`,
  ).toEqual(events.map((_, index) => index + 1));
}

// ---------------------------------------------------------------------------------------------------
// The replay: occupancy intervals from the event log, in commit order.

interface PlacedEvent extends TaskEvent {
  order: number; // events.id: the commit order
  tenant: string;
}

interface ReplayReport {
  maxGlobal: number;
  maxByTenant: number;
  violations: string[];
  claims: Array<{ taskId: number; generation: number; workerId: string }>;
  finalStates: Map<number, TaskState>;
  sameMsTies: number;
  timestampInversions: number;
}

/** Reads every task's events through the public API and places each by its global id (the log's commit order). */
async function placedEvents(queue: WorkQueue, tasks: TaskView[]): Promise<PlacedEvent[]> {
  const orderOf = new Map<string, number>();
  for (const event of await queue.allEvents()) orderOf.set(`${event.taskId}/${event.seq}`, event.id);
  const placed: PlacedEvent[] = [];
  for (const task of tasks) {
    const events = await queue.events(task.id);
    expectContiguousSeq(task.id, events);
    let previousOrder = 0;
    for (const event of events) {
      const order = orderOf.get(`${event.taskId}/${event.seq}`);
      if (order === undefined) throw new Error(`event ${event.taskId}/${event.seq} has no row in the events table`);
      // The global order must agree with each task's own sequence, or it is not a commit order.
      expect(order, `events.id of task ${task.id} seq ${event.seq}`).toBeGreaterThan(previousOrder);
      previousOrder = order;
      placed.push({ ...event, order, tenant: task.tenant });
    }
  }
  expect(placed.length, 'events read through the API vs rows in the events table').toBe(orderOf.size);
  return placed.sort((a, b) => a.order - b.order);
}

/**
 * Replays state transitions (`data.from` -> `data.to`) in commit order. A task occupies a slot while
 * running or uncertain; an occupancy interval opens at `claimed` and closes at the event that leaves
 * running/uncertain. Checks: every transition starts from the replayed state (so no task is claimed
 * while already claimed), generations of claims strictly increase, and at no point are more than
 * `globalLimit` slots, or `perTenantLimit` slots of one tenant, occupied.
 */
function replayOccupancy(events: PlacedEvent[], limits: { globalLimit: number; perTenantLimit: number }): ReplayReport {
  const occupying = (state: TaskState | undefined): boolean => state === 'running' || state === 'uncertain';
  const state = new Map<number, TaskState>();
  const lastGeneration = new Map<number, number>();
  const byTenant = new Map<string, number>();
  const report: ReplayReport = {
    maxGlobal: 0,
    maxByTenant: 0,
    violations: [],
    claims: [],
    finalStates: state,
    sameMsTies: 0,
    timestampInversions: 0,
  };
  let global = 0;
  let previous: PlacedEvent | undefined;
  for (const event of events) {
    if (previous && event.at < previous.at) report.timestampInversions += 1;
    if (previous && event.at === previous.at && event.taskId !== previous.taskId) report.sameMsTies += 1;
    previous = event;
    const to = event.data.to as TaskState | undefined;
    const from = event.data.from as TaskState | undefined;
    if (to === undefined) continue; // progress events and the like do not move the task
    const current = state.get(event.taskId);
    if (current !== undefined && from !== current) {
      report.violations.push(`task ${event.taskId} event ${event.seq} '${event.type}' moves from ${from} but the task was ${current}`);
    }
    if (event.type === 'claimed') {
      const generation = event.data.generation as number;
      if (occupying(current)) report.violations.push(`double claim: task ${event.taskId} claimed (generation ${generation}) while ${current}`);
      if (!(generation > (lastGeneration.get(event.taskId) ?? 0))) {
        report.violations.push(`task ${event.taskId}: generation ${generation} after ${lastGeneration.get(event.taskId)}`);
      }
      lastGeneration.set(event.taskId, generation);
      report.claims.push({ taskId: event.taskId, generation, workerId: event.data.workerId as string });
    }
    const delta = Number(occupying(to)) - Number(occupying(current));
    global += delta;
    const tenantCount = (byTenant.get(event.tenant) ?? 0) + delta;
    byTenant.set(event.tenant, tenantCount);
    state.set(event.taskId, to);
    report.maxGlobal = Math.max(report.maxGlobal, global);
    report.maxByTenant = Math.max(report.maxByTenant, tenantCount);
    if (global > limits.globalLimit) report.violations.push(`${global} slots occupied after event ${event.order} (task ${event.taskId} ${event.type})`);
    if (tenantCount > limits.perTenantLimit) {
      report.violations.push(`${tenantCount} slots of tenant ${event.tenant} occupied after event ${event.order} (task ${event.taskId} ${event.type})`);
    }
  }
  return report;
}

describe('the occupancy replay (the checker used below) fails on bad histories', () => {
  let order = 0;
  const event = (taskId: number, tenant: string, type: string, from: TaskState, to: TaskState, data: Record<string, unknown> = {}): PlacedEvent => ({
    id: order + 1,
    taskId,
    seq: 0,
    type,
    at: 1_000,
    data: { from, to, ...data },
    order: ++order,
    tenant,
  });
  const claim = (taskId: number, tenant: string, generation: number): PlacedEvent =>
    event(taskId, tenant, 'claimed', 'ready', 'running', { generation, workerId: `w${taskId}` });
  const limits = { globalLimit: 2, perTenantLimit: 1 };

  it('accepts a good history', () => {
    const report = replayOccupancy(
      [
        claim(1, 'a', 1),
        claim(2, 'b', 1),
        event(1, 'a', 'retry', 'running', 'ready'),
        claim(3, 'a', 1),
        event(3, 'a', 'completed', 'running', 'done'),
        claim(1, 'a', 2),
        event(2, 'b', 'completed', 'running', 'done'),
        event(1, 'a', 'completed', 'running', 'done'),
      ],
      limits,
    );
    expect(report.violations).toEqual([]);
    expect(report.maxGlobal).toBe(2);
    expect(report.maxByTenant).toBe(1);
    expect([...report.finalStates.values()]).toEqual(['done', 'done', 'done']);
  });

  it('reports a double claim, a stale generation, a global breach and a tenant breach', () => {
    expect(replayOccupancy([claim(1, 'a', 1), claim(1, 'a', 2)], limits).violations.join('\n')).toMatch(/double claim/);
    expect(
      replayOccupancy([claim(1, 'a', 1), event(1, 'a', 'retry', 'running', 'ready'), claim(1, 'a', 1)], limits).violations.join('\n'),
    ).toMatch(/generation 1 after 1/);
    expect(replayOccupancy([claim(1, 'a', 1), claim(2, 'b', 1), claim(3, 'c', 1)], limits).violations.join('\n')).toMatch(/3 slots occupied/);
    expect(replayOccupancy([claim(1, 'a', 1), claim(2, 'a', 1)], limits).violations.join('\n')).toMatch(/2 slots of tenant a/);
    // Uncertain keeps its slot (Q6): a lease that lapsed does not make room.
    const lapsed = event(1, 'a', 'lease_expired', 'running', 'uncertain');
    expect(replayOccupancy([claim(1, 'a', 1), lapsed, claim(2, 'a', 1)], limits).violations.join('\n')).toMatch(/2 slots of tenant a/);
  });
});

describe('the queue across real processes', () => {
  it('smoke: a fixture runs under node --import tsx', async () => {
    // The harness itself: if this fails, every other test here fails for a reason that is not the queue.
    const child = new Child('opener', [`--db=${freshDatabasePath()}`, '--mode=race', '--worker=smoke']);
    await child.waitFor((message) => message.type === 'ready', 20_000, 'ready');
    child.send('go');
    const opened = await child.waitFor((message) => message.type === 'opened', 20_000, 'opened');
    expect(opened.enqueued).toMatchObject({ ok: true, status: 'enqueued' });
    await expectCleanExit(child);
  });

  it('Q18: two writers against a 20 ms busy timeout and a long BEGIN IMMEDIATE: retry or BusyError, never a crash or a lost write', async () => {
    const databasePath = freshDatabasePath();
    const config: Partial<QueueConfig> = { busyTimeoutMs: 20, busyRetries: 2, globalLimit: 10, perTenantLimit: 10, capacity: 10_000 };
    const ops = 250;
    // Create the schema first, so both children only ever contend on writes.
    await openWorkQueue({ db: databasePath, clock: new SystemClock(), config }).close();
    const holder = new Child('writer', [`--db=${databasePath}`, '--worker=holder', `--ops=${ops}`, '--holdEvery=80', '--holdMs=400', '--releaseFirst=true', `--config=${JSON.stringify(config)}`]);
    const plain = new Child('writer', [`--db=${databasePath}`, '--worker=plain', `--ops=${ops}`, `--config=${JSON.stringify(config)}`]);
    const writers = [holder, plain];
    await Promise.all(writers.map((child) => child.waitFor((message) => message.type === 'ready', 30_000, 'ready')));
    // The plain writer starts inside the holder's first hold, which ends only once the plain writer has
    // been told BusyError: the two overlap whatever the machine's load (the later holds, 400 ms each,
    // overlap as the processes' speeds let them).
    holder.send('go');
    await holder.waitFor((message) => message.type === 'hold' && message.phase === 'start', 30_000, 'the first hold');
    plain.send('go');
    await plain.waitFor((message) => message.type === 'busy', 30_000, 'a BusyError while the first hold lasts');
    holder.send('release');
    await Promise.all(writers.map((child) => child.waitFor((message) => message.type === 'finished', 60_000, 'finished')));
    await Promise.all(writers.map(expectCleanExit));

    const plainFinished = plain.ofType('finished')[0] as Message;
    // The holds (400 ms against a 20 ms timeout and 2 retries) must have surfaced as BusyError...
    expect(plainFinished.busy as number).toBeGreaterThan(0);
    // ...promptly: the retries are bounded, not an unbounded wait for the lock.
    expect(plainFinished.maxBusyWaitMs as number).toBeLessThan(1_000);
    expect(holder.ofType('hold').length).toBe(2 * Math.ceil(ops / 80));

    const reported = writers.flatMap((child) => child.messages);
    const enqueued = reported.filter((message) => message.type === 'enqueued');
    const completed = reported.filter((message) => message.type === 'completed');
    expect(enqueued).toHaveLength(2 * ops);
    // A call that threw BusyError wrote nothing: retrying it enqueued afresh rather than finding a duplicate.
    expect(enqueued.filter((message) => (message.result as { status?: string }).status !== 'enqueued')).toEqual([]);
    expect(completed.filter((message) => (message.outcome as { ok: boolean; outcome?: string }).outcome !== 'done')).toEqual([]);

    const queue = openWorkQueue({ db: databasePath, clock: new SystemClock(), config });
    const tasks = await allTasks(queue);
    expect(tasks).toHaveLength(2 * ops);
    for (const message of enqueued) {
      const taskId = (message.result as { taskId: number }).taskId;
      expect(await queue.get(taskId), `enqueued ${message.key}`).toMatchObject({ topic: message.key, tenant: message.tenant, version: 1 });
    }
    // Every task was claimed and completed exactly once, and each reported result is the stored one.
    expect(completed.map((message) => message.taskId).sort()).toEqual(tasks.map((task) => task.id).sort());
    for (const message of completed) {
      expect(await queue.get(message.taskId as number), `completed task ${message.taskId}`).toMatchObject({
        state: 'done',
        generation: 1,
        result: message.result,
      });
      expectContiguousSeq(message.taskId as number, await queue.events(message.taskId as number));
    }
    await queue.close();
    expect(integrityCheck(databasePath)).toEqual([{ integrity_check: 'ok' }]);
    console.info(`busy: holder saw ${(holder.ofType('finished')[0] as Message).busy} BusyErrors, plain saw ${plainFinished.busy} (longest ${plainFinished.maxBusyWaitMs} ms)`);
  });

  it('Q18: reopening keeps ready, running and uncertain tasks; opening again and again, and at once, is safe', async () => {
    const databasePath = freshDatabasePath();
    const config: Partial<QueueConfig> = { globalLimit: 6, perTenantLimit: 6, leaseMs: 60_000, heartbeatMs: 10_000 };
    let at = Date.now();
    const clock: Clock = { now: () => at };
    const first = openWorkQueue({ db: databasePath, clock, config });
    const ids: number[] = [];
    for (let i = 0; i < 10; i++) {
      const enqueued = await first.enqueue({ tenant: i % 2 ? 'odd' : 'even', topic: `topic-${i}`, version: 1, priority: 10 - i, input: { i } });
      if (!enqueued.ok) throw new Error(JSON.stringify(enqueued));
      ids.push(enqueued.taskId);
    }
    // Two claims whose leases then pass: uncertain.
    const lapsed = [await first.claim('w-lapsed-1'), await first.claim('w-lapsed-2')];
    at += 61_000;
    expect(await first.expireLeases()).toBe(2);
    // Two live claims (one heartbeated), one retried back to ready, one done, one cancelled.
    const live1 = await first.claim('w-live-1');
    const live2 = await first.claim('w-live-2');
    const retried = await first.claim('w-retry');
    const finished = await first.claim('w-done');
    if (!live1.ok || !live2.ok || !retried.ok || !finished.ok || !lapsed.every((claim) => claim.ok)) throw new Error('setup claims failed');
    at += 1_000;
    expect(await first.heartbeat(live1.task.id, 'w-live-1', live1.task.generation)).toMatchObject({ ok: true, leaseUntil: at + 60_000 });
    expect(await first.fail(retried.task.id, 'w-retry', retried.task.generation, { errorClass: 'rate_limited', message: 'slow down' })).toMatchObject({ ok: true, next: 'retry' });
    expect(await first.complete(finished.task.id, 'w-done', finished.task.generation, { answer: 42 })).toMatchObject({ ok: true, outcome: 'done' });
    const readyIds: number[] = [];
    for (const id of ids) if ((await first.get(id))?.state === 'ready' && id !== retried.task.id) readyIds.push(id);
    const toCancel = readyIds[0] as number;
    expect(await first.cancel(toCancel)).toMatchObject({ ok: true, state: 'cancelled' });
    const before = await Promise.all(ids.map((id) => first.get(id)));
    const eventsBefore = await Promise.all(ids.map((id) => first.events(id)));
    const states = before.map((view) => view?.state).sort();
    expect(states).toEqual(['cancelled', 'done', 'ready', 'ready', 'ready', 'ready', 'running', 'running', 'uncertain', 'uncertain']);
    await first.close();
    const fingerprint = schemaFingerprint(databasePath);

    // A new process, a new connection: the same tasks, states, generations, leases and workers.
    const dump = new Child('opener', [`--db=${databasePath}`, '--mode=dump', `--ids=${ids.join(',')}`]);
    const views = (await dump.waitFor((message) => message.type === 'views', 30_000, 'views')).views as Array<{ id: number; view: TaskView | null; events: number }>;
    await expectCleanExit(dump);
    expect(views.map((entry) => entry.view)).toEqual(before);
    expect(views.map((entry) => entry.events)).toEqual(eventsBefore.map((events) => events.length));

    // Twenty reopenings in a row (paths and, once, a handle): nothing changes, migrations do not re-run.
    for (let i = 0; i < 20; i++) {
      const handle = i === 10 ? new Database(databasePath) : undefined;
      const again = openWorkQueue({ db: handle ?? databasePath, clock, config });
      expect(await Promise.all(ids.map((id) => again.get(id)))).toEqual(before);
      await again.close();
      handle?.close();
      expect(schemaFingerprint(databasePath)).toBe(fingerprint);
    }

    // Two open at once: each sees the other's writes, and leases granted before the reopen still fence.
    const one = openWorkQueue({ db: databasePath, clock, config });
    const two = openWorkQueue({ db: databasePath, clock, config });
    const added = await one.enqueue({ tenant: 'even', topic: 'late', version: 1, priority: 0, input: {} });
    if (!added.ok) throw new Error(JSON.stringify(added));
    expect((await two.get(added.taskId))?.state).toBe('ready');
    expect(await two.heartbeat(live2.task.id, 'w-live-2', live2.task.generation + 1)).toMatchObject({ ok: false, error: 'stale_lease' });
    expect(await two.heartbeat(live2.task.id, 'w-live-2', live2.task.generation)).toMatchObject({ ok: true });
    expect(await two.complete(live2.task.id, 'w-live-2', live2.task.generation, { after: 'reopen' })).toMatchObject({ ok: true, outcome: 'done' });
    expect(await one.get(live2.task.id)).toMatchObject({ state: 'done', result: { after: 'reopen' } });
    const lapsedTask = lapsed[0] as { ok: true; task: { id: number; generation: number } };
    expect(await one.complete(lapsedTask.task.id, 'w-lapsed-1', lapsedTask.task.generation, {})).toMatchObject({ ok: false, error: 'stale_lease' });
    expect((await two.get(lapsedTask.task.id))?.state).toBe('uncertain');
    await one.close();
    await two.close();
    expect(schemaFingerprint(databasePath)).toBe(fingerprint);

    // Four processes opening one fresh file at the same instant: migrations race, and all succeed once.
    const racePath = freshDatabasePath();
    const racers = Array.from({ length: 4 }, (_, i) => new Child('opener', [`--db=${racePath}`, '--mode=race', `--worker=racer-${i}`]));
    await Promise.all(racers.map((child) => child.waitFor((message) => message.type === 'ready', 30_000, 'ready')));
    for (const child of racers) child.send('go');
    const opened = await Promise.all(racers.map((child) => child.waitFor((message) => message.type === 'opened', 30_000, 'opened')));
    await Promise.all(racers.map(expectCleanExit));
    expect(opened.map((message) => (message.enqueued as { status?: string }).status)).toEqual(['enqueued', 'enqueued', 'enqueued', 'enqueued']);
    expect(schemaFingerprint(racePath)).toBe(fingerprint);
    expect(integrityCheck(racePath)).toEqual([{ integrity_check: 'ok' }]);
  });
});

/** SPEC P1, issue 19: the races and kills of real processes, on each store. */
describe.each(STORES)('the queue across real processes on %s', (store) => {
  it('Q5/Q6: six processes claiming at the same instant take exactly globalLimit distinct tasks', async () => {
    const target = await freshTarget(store);
    const databasePath = target.db;
    const config: Partial<QueueConfig> = { globalLimit: 2, perTenantLimit: 2, busyTimeoutMs: 5_000 };
    const setup = openWorkQueue({ db: databasePath, clock: new SystemClock(), config });
    for (let i = 0; i < 20; i++) {
      expect(await setup.enqueue({ tenant: `tenant-${i % 6}`, topic: `topic-${i}`, version: 1, priority: i % 3, input: { i } })).toMatchObject({ ok: true });
    }
    await setup.close();

    const claimers = Array.from(
      { length: 6 },
      (_, i) => new Child('claimer', [`--db=${databasePath}`, `--worker=w${i}`, '--mode=once', `--seed=once-${i}`, `--config=${JSON.stringify(config)}`]),
    );
    await Promise.all(claimers.map((child) => child.waitFor((message) => message.type === 'ready', 30_000, 'ready')));
    for (const child of claimers) child.send('go'); // the barrier: all six are waiting on this line
    const claims = await Promise.all(claimers.map((child) => child.waitFor((message) => message.type === 'claim', 30_000, 'claim')));

    const results = claims.map((message) => message.result as { ok: boolean; task?: { id: number; generation: number }; reason?: string });
    const won = results.filter((result) => result.ok);
    expect(won, JSON.stringify(results)).toHaveLength(2);
    expect(new Set(won.map((result) => result.task?.id)).size).toBe(2);
    expect(won.map((result) => result.task?.generation)).toEqual([1, 1]);
    expect(results.filter((result) => !result.ok).map((result) => result.reason)).toEqual(['quota', 'quota', 'quota', 'quota']);

    // The database agrees: exactly those two are running, each held by the worker that was told so.
    const check = openWorkQueue({ db: databasePath, clock: new SystemClock(), config });
    const running = (await allTasks(check)).filter((task) => task.state === 'running');
    expect(running.map((task) => task.id).sort()).toEqual(won.map((result) => result.task?.id).sort());
    for (const [i, message] of claims.entries()) {
      const result = message.result as { ok: boolean; task?: { id: number } };
      if (result.ok) expect((await check.get(result.task?.id as number))?.workerId).toBe(`w${i}`);
    }
    expect((await check.snapshot()).occupied.global).toBe(2);
    await check.close();

    for (const child of claimers) child.send('exit');
    await Promise.all(claimers.map(expectCleanExit));
  });

  it('Q5/Q6/I1/I3: six processes drain 2,000 tasks with random completion; the event log shows no double claim and no quota breach', async () => {
    const target = await freshTarget(store);
    const databasePath = target.db;
    const taskCount = 2_000;
    const tenants = ['acme', 'globex', 'initech', 'umbrella', 'hooli'];
    const config: Partial<QueueConfig> = {
      globalLimit: 2,
      perTenantLimit: 1,
      capacity: 5_000,
      maxAttempts: 10,
      maxDeliveries: 10,
      baseDelayMs: 1,
      maxDelayMs: 4,
      busyTimeoutMs: 5_000,
    };
    const setup = openWorkQueue({ db: databasePath, clock: new SystemClock(), config });
    for (let i = 0; i < taskCount; i++) {
      const enqueued = await setup.enqueue({ tenant: tenants[i % tenants.length] as string, topic: `topic-${i}`, version: 1, priority: i % 7, input: { i } });
      expect(enqueued.ok).toBe(true);
    }
    await setup.close();

    const seed = `drain-${Date.now()}`;
    const claimers = Array.from(
      { length: 6 },
      (_, i) =>
        new Child('claimer', [
          `--db=${databasePath}`,
          `--worker=w${i}`,
          '--mode=drain',
          `--seed=${seed}-${i}`,
          '--failProbability=0.15',
          '--workProbability=0.3',
          `--config=${JSON.stringify(config)}`,
        ]),
    );
    await Promise.all(claimers.map((child) => child.waitFor((message) => message.type === 'ready', 30_000, 'ready')));
    const startedAt = Date.now();
    for (const child of claimers) child.send('go');

    // The children cannot tell "drained" from "the rest are in retry backoff", so the test counts the
    // completions they report and tells them to stop when every task has one.
    const completions = (): number => claimers.reduce((sum, child) => sum + child.ofType('complete').length, 0);
    // A bound, not a timing: a loaded machine drains slower, a stuck drain still ends the test.
    const deadline = Date.now() + 150_000;
    while (completions() < taskCount) {
      const crashed = claimers.find((child) => child.exit !== undefined);
      if (crashed) throw new Error(`a claimer ended early (seed ${seed}): ${crashed.describe()}`);
      if (Date.now() > deadline) throw new Error(`only ${completions()} of ${taskCount} completions after 150 s (seed ${seed})`);
      await delay(50);
    }
    const drainMs = Date.now() - startedAt;
    for (const child of claimers) child.send('stop');
    await Promise.all(claimers.map(expectCleanExit));

    // What the children saw: every complete and fail they made was accepted (no lease ever expired).
    const reported = claimers.flatMap((child) => child.messages);
    const claimed = reported.filter((message) => message.type === 'claim');
    const completed = reported.filter((message) => message.type === 'complete');
    const failed = reported.filter((message) => message.type === 'fail');
    expect(completed.filter((message) => (message.result as { ok: boolean; outcome?: string }).outcome !== 'done')).toEqual([]);
    expect(failed.filter((message) => (message.result as { ok: boolean; next?: string }).next !== 'retry')).toEqual([]);
    expect(claimed.length).toBe(completed.length + failed.length);
    // No two claims handed out the same (task, generation), and each task completed exactly once.
    expect(new Set(claimed.map((message) => `${message.taskId}/${message.generation}`)).size).toBe(claimed.length);
    expect(new Set(completed.map((message) => message.taskId)).size).toBe(taskCount);

    const check = openWorkQueue({ db: databasePath, clock: new SystemClock(), config });
    const tasks = await allTasks(check);
    expect(tasks).toHaveLength(taskCount);
    expect(tasks.filter((task) => task.state !== 'done').map((task) => `${task.id}:${task.state}`)).toEqual([]);

    const events = await placedEvents(check, tasks);
    const replay = replayOccupancy(events, { globalLimit: 2, perTenantLimit: 1 });
    // For the report only: the same replay ordered by timestamp (ties by commit order) instead.
    const byTime = [...events].sort((a, b) => a.at - b.at || a.order - b.order);
    const timeOrderedPhantoms = replayOccupancy(byTime, { globalLimit: 2, perTenantLimit: 1 }).violations.length;
    await check.close();
    expect(replay.violations.slice(0, 20)).toEqual([]);
    expect(replay.maxGlobal).toBe(2); // six eager claimers do fill both slots
    expect(replay.maxByTenant).toBe(1);
    expect([...replay.finalStates.values()].filter((state) => state !== 'done')).toEqual([]);
    // The log and the children agree claim for claim: same (task, generation, worker) sets.
    const fromLog = replay.claims.map((c) => `${c.taskId}/${c.generation}/${c.workerId}`).sort();
    const fromChildren = claimed.map((message) => `${message.taskId}/${message.generation}/${message.worker}`).sort();
    expect(fromLog).toEqual(fromChildren);
    console.info(
      `drain (seed ${seed}): ${taskCount} tasks, ${claimed.length} claims, ${failed.length} retries, ${events.length} events in ${drainMs} ms; ` +
        `same-ms ties between tasks resolved by events.id: ${replay.sameMsTies}; timestamps running backwards in commit order: ${replay.timestampInversions}; ` +
        `(phantom, cascading) violations a replay ordered by timestamp instead would report: ${timeOrderedPhantoms}`,
    );
  }, 240_000);

  it('Q18/I11: SIGKILL mid-work, 20 times: the database stays intact, no task is lost, expired leases become uncertain', async () => {
    const target = await freshTarget(store);
    const databasePath = target.db;
    const taskCount = 150;
    const config: Partial<QueueConfig> = {
      globalLimit: 100,
      perTenantLimit: 100,
      capacity: 1_000,
      maxAttempts: 50,
      maxDeliveries: 50,
      baseDelayMs: 1,
      maxDelayMs: 10,
      leaseMs: 600_000,
      heartbeatMs: 1_000,
    };
    const setup = openWorkQueue({ db: databasePath, clock: new SystemClock(), config });
    for (let i = 0; i < taskCount; i++) {
      expect((await setup.enqueue({ tenant: `tenant-${i % 4}`, topic: `topic-${i}`, version: 1, priority: i % 5, input: { i } })).ok).toBe(true);
    }
    await setup.close();

    const committedClaims: Message[] = [];
    const moments: string[] = [];
    for (let round = 0; round < 20; round++) {
      const child = new Child('holder', [`--db=${databasePath}`, `--worker=holder-${round}`, '--claims=3', `--seed=kill-${round}`, `--config=${JSON.stringify(config)}`]);
      // Varied moments: mid-claiming, at readiness, or 5..190 ms into the write loop.
      const moment = round % 5;
      if (moment === 0) {
        await child.waitFor((message) => message.type === 'claimed', 15_000, 'a first claim');
        moments.push('after first claim');
      } else {
        await child.waitFor((message) => message.type === 'ready', 15_000, 'ready');
        const waitMs = moment === 1 ? 0 : 5 + ((round * 37) % 186);
        if (waitMs > 0) await delay(waitMs);
        moments.push(`${waitMs} ms after ready`);
      }
      child.kill('SIGKILL');
      const exit = await child.closed;
      expect(exit.signal, child.describe()).toBe('SIGKILL'); // killed by us, not crashed before
      committedClaims.push(...child.ofType('claimed'));
    }

    target.intact();

    let at = Date.now();
    const clock: Clock = { now: () => at };
    const queue = openWorkQueue({ db: databasePath, clock, config });
    const tasks = await allTasks(queue);
    expect(tasks).toHaveLength(taskCount);
    const allowed: TaskState[] = ['ready', 'running', 'uncertain', 'done', 'failed', 'cancelled', 'expired', 'superseded'];
    expect(tasks.filter((task) => !allowed.includes(task.state))).toEqual([]);
    for (const task of tasks) {
      const events = await queue.events(task.id);
      expectContiguousSeq(task.id, events);
      const claims = events.filter((event) => event.type === 'claimed');
      expect(claims.map((event) => event.data.generation), `generations of task ${task.id}`).toEqual(claims.map((_, i) => i + 1));
      expect(task.generation).toBe(claims.length);
    }
    // Every claim a killed child saw commit is in the database (a commit survives SIGKILL).
    for (const claim of committedClaims) {
      const claimedEvent = (await queue.events(claim.taskId as number)).find((event) => event.type === 'claimed' && event.data.generation === claim.generation);
      expect(claimedEvent?.data.workerId, `claim ${JSON.stringify(claim)}`).toBe(claim.worker);
    }
    const snapshot = await queue.snapshot();
    expect(snapshot.live).toBe(tasks.filter((task) => ['ready', 'running', 'uncertain'].includes(task.state)).length);
    const running = tasks.filter((task) => task.state === 'running');
    expect(running.length).toBeGreaterThan(0);

    // Far past every lease: the dead holders' running tasks become uncertain, keeping generation and slot.
    at += 10 * 24 * 3_600_000;
    expect(await queue.expireLeases()).toBe(running.length);
    for (const task of running) {
      expect(await queue.get(task.id)).toMatchObject({ state: 'uncertain', generation: task.generation });
    }
    expect((await allTasks(queue)).filter((task) => task.state === 'running')).toEqual([]);
    expect((await queue.snapshot()).occupied.global).toBe(snapshot.occupied.global);
    await queue.close();
    target.intact();
    console.info(`kill on ${store}: ${committedClaims.length} claims by killed holders, ${running.length} tasks left running; moments: ${moments.join(', ')}`);
  });
});
