/**
 * Section `fleet`: an end-to-end fleet of 4 worker PROCESSES per contender, each worker through the
 * contender's own worker runtime, on one machine in one run, in interleaved rounds:
 *
 *   - leasehold-sqlite: the public `Worker` (src/worker/worker.ts) with default options (idleWaitMs 1 s
 *     doubling to maxIdleWaitMs 8 s while idle), slots 1, a model that answers at step 0 with no tool
 *     calls, on openWorkQueue({ db: <file> }) (one file the 4 processes and the enqueuing parent share,
 *     default durability); config capacity 1e8, globalLimit 64, perTenantLimit 64, 8 tenants round
 *     robin, priority 0: admission never limits four one-slot workers.
 *   - leasehold-pg: the same on openWorkQueue({ db: postgres://…, schema }).
 *   - graphile-worker 0.16.6: run({ concurrency: 1 }) at its defaults (LISTEN/NOTIFY, 2 s poll fallback);
 *     enqueue with WorkerUtils.addJob.
 *   - pg-boss 10.4.2: boss.work(queue, { batchSize: 1 }) at its default polling interval (2 s; its
 *     worker waits out the interval after every fetch, even one that found a job); enqueue with send;
 *     supervise and schedule off (no maintenance in the measurement).
 *   - bullmq 6.7.0 on the local Redis: new Worker(queue, handler, { concurrency: 1 }) (blocking fetch);
 *     enqueue with Queue.add.
 *   - floor-pg and floor-sqlite, the equal-guarantee floors (no targets; fleet-child.ts): the least a
 *     worker with Leasehold's claim guarantees (lease with expiry, fencing generation, global and
 *     per-tenant limits, fair tenant choice, an event per transition; pg-cycle.ts's floor) can do to
 *     start a task enqueued by another process. floor-pg is woken by LISTEN/NOTIFY (the enqueue notifies
 *     in its own transaction) and claims with one statement; floor-sqlite is woken by the kernel's notice
 *     that the WAL changed (fs.watch, inotify) checked against PRAGMA data_version, and claims in one
 *     transaction (a notice whose counter has not moved is checked again for up to 63 ms, since the WAL
 *     is written before its commit is visible). Both claim again as soon as a run ends and fall back to
 *     a 2 s poll. Their enqueue and run end are synced before they are acknowledged, as Leasehold's are, each
 *     the cheaper way (on SQLite: committed at NORMAL, then the WAL synced outside the write lock; on
 *     PostgreSQL: an asynchronous commit, then a flush). A queue with Leasehold's
 *     guarantees cannot start a task sooner or run a backlog faster than these, so floor ÷ graphile-worker (or ÷ BullMQ, ÷ pg-boss) is
 *     the most any such queue can reach against them here, and leasehold ÷ floor is how close it comes.
 *
 * The 4 processes (fleet-child.ts) each host one worker of every contender, so every fleet lives in
 * the same 4 processes; an idle runtime of one contender sits beside the one being measured (its idle
 * polling is part of the machine's noise, alike for all).
 *
 * A round gives every contender, in an order that rotates (and reverses every other round), two phases:
 *
 *   1. Pickup on an idle fleet. First the contender's fleet must have been idle for IDLE_MS (12 s; the
 *      section waits if not), so Leasehold's idle wait has reached its 8 s ceiling, and every fleet for
 *      SETTLE_MS (5 s), so no other contender's backlog is still being cleared up. Then PROBES tasks are
 *      enqueued one at a time by the parent process (a producer is another process), each after a pause
 *      of 300–900 ms (a fixed pseudo-random sequence, the same for every contender) and after the
 *      previous probe's handler ended. A sample is the wall time from just before the enqueue call to
 *      the moment a handler starts (Leasehold: its model is called), both as performance.timeOrigin +
 *      performance.now() in their own processes. A probe not started within PROBE_TIMEOUT_MS counts as
 *      that timeout (a lower bound) and is reported.
 *   2. Throughput on a backlog. The fleet's runtimes are stopped, BACKLOG trivial tasks are enqueued in
 *      bulk beforehand (untimed; each contender's bulk path: Leasehold one enqueue each, graphile-worker
 *      add_jobs, pg-boss insert, BullMQ addBulk, the floors one insert), then all 4 runtimes are started
 *      at once (t0: just before the start commands; a runtime's start-up is in the time). The rate is the
 *      handlers that ended after t0 over the time from t0 to the last one, or to the cut-off
 *      (THROUGHPUT_CAP_MS) when the backlog was not done by then; then the rest is removed through the
 *      contender's own API (Leasehold cancel, pg-boss purgeQueue, BullMQ drain) or by deleting ready rows.
 *
 * Figures (medians over rounds of the paired per-round ratio; absolute ms and rates are context):
 *   fleetPickupP50VsGraphile   = leasehold-pg pickup p50 ÷ graphile-worker's,   target <= 1.0
 *   fleetSqlitePickupVsBullmq  = leasehold-sqlite pickup p50 ÷ BullMQ's,        target <= 1.0
 *   fleetThroughputVsPgBoss    = leasehold-pg tasks/s ÷ pg-boss's,              target >= 1.0
 *   fleetThroughputVsGraphile, fleetThroughputVsBullmq, fleetSqliteThroughputVs*: informational (>= 0)
 *   fleetFloor*: the floors' ratios against the same contenders, informational.
 *
 * Rounds: 3 (fewer if --rounds says so), 1 with --quick (fewer probes, a smaller backlog, a shorter cap).
 * With PostgreSQL unreachable its contenders are skipped; with Redis unreachable BullMQ is. Clean-up
 * stops the children (killing any that hangs), drops the run's schemas and deletes its Redis keys.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Queue as BullQueue } from 'bullmq';
import { Logger, makeWorkerUtils, runMigrations, type WorkerUtils } from 'graphile-worker';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { openWorkQueue, SystemClock, type WorkQueue } from '../../src/index.ts';
import { FLEET_CONFIG, FLEET_CONTENDERS, FLEET_QUEUE, FLEET_SLOTS, FLEET_TENANTS, FLOOR_FALLBACK_POLL_MS, floorWalSync, wallMs, type FleetContender } from './fleet-child.ts';
import { pickupStats, roundRatios, throughputOf, type Throughput } from './fleet-stats.ts';
import { floorSchemaSql } from './pg-cycle-child.ts';
import { dropSchemas, flushPrefix, PG_URL, pgUnreachable, REDIS_URL, redisHostPort, redisUnreachable, runTag } from './pg-servers.ts';
import { metric, type BenchContext, type BenchSection, type ContextLine, type Metric, type SectionResult } from './registry.ts';
import { fmtRate, prng, sig } from './timing.ts';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '..', '..');
const CHILD = join(here, 'fleet-child.ts');
const PROCESSES = 4;
const IDLE_MS = 12_000;
/**
 * How long every fleet must have been quiet before a pickup phase starts. The processes are shared:
 * measured with FLEET_TRACE (fleet-child.ts), for about 3 s after floor-sqlite's backlog their event
 * loops stalled 100 to 500 ms at a time (garbage collection among it), and leasehold-sqlite, next in
 * the order, paid it in its first probes (pickups of 30 to 230 ms).
 */
const SETTLE_MS = 5_000;
const PROBE_TIMEOUT_MS = 20_000;
/** How long a child may take to answer a command (start, stop) before the section gives up on it. */
const REPLY_TIMEOUT_MS = 30_000;
const TEXT = 'please look at order 1234';

type Message = { type: string; [key: string]: unknown };

function sleep(ms: number): Promise<void> {
  return new Promise((res) => setTimeout(res, ms));
}

/** What the children report about handlers, by contender and task key: every start and end time. */
class Tracker {
  readonly starts = new Map<string, number[]>();
  readonly ends = new Map<string, number[]>();
  private readonly waiters = new Map<string, () => void>();

  record(m: Message): void {
    const id = `${String(m.c)}/${String(m.k)}`;
    const map = m.type === 's' ? this.starts : this.ends;
    const list = map.get(id) ?? [];
    list.push(m.t as number);
    map.set(id, list);
    this.waiters.get(`${m.type}:${id}`)?.();
  }

  /** The first time the handler of `key` started (or ended), waiting up to timeoutMs; undefined on timeout. */
  async first(kind: 's' | 'e', c: FleetContender, key: string, timeoutMs: number): Promise<number | undefined> {
    const id = `${c}/${key}`;
    const map = kind === 's' ? this.starts : this.ends;
    const seen = map.get(id);
    if (seen !== undefined) return seen[0];
    const w = `${kind}:${id}`;
    return new Promise((res) => {
      const timer = setTimeout(() => {
        this.waiters.delete(w);
        res(undefined);
      }, timeoutMs);
      this.waiters.set(w, () => {
        clearTimeout(timer);
        this.waiters.delete(w);
        res(map.get(id)![0]);
      });
    });
  }

  /** Keys whose handler started more than once (a task run twice). */
  duplicates(c: FleetContender): number {
    let n = 0;
    for (const [id, list] of this.starts) if (id.startsWith(`${c}/`) && list.length > 1) n++;
    return n;
  }
}

class Child {
  private readonly proc: ChildProcessWithoutNullStreams;
  private readonly inbox: Message[] = [];
  private waiter: ((m: Message) => void) | undefined;
  stderr = '';
  exited = false;

  constructor(readonly index: number, args: string[], tracker: Tracker) {
    this.proc = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], { cwd: repoRoot, stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc.stdin.on('error', () => undefined);
    this.proc.stderr.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString()).slice(-4000)));
    createInterface({ input: this.proc.stdout }).on('line', (line) => {
      let m: Message;
      try {
        m = JSON.parse(line) as Message;
      } catch {
        return; // a library's stray console output
      }
      if (m.type === 's' || m.type === 'e') tracker.record(m);
      else this.deliver(m);
    });
    this.proc.on('close', (code, signal) => {
      this.exited = true;
      this.deliver({ type: 'exit', code, signal });
    });
  }

  private deliver(m: Message): void {
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w(m);
    } else this.inbox.push(m);
  }

  /** The next message, which must be of `type` within timeoutMs (else an error with the child's stderr). */
  async next(type: string, timeoutMs = REPLY_TIMEOUT_MS): Promise<Message> {
    let timer: NodeJS.Timeout | undefined;
    const m =
      this.inbox.shift() ??
      (await new Promise<Message>((res) => {
        this.waiter = res;
        timer = setTimeout(() => {
          this.waiter = undefined;
          res({ type: 'timeout' });
        }, timeoutMs);
      }));
    clearTimeout(timer);
    if (m.type !== type) {
      throw new Error(`fleet worker ${this.index}: expected ${type}, got ${JSON.stringify(m).slice(0, 2000)}; stderr: ${this.stderr.slice(-1500)}`);
    }
    return m;
  }

  send(line: string): void {
    this.proc.stdin.write(`${line}\n`);
  }

  /** Asks the child to quit; kills it if it has not exited within 5 s. */
  async stop(): Promise<void> {
    if (this.exited) return;
    const closed = new Promise<void>((res) => this.proc.once('close', () => res()));
    this.send('quit');
    this.proc.stdin.end();
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 5000);
    await closed;
    clearTimeout(timer);
  }
}

/** The parent's side of a contender: how a producer enqueues, and how a cut-off backlog is removed. */
interface Producer {
  /** Enqueues one task; returns the key its handler will report. */
  enqueue(key: string, n: number): Promise<string>;
  /** Enqueues many tasks in the contender's bulk path; returns the keys their handlers will report. */
  fill(keys: readonly string[]): Promise<string[]>;
  /** Removes the tasks of a cut-off backlog that have not run (given by reported key). */
  purge(keys: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

const payload = (k: string) => ({ k, text: TEXT });

function leaseholdProducer(queue: WorkQueue): Producer {
  const ids = new Map<string, number>();
  const enqueue = async (key: string, n: number) => {
    const r = await queue.enqueue({ tenant: `t${n % FLEET_TENANTS}`, topic: key, version: 1, priority: 0, input: payload(key) });
    if (!r.ok || r.status !== 'enqueued') throw new Error(`leasehold enqueue failed: ${JSON.stringify(r)}`);
    ids.set(key, r.taskId);
    return key;
  };
  // Several calls in flight at once (the store serialises them): the fill is untimed, and this is quicker.
  const inBatches = async <T,>(items: readonly T[], f: (item: T, i: number) => Promise<unknown>) => {
    for (let i = 0; i < items.length; i += 32) await Promise.all(items.slice(i, i + 32).map((item, j) => f(item, i + j)));
  };
  return {
    enqueue,
    async fill(keys) {
      await inBatches(keys, (k, i) => enqueue(k, i));
      return [...keys];
    },
    async purge(keys) {
      await inBatches(keys, async (k) => {
        const id = ids.get(k);
        if (id !== undefined) await queue.cancel(id);
      });
    },
    close: () => queue.close(),
  };
}

/** The floor's SQLite tables, as pg-cycle-child.ts floorSchemaSql's on PostgreSQL. */
function floorSqliteSchema(db: Database.Database): void {
  db.exec(`
    create table jobs (id integer primary key, tenant text not null, state text not null default 'ready', priority int not null default 0,
      enqueued_at int not null, worker_id text, generation int not null default 0, lease_until int, input text not null, result text);
    create index jobs_ready on jobs (state, tenant, priority desc, enqueued_at, id);
    create table tenant_running (tenant text primary key, running int not null default 0, served_at int not null default 0);
    create table counters (name text primary key, value int not null);
    insert into counters values ('running', 0);
    create table events (id integer primary key, job_id int not null, type text not null, at int not null, worker_id text, generation int);`);
  const t = db.prepare('insert into tenant_running (tenant) values (?)');
  for (let i = 0; i < FLEET_TENANTS; i++) t.run(`t${i}`);
}

interface Setup {
  producers: Map<FleetContender, Producer>;
  childArgs: string[];
  schemas: string[];
  bullPrefix?: string;
}

/**
 * A SQLite contender's folder, its own: Leasehold's WAL watch watches the folder of its file, and
 * another contender's backlog written beside it would wake it on every write.
 */
function folderOf(tmpDir: string, name: FleetContender): string {
  const folder = join(tmpDir, name);
  mkdirSync(folder, { recursive: true });
  return folder;
}

async function setUp(ctx: BenchContext, names: readonly FleetContender[]): Promise<Setup> {
  const clock = new SystemClock();
  const producers = new Map<FleetContender, Producer>();
  const schemas: string[] = [];
  const childArgs = [`--url=${PG_URL}`, `--contenders=${names.join(',')}`];
  const setup: Setup = { producers, childArgs, schemas };
  for (const name of names) {
    if (name === 'leasehold-sqlite') {
      const file = join(folderOf(ctx.tmpDir, name), 'leasehold.db');
      const queue = openWorkQueue({ db: file, clock, config: { ...FLEET_CONFIG } });
      await queue.snapshot();
      producers.set(name, leaseholdProducer(queue));
      childArgs.push(`--lh-file=${file}`);
    } else if (name === 'leasehold-pg') {
      const schema = runTag('lh_fleet');
      schemas.push(schema);
      const queue = openWorkQueue({ db: PG_URL, schema, clock, config: { ...FLEET_CONFIG } });
      await queue.snapshot();
      producers.set(name, leaseholdProducer(queue));
      childArgs.push(`--lh-schema=${schema}`);
    } else if (name === 'graphile-worker') {
      const schema = runTag('lh_fleet_gw');
      schemas.push(schema);
      const logger = new Logger(() => () => undefined);
      await runMigrations({ connectionString: PG_URL, schema, logger });
      const utils: WorkerUtils = await makeWorkerUtils({ connectionString: PG_URL, schema, logger });
      producers.set(name, {
        async enqueue(key) {
          await utils.addJob(FLEET_QUEUE, payload(key));
          return key;
        },
        async fill(keys) {
          await utils.withPgClient((c) =>
            c.query(
              `select count(*) from ${schema}.add_jobs(array(select row($1::text, json_build_object('k', k, 'text', $3::text), null, null, null, null, null, null)::${schema}.job_spec from unnest($2::text[]) k))`,
              [FLEET_QUEUE, keys, TEXT],
            ),
          );
          return [...keys];
        },
        async purge() {
          await utils.withPgClient((c) => c.query(`delete from ${schema}._private_jobs where locked_at is null`));
        },
        close: async () => utils.release(),
      });
      childArgs.push(`--gw-schema=${schema}`);
    } else if (name === 'pg-boss') {
      const schema = runTag('lh_fleet_boss');
      schemas.push(schema);
      const boss = new PgBoss({ connectionString: PG_URL, schema, supervise: false, schedule: false, migrate: true, max: 2 });
      boss.on('error', () => undefined);
      await boss.start();
      await boss.createQueue(FLEET_QUEUE);
      producers.set(name, {
        async enqueue(key) {
          if ((await boss.send(FLEET_QUEUE, payload(key))) === null) throw new Error('pg-boss send returned null');
          return key;
        },
        async fill(keys) {
          await boss.insert(keys.map((k) => ({ name: FLEET_QUEUE, data: payload(k) })));
          return [...keys];
        },
        async purge() {
          await boss.purgeQueue(FLEET_QUEUE);
        },
        close: () => boss.stop({ graceful: false, close: true, wait: true }),
      });
      childArgs.push(`--boss-schema=${schema}`);
    } else if (name === 'bullmq') {
      const prefix = runTag('lhfleet');
      setup.bullPrefix = prefix;
      const redis = redisHostPort();
      const queue = new BullQueue(FLEET_QUEUE, { connection: { ...redis, maxRetriesPerRequest: null }, prefix });
      await queue.waitUntilReady();
      producers.set(name, {
        async enqueue(key) {
          await queue.add(FLEET_QUEUE, payload(key));
          return key;
        },
        async fill(keys) {
          await queue.addBulk(keys.map((k) => ({ name: FLEET_QUEUE, data: payload(k) })));
          return [...keys];
        },
        async purge() {
          await queue.drain();
        },
        close: () => queue.close(),
      });
      childArgs.push(`--bull-prefix=${prefix}`, `--redis-host=${redis.host}`, `--redis-port=${redis.port}`);
    } else if (name === 'floor-pg') {
      const schema = runTag('lh_fleet_floor');
      schemas.push(schema);
      const client = new pg.Client({ connectionString: PG_URL });
      client.on('error', () => undefined);
      await client.connect();
      await client.query(`create schema ${schema}`);
      await client.query(floorSchemaSql(schema));
      producers.set(name, {
        async enqueue(key, n) {
          // The insert and its notification in one statement: the notification is sent when it commits.
          const { rows } = await client.query(
            `with i as (insert into ${schema}.jobs (tenant, enqueued_at, input) values ($1, $2, $3) returning id) select id, pg_notify($4, '') from i`,
            [`t${n % FLEET_TENANTS}`, Date.now(), payload(key), schema],
          );
          return `id:${rows[0].id}`;
        },
        async fill(keys) {
          const { rows } = await client.query(
            `insert into ${schema}.jobs (tenant, enqueued_at, input) select 't' || (o % ${FLEET_TENANTS}), $2, json_build_object('k', k, 'text', $3::text) from unnest($1::text[]) with ordinality as u(k, o) returning id`,
            [keys, Date.now(), TEXT],
          );
          return rows.map((r: { id: string }) => `id:${r.id}`);
        },
        async purge() {
          await client.query(`delete from ${schema}.jobs where state = 'ready'`);
        },
        close: () => client.end(),
      });
      childArgs.push(`--floor-schema=${schema}`);
    } else if (name === 'floor-sqlite') {
      const file = join(folderOf(ctx.tmpDir, name), 'floor.db');
      const db = new Database(file);
      db.pragma('journal_mode = WAL');
      // An enqueue is synced before it is acknowledged, as Leasehold's default durability syncs it:
      // committed at NORMAL, then the WAL synced, outside the write lock (floorWalSync).
      db.pragma('synchronous = NORMAL');
      floorSqliteSchema(db);
      const syncWal = floorWalSync(file);
      const insert = db.prepare('insert into jobs (tenant, enqueued_at, input) values (?, ?, ?)');
      const insertAll = db.transaction((keys: readonly string[]) => keys.forEach((k, i) => insert.run(`t${i % FLEET_TENANTS}`, Date.now(), JSON.stringify(payload(k)))));
      producers.set(name, {
        async enqueue(key, n) {
          insert.run(`t${n % FLEET_TENANTS}`, Date.now(), JSON.stringify(payload(key)));
          syncWal();
          return key;
        },
        async fill(keys) {
          insertAll(keys);
          syncWal();
          return [...keys];
        },
        async purge() {
          db.prepare(`delete from jobs where state = 'ready'`).run();
        },
        async close() {
          db.close();
        },
      });
      childArgs.push(`--floor-file=${file}`);
    }
  }
  return setup;
}

interface RoundFigures {
  pickup: number[];
  timeouts: number;
  throughput: Throughput;
}

async function command(children: readonly Child[], cmd: 'start' | 'stop', name: FleetContender): Promise<void> {
  for (const c of children) c.send(`${cmd} ${name}`);
  await Promise.all(children.map((c) => c.next(cmd === 'start' ? 'started' : 'stopped')));
}

async function run(ctx: BenchContext): Promise<SectionResult> {
  const pgDown = await pgUnreachable();
  const redisDown = await redisUnreachable();
  if (pgDown !== undefined) ctx.progress(`  PostgreSQL contenders SKIPPED: ${pgDown}`);
  if (redisDown !== undefined) ctx.progress(`  bullmq SKIPPED: ${redisDown}`);
  const onPg = new Set<FleetContender>(['leasehold-pg', 'graphile-worker', 'pg-boss', 'floor-pg']);
  const names = FLEET_CONTENDERS.filter((n) => !(pgDown !== undefined && onPg.has(n)) && !(redisDown !== undefined && n === 'bullmq'));

  const quick = ctx.options.quick;
  const rounds = quick ? 1 : Math.max(1, Math.min(ctx.options.rounds, 3));
  const probes = quick ? 3 : 12;
  const backlog = quick ? 300 : 2000;
  const capMs = quick ? 5_000 : 10_000;

  const tracker = new Tracker();
  const setup = await setUp(ctx, names);
  const children: Child[] = [];
  try {
    for (let i = 0; i < PROCESSES; i++) children.push(new Child(i, [...setup.childArgs, `--index=${i}`], tracker));
    ctx.progress(`  spawning ${PROCESSES} worker processes, each with a worker of: ${names.join(', ')}`);
    await Promise.all(children.map((c) => c.next('ready', 60_000)));
    const lastActive = new Map<FleetContender, number>();
    for (const n of names) {
      await command(children, 'start', n);
      lastActive.set(n, wallMs());
    }

    const figures: Record<string, RoundFigures[]> = Object.fromEntries(names.map((n) => [n, []]));
    const firstProbe: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
    const orders: string[][] = [];
    for (let r = 0; r < rounds; r++) {
      const rotated = names.map((_, i) => names[(i + r) % names.length]!);
      const order = r % 2 === 1 ? rotated.reverse() : rotated;
      orders.push(order);
      for (const name of order) {
        const producer = setup.producers.get(name)!;
        const idleFor = wallMs() - lastActive.get(name)!;
        const quietFor = wallMs() - Math.max(...lastActive.values());
        const waitMs = Math.max(IDLE_MS - idleFor, SETTLE_MS - quietFor);
        if (waitMs > 0) {
          ctx.progress(`  ${name}: waiting ${(waitMs / 1000).toFixed(1)} s for its fleet to be idle ${IDLE_MS / 1000} s and every fleet ${SETTLE_MS / 1000} s`);
          await sleep(waitMs);
        }
        // Phase 1: pickup. The pauses are the same sequence for every contender in a round.
        const pause = prng(1000 + r);
        const pickup: number[] = [];
        let timeouts = 0;
        for (let i = 0; i < probes; i++) {
          if (i > 0) await sleep(300 + Math.floor(pause() * 600));
          const key = `p${r}-${i}`;
          const before = wallMs();
          const reported = await producer.enqueue(key, i);
          if (process.env.FLEET_TRACE) appendFileSync(`${process.env.FLEET_TRACE}-parent.jsonl`, `${JSON.stringify({ c: name, key, before, after: wallMs() })}\n`);
          const started = await tracker.first('s', name, reported, PROBE_TIMEOUT_MS - (wallMs() - before));
          if (started === undefined) {
            timeouts++;
            pickup.push(PROBE_TIMEOUT_MS);
            continue;
          }
          pickup.push(started - before);
          if (i === 0) firstProbe[name]!.push(started - before);
          if ((await tracker.first('e', name, reported, PROBE_TIMEOUT_MS)) === undefined) throw new Error(`${name}: probe ${key} started but its handler did not end`);
        }
        // Phase 2: throughput on a backlog written while the fleet was stopped.
        await command(children, 'stop', name);
        const keys = Array.from({ length: backlog }, (_, i) => `b${r}-${i}`);
        const reported = await producer.fill(keys);
        const t0 = wallMs();
        for (const c of children) c.send(`start ${name}`);
        const allEnded = Promise.all(reported.map((k) => tracker.first('e', name, k, capMs + (t0 - wallMs()))));
        const started = Promise.all(children.map((c) => c.next('started')));
        await allEnded;
        await started;
        const ends = reported.map((k) => tracker.ends.get(`${name}/${k}`)?.[0]).filter((t): t is number => t !== undefined);
        const cut = ends.length < backlog;
        const throughput = throughputOf({ t0, ends, backlog, ...(cut ? { cutAt: t0 + capMs } : {}) });
        if (cut) {
          // What was not run is removed with the fleet stopped, so the next phase starts on an empty queue.
          await command(children, 'stop', name);
          await producer.purge(reported.filter((k) => !tracker.ends.has(`${name}/${k}`)));
          await command(children, 'start', name);
        }
        lastActive.set(name, wallMs());
        figures[name]!.push({ pickup, timeouts, throughput });
        const s = pickupStats(pickup, timeouts);
        ctx.progress(
          `  round ${r + 1}/${rounds} ${name}: pickup p50 ${s.p50.toFixed(1)} ms, max ${s.max.toFixed(1)} ms${timeouts > 0 ? ` (${timeouts} timed out)` : ''}; ` +
            `${fmtRate(throughput.rate)} (${throughput.counted}${throughput.complete ? '' : ` of ${backlog}, cut at ${capMs / 1000} s`})`,
        );
      }
    }
    return report(names, figures, firstProbe, orders, tracker, { rounds, probes, backlog, capMs, pgDown, redisDown });
  } finally {
    await Promise.all(children.map((c) => c.stop().catch(() => undefined)));
    for (const p of setup.producers.values()) await p.close().catch(() => undefined);
    if (setup.schemas.length > 0) await dropSchemas(PG_URL, setup.schemas).catch((e) => ctx.progress(`  WARNING: dropping schemas: ${String(e)}`));
    if (setup.bullPrefix !== undefined) await flushPrefix(REDIS_URL, setup.bullPrefix).catch((e) => ctx.progress(`  WARNING: flushing redis: ${String(e)}`));
  }
}

export const FLEET_TARGETS = {
  fleetPickupP50VsGraphile: { op: '<=', value: 1.0 },
  fleetSqlitePickupVsBullmq: { op: '<=', value: 1.0 },
  fleetThroughputVsPgBoss: { op: '>=', value: 1.0 },
  informational: { op: '>=', value: 0 },
} as const;

function report(
  names: readonly FleetContender[],
  figures: Record<string, RoundFigures[]>,
  firstProbe: Record<string, number[]>,
  orders: string[][],
  tracker: Tracker,
  run: { rounds: number; probes: number; backlog: number; capMs: number; pgDown?: string; redisDown?: string },
): SectionResult {
  const has = (n: FleetContender) => names.includes(n);
  const p50s = (n: FleetContender) => figures[n]!.map((f) => pickupStats(f.pickup).p50);
  const rates = (n: FleetContender) => figures[n]!.map((f) => f.throughput.rate);
  const metrics: Metric[] = [];
  const ratiosRaw: Record<string, number[]> = {};
  const add = (id: string, label: string, a: FleetContender, b: FleetContender, of: (n: FleetContender) => number[], target: { op: '<=' | '>='; value: number }) => {
    if (!has(a) || !has(b)) return;
    const { ratios, median } = roundRatios(of(a), of(b));
    ratiosRaw[id] = ratios.map((v) => sig(v));
    metrics.push(metric(id, label, median, target, ratios));
  };
  const info = FLEET_TARGETS.informational;
  add('fleetPickupP50VsGraphile', 'leasehold-pg pickup p50 ÷ graphile-worker pickup p50 (idle fleet of 4 processes, lower is better)', 'leasehold-pg', 'graphile-worker', p50s, FLEET_TARGETS.fleetPickupP50VsGraphile);
  add('fleetSqlitePickupVsBullmq', 'leasehold-sqlite pickup p50 ÷ BullMQ pickup p50 (idle fleet of 4 processes, lower is better)', 'leasehold-sqlite', 'bullmq', p50s, FLEET_TARGETS.fleetSqlitePickupVsBullmq);
  add('fleetThroughputVsPgBoss', 'leasehold-pg tasks/s ÷ pg-boss tasks/s (4 processes on a backlog, higher is better)', 'leasehold-pg', 'pg-boss', rates, FLEET_TARGETS.fleetThroughputVsPgBoss);
  add('fleetThroughputVsGraphile', 'leasehold-pg tasks/s ÷ graphile-worker tasks/s, informational', 'leasehold-pg', 'graphile-worker', rates, info);
  add('fleetThroughputVsBullmq', 'leasehold-pg tasks/s ÷ BullMQ tasks/s, informational', 'leasehold-pg', 'bullmq', rates, info);
  add('fleetSqliteThroughputVsPgBoss', 'leasehold-sqlite tasks/s ÷ pg-boss tasks/s, informational', 'leasehold-sqlite', 'pg-boss', rates, info);
  add('fleetSqliteThroughputVsGraphile', 'leasehold-sqlite tasks/s ÷ graphile-worker tasks/s, informational', 'leasehold-sqlite', 'graphile-worker', rates, info);
  add('fleetSqliteThroughputVsBullmq', 'leasehold-sqlite tasks/s ÷ BullMQ tasks/s, informational', 'leasehold-sqlite', 'bullmq', rates, info);
  add('fleetFloorPgPickupVsGraphile', 'floor-pg pickup p50 ÷ graphile-worker (the least a queue with Leasehold\'s guarantees can do on PostgreSQL), informational', 'floor-pg', 'graphile-worker', p50s, info);
  add('fleetFloorSqlitePickupVsBullmq', 'floor-sqlite pickup p50 ÷ BullMQ (the least with Leasehold\'s guarantees on SQLite), informational', 'floor-sqlite', 'bullmq', p50s, info);
  add('fleetFloorPgThroughputVsPgBoss', 'floor-pg tasks/s ÷ pg-boss tasks/s, informational', 'floor-pg', 'pg-boss', rates, info);
  add('fleetPickupVsFloorPg', 'leasehold-pg pickup p50 ÷ floor-pg pickup p50, informational', 'leasehold-pg', 'floor-pg', p50s, info);
  add('fleetSqlitePickupVsFloorSqlite', 'leasehold-sqlite pickup p50 ÷ floor-sqlite pickup p50, informational', 'leasehold-sqlite', 'floor-sqlite', p50s, info);
  add('fleetThroughputVsFloorPg', 'leasehold-pg tasks/s ÷ floor-pg tasks/s, informational', 'leasehold-pg', 'floor-pg', rates, info);
  add('fleetSqliteThroughputVsFloorSqlite', 'leasehold-sqlite tasks/s ÷ floor-sqlite tasks/s, informational', 'leasehold-sqlite', 'floor-sqlite', rates, info);

  const context: ContextLine[] = [];
  const ms = (v: number) => (Number.isFinite(v) ? `${v < 10 ? v.toFixed(2) : v.toFixed(0)} ms` : String(v));
  for (const n of names) {
    const all = figures[n]!.flatMap((f) => f.pickup);
    const s = pickupStats(all, figures[n]!.reduce((a, f) => a + f.timeouts, 0));
    const t = figures[n]!.map((f) => f.throughput);
    const cut = t.filter((x) => !x.complete).length;
    context.push({
      label: `${n}`,
      value:
        `pickup p50 ${ms(s.p50)}, p99 ${ms(s.p99)} (n ${s.n}${s.timeouts > 0 ? `, ${s.timeouts} timed out at ${PROBE_TIMEOUT_MS / 1000} s` : ''}); ` +
        `after ≥${IDLE_MS / 1000} s idle: ${firstProbe[n]!.map(ms).join(', ')}; ` +
        `throughput ${t.map((x) => fmtRate(x.rate)).join(', ')}${cut > 0 ? ` (${cut} of ${t.length} rounds cut at ${run.capMs / 1000} s: ${t.map((x) => x.counted).join(', ')} tasks)` : ''}; ` +
        `tasks run twice: ${tracker.duplicates(n)}`,
    });
  }
  context.push(
    { label: 'fleet', value: `${PROCESSES} processes, slots ${FLEET_SLOTS} each, every contender at its worker runtime's defaults otherwise` },
    { label: 'leasehold config', value: `${JSON.stringify(FLEET_CONFIG)}, ${FLEET_TENANTS} tenants round robin, priority 0; Worker defaults (idleWaitMs 1000 → maxIdleWaitMs 8000)` },
    { label: 'pickup', value: `${run.probes} probes a round, one at a time, 300–900 ms apart, after ≥${IDLE_MS / 1000} s idle (every fleet ≥${SETTLE_MS / 1000} s); enqueue-call to handler-start, performance.timeOrigin + now() in each process` },
    { label: 'throughput', value: `backlog of ${run.backlog} enqueued in bulk with the fleet stopped, then 4 runtimes started at once; cut at ${run.capMs / 1000} s` },
    { label: 'floors', value: `floor-pg: LISTEN/NOTIFY + one-statement claim; floor-sqlite: fs.watch on the WAL + PRAGMA data_version + one-transaction claim; ${FLOOR_FALLBACK_POLL_MS / 1000} s fallback poll` },
    ...(run.pgDown !== undefined ? [{ label: 'PostgreSQL contenders SKIPPED', value: run.pgDown }] : []),
    ...(run.redisDown !== undefined ? [{ label: 'bullmq SKIPPED', value: run.redisDown }] : []),
  );
  return {
    metrics,
    context,
    raw: {
      servers: { postgres: PG_URL.replace(/:[^:@/]*@/, ':***@'), redis: REDIS_URL },
      versions: { 'graphile-worker': '0.16.6', 'pg-boss': '10.4.2', bullmq: '6.7.0' },
      processes: PROCESSES,
      slots: FLEET_SLOTS,
      config: FLEET_CONFIG,
      tenants: FLEET_TENANTS,
      rounds: run.rounds,
      probes: run.probes,
      backlog: run.backlog,
      capMs: run.capMs,
      idleMs: IDLE_MS,
      order: orders,
      pickupMsPerRound: Object.fromEntries(names.map((n) => [n, figures[n]!.map((f) => f.pickup.map((v) => sig(v)))])),
      throughputPerRound: Object.fromEntries(names.map((n) => [n, figures[n]!.map((f) => ({ ...f.throughput, rate: sig(f.throughput.rate), spanMs: sig(f.throughput.spanMs) }))])),
      ratiosPerRound: ratiosRaw,
      duplicates: Object.fromEntries(names.map((n) => [n, tracker.duplicates(n)])),
    },
  };
}

export const fleetSection: BenchSection = {
  id: 'fleet',
  title: 'Idle-fleet pickup latency and backlog throughput, 4 worker processes per contender, vs graphile-worker, pg-boss, BullMQ',
  run,
};
