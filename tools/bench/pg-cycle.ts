/**
 * Section `pg-cycle`: claim → complete cycles per second on PostgreSQL, Leasehold against graphile-worker
 * 0.16.6 and pg-boss 10.4.2 on the same local server, and BullMQ 6.7.0 on the local Redis (the most used
 * Node queue; a different kind of store, so its ratio is context with an informational target >= 0).
 *
 * Workers are PROCESSES (tools/bench/pg-cycle-child.ts, `node --import tsx`), 16 of them spawned once,
 * each with its own connections to every contender. A slice of `w` workers (w = 1, 4, 16) sends
 * `go <contender> <ms>` to workers 0..w-1 at once; each loops one cycle at a time for <ms> of wall time
 * and reports its count; the slice's rate is the sum over workers of count / elapsed. After each slice
 * the consumed jobs are added back (untimed, spread over all 16 workers), so every slice starts on the
 * same standing backlog. In each round every contender runs one slice, in an order that rotates (and
 * reverses every other round) as interleave.ts does; a figure is the median over rounds of the paired
 * per-round ratio.
 *
 * Each contender's cycle, at its lowest overhead that still claims one job at a time with its guarantees:
 *   - leasehold: `claim(workerId)` then `complete(id, workerId, generation, result)` through
 *     openWorkQueue({ db: 'postgres://…', schema }) on a fresh schema; 64 tenants, priority 0, config
 *     capacity 1e8, globalLimit 64, perTenantLimit 16, no budgets (nothing throttles 16 workers). The
 *     claim is a lease (leaseMs, expires and is reclaimed) and completion is fenced by (workerId,
 *     generation): a stale holder's complete is refused. Each call is one transaction under the queue's
 *     advisory lock (src/store/pg-store.ts): its first round trip begins and takes the lock, each
 *     statement whose answer the core waits for is one more, and the writes it does not wait for ride
 *     with the next one or with COMMIT. A claim is 2 round trips (the first takes the lock and reads
 *     the holders, the paused tenants and every ready tenant's head with its row and session; the
 *     second writes the lease with COMMIT), a complete 2 (its row, without the lock; then the lock, a
 *     check that the row is unchanged, its writes and COMMIT). Each COMMIT releases the lock before the
 *     WAL flush, and the call returns after the flush (pg-store.ts COMMIT_DURABLY).
 *   - floor (the equal-guarantee floor, no target): the least SQL that gives Leasehold's claim→complete
 *     guarantees, in one statement (one round trip, committed as floorCall says) a claim and one a complete
 *     (pg-cycle-child.ts floorClaimSql / floorCompleteSql): a lease with expiry and a fencing
 *     generation, a complete fenced by worker, generation and lease, the global limit and the per-tenant
 *     limit checked on counters the statement locks (one counter row every claim and complete locks,
 *     the serialisation point an exact global limit needs), fair service across tenants (the tenant
 *     with the fewest running, then the longest unserved, first), and an outbox event per transition in
 *     the same transaction. It has none of the rest (aging, sessions, budgets, admission records,
 *     pauses, retries, deadlines), so no queue with all of Leasehold's guarantees can be faster; its
 *     ratio to graphile-worker and pg-boss, measured in the same rounds, is the most such a queue can
 *     reach against them, and leasehold ÷ floor is how close this design comes.
 *   - floor-client (the floor deciding in the client, no target): the same tables, guarantees and choices,
 *     but each call is two round trips (pg-cycle-child.ts floorClientSql). A claim's first takes the lock
 *     and reads what the decision needs, its second writes it with COMMIT, so the lock is held across one
 *     client round trip, as it must be for a core in TypeScript that decides between its reads and its
 *     writes (Leasehold's, run by the simulator and both stores). A complete reads the holder's row and
 *     its version before the lock, then takes the lock and writes only if the row is that version, as
 *     Leasehold's holder calls do. Its ratio to pg-boss is the most a queue of this design can reach;
 *     leasehold ÷ floor-client is what Leasehold's own extra work costs.
 *   Both floors commit as Leasehold's store does (pg-cycle-child.ts floorCall, FLUSHED_COMMIT): without
 *     waiting for the disk while the counter row is locked, then, in the same round trip, a synchronous
 *     one-record transaction that flushes the WAL through the commit before the call returns.
 *   - leasehold-1t (context, no target): the same queue and config with every task in one tenant, so the
 *     claim's head lookup finds one tenant; it shows what the per-tenant walk costs on a network store.
 *   - graphile-worker: its worker's own SQL, run on one connection per process as named prepared
 *     statements like its worker does (preparedStatements defaults to on): the get_job statement of
 *     dist/sql/getJob.js (strategy 2: `for update skip locked`, sets locked_by/locked_at, attempts+1)
 *     and complete_job of dist/sql/completeJob.js (`delete … where id = $1`, the no-named-queue
 *     branch). Without its worker's event loop, poll timer and task lookup (the task id is resolved once).
 *     The job is locked (locked_at; a lock older than 4 h is reset by the worker's housekeeping);
 *     completion is NOT fenced: it deletes by id whoever holds the lock.
 *   - pg-boss: `boss.fetch(name)` (one job; `for update skip locked`, state → active, started_on) and
 *     `boss.complete(name, id)` (state → completed `where id and state = 'active'`). pg-boss runs with
 *     supervise/schedule off (no maintenance timers in the slice) and its `db` option on the process's one
 *     connection. The job is leased by state + expire_in (expired by maintenance); completion is fenced
 *     only by state, not by the worker that fetched it.
 *   - bullmq: a Worker without a processor (autorun off): `worker.getNextJob(token, { block: false })`
 *     (moves the job to active and takes its lock, token, lockDuration 30 s) then
 *     `job.moveToCompleted(result, token, false)` (a Lua script that checks the lock's token), so the
 *     claim is a lease and completion is fenced by the token. Redis, not PostgreSQL: context only.
 *
 *   pgCycleToGraphileRatio_wN = median_r( leasehold cycles/s [r] / graphile-worker cycles/s [r] ), N workers, target >= 1.0
 *   pgCycleToPgBossRatio_wN   = median_r( leasehold / pg-boss ),                                    target >= 1.0
 *   pgCycleToBullmqRatio_wN   = median_r( leasehold / bullmq ),                                     informational, target >= 0
 *   pgCycleToFloorRatio_wN    = median_r( leasehold / floor ),                                      informational, target >= 0
 *   pgCycleToFloorClientRatio_wN = median_r( leasehold / floor-client ),                            informational, target >= 0
 *   context: floor ÷ graphile-worker and floor ÷ pg-boss per level (paired per round as above)
 *
 * Standing backlog: Leasehold's (filled through its enqueue, one advisory-locked transaction per task)
 * is smaller than the others' (bulk inserts), since they consume far more per slice; pg-claim-latency
 * shows Leasehold's claim does not depend on the backlog's size, so this does not favour it.
 *
 * Verification at the end: for every contender, jobs completed == cycles counted and the backlog is
 * whole (nothing lost, nothing left locked). Clean-up drops the run's schemas and its Redis keys. With
 * PostgreSQL unreachable the section is skipped; with Redis unreachable only bullmq is.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Queue as BullQueue } from 'bullmq';
import { runMigrations } from 'graphile-worker';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { openWorkQueue, SystemClock, type WorkQueue } from '../../src/index.ts';
import { pairedRatios } from './interleave.ts';
import { BOSS_QUEUE, BULL_QUEUE, floorSchemaSql, GW_TASK, PG_CYCLE_CONFIG, PG_CYCLE_TENANTS, type ContenderName } from './pg-cycle-child.ts';
import { analyzeSchemas, autovacuumSetting, dropSchemas, flushPrefix, PG_URL, pgUnreachable, REDIS_URL, redisHostPort, redisUnreachable, runTag } from './pg-servers.ts';
import { metric, type BenchContext, type BenchSection, type ContextLine, type Metric, type SectionResult } from './registry.ts';
import { fmtRate, median, sig } from './timing.ts';

export const PG_CYCLE_TARGETS = {
  pgCycleToGraphileRatio: { op: '>=', value: 1.0 },
  pgCycleToPgBossRatio: { op: '>=', value: 1.0 },
  pgCycleToBullmqRatio: { op: '>=', value: 0 },
  pgCycleToFloorRatio: { op: '>=', value: 0 },
  pgCycleToFloorClientRatio: { op: '>=', value: 0 },
} as const;

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '..', '..');
const CHILD = join(here, 'pg-cycle-child.ts');
const LEVELS = [1, 4, 16] as const;
const MAX_WORKERS = 16;

type Message = { type: string; [key: string]: unknown };

class Child {
  private readonly proc: ChildProcessWithoutNullStreams;
  private readonly inbox: Message[] = [];
  private waiter: ((m: Message) => void) | undefined;
  stderr = '';
  exited = false;

  constructor(readonly index: number, args: string[]) {
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
      this.deliver(m);
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

  /** The next message, which must be of `type` (an error line or an exit is thrown with the child's stderr). */
  async next(type: string): Promise<Message> {
    const m = this.inbox.shift() ?? (await new Promise<Message>((res) => (this.waiter = res)));
    if (m.type !== type) {
      throw new Error(`pg-cycle worker ${this.index}: expected ${type}, got ${JSON.stringify(m).slice(0, 2000)}; stderr: ${this.stderr.slice(-1500)}`);
    }
    return m;
  }

  send(line: string): void {
    this.proc.stdin.write(`${line}\n`);
  }

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

interface Servers {
  schemas: { leasehold: string; leasehold1: string; floor: string; floorClient: string; graphile: string; boss: string };
  bullPrefix: string | undefined;
}

/** Splits n into `parts` near-equal shares. */
function shares(n: number, parts: number): number[] {
  return Array.from({ length: parts }, (_, i) => Math.floor(n / parts) + (i < n % parts ? 1 : 0));
}

async function fill(children: readonly Child[], name: ContenderName, n: number): Promise<void> {
  const parts = shares(n, children.length);
  const busy = children.filter((_, i) => parts[i]! > 0);
  children.forEach((c, i) => parts[i]! > 0 && c.send(`fill ${name} ${parts[i]}`));
  await Promise.all(busy.map((c) => c.next('filled')));
}

/** Deadlocks the floor's statements met and retried, by worker (each child reports its running total). */
const FLOOR_DEADLOCKS = new Map<number, number>();

/** One timed slice: `w` workers run `name` for `ms`; returns cycles/s summed over workers, and the count. */
async function slice(children: readonly Child[], name: ContenderName, w: number, ms: number): Promise<{ rate: number; count: number }> {
  const workers = children.slice(0, w);
  for (const c of workers) c.send(`go ${name} ${ms}`);
  const replies = await Promise.all(workers.map((c) => c.next('count')));
  let rate = 0;
  let count = 0;
  replies.forEach((r, i) => {
    if (typeof r.deadlocks === 'number') FLOOR_DEADLOCKS.set(i, r.deadlocks);
  });
  for (const r of replies) {
    if (r.exhausted === true) throw new Error(`pg-cycle: ${name} ran out of backlog in a slice of ${w} workers; raise the backlog`);
    count += r.count as number;
    rate += ((r.count as number) * 1e9) / (r.ns as number);
  }
  return { rate, count };
}

async function setUp(ctx: BenchContext, withRedis: boolean): Promise<{ servers: Servers; gwTaskId: number; lhQueue: WorkQueue; lh1Queue: WorkQueue; bullQueue?: BullQueue }> {
  const servers: Servers = {
    schemas: { leasehold: runTag('lh_bench_pg'), leasehold1: runTag('lh_bench_pg1'), floor: runTag('lh_bench_floor'), floorClient: runTag('lh_bench_floorc'), graphile: runTag('lh_bench_gw'), boss: runTag('lh_bench_boss') },
    bullPrefix: withRedis ? runTag('lhbench') : undefined,
  };
  const lhQueue = openWorkQueue({ db: PG_URL, schema: servers.schemas.leasehold, clock: new SystemClock(), config: { ...PG_CYCLE_CONFIG } });
  await lhQueue.snapshot(); // migrates the fresh schema
  const lh1Queue = openWorkQueue({ db: PG_URL, schema: servers.schemas.leasehold1, clock: new SystemClock(), config: { ...PG_CYCLE_CONFIG } });
  await lh1Queue.snapshot();
  await runMigrations({ connectionString: PG_URL, schema: servers.schemas.graphile, logger: silentGraphileLogger() });
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  let gwTaskId: number;
  try {
    for (const schema of [servers.schemas.floor, servers.schemas.floorClient]) {
      await client.query(`create schema ${schema}`);
      await client.query(floorSchemaSql(schema));
    }
    const s = servers.schemas.graphile;
    await client.query(`insert into ${s}._private_tasks (identifier) values ($1) on conflict do nothing`, [GW_TASK]);
    gwTaskId = Number((await client.query(`select id from ${s}._private_tasks where identifier = $1`, [GW_TASK])).rows[0].id);
  } finally {
    await client.end();
  }
  const boss = new PgBoss({ connectionString: PG_URL, schema: servers.schemas.boss, supervise: false, schedule: false, migrate: true, max: 2 });
  boss.on('error', () => undefined);
  await boss.start();
  await boss.createQueue(BOSS_QUEUE);
  await boss.stop({ graceful: false, close: true, wait: true });
  let bullQueue: BullQueue | undefined;
  if (servers.bullPrefix !== undefined) {
    bullQueue = new BullQueue(BULL_QUEUE, { connection: { ...redisHostPort(), maxRetriesPerRequest: null }, prefix: servers.bullPrefix });
    await bullQueue.waitUntilReady();
  }
  ctx.progress(`  schemas ${Object.values(servers.schemas).join(', ')}${servers.bullPrefix ? `, redis prefix ${servers.bullPrefix}` : ''}`);
  return { servers, gwTaskId, lhQueue, lh1Queue, ...(bullQueue ? { bullQueue } : {}) };
}

function silentGraphileLogger() {
  // graphile-worker's Logger: a factory of scoped log functions; the bench wants none of its output.
  return new (class {
    scope() {
      return this;
    }
    error() {}
    warn() {}
    info() {}
    debug() {}
  })() as unknown as Parameters<typeof runMigrations>[0]['logger'];
}

async function verify(name: ContenderName, servers: Servers, counted: number, backlog: number, added: number, queues: Record<'leasehold' | 'leasehold-1t', WorkQueue>, bullQueue?: BullQueue): Promise<string> {
  const fail = (m: string) => {
    throw new Error(`pg-cycle verify ${name}: ${m}`);
  };
  if (name === 'leasehold' || name === 'leasehold-1t') {
    const snap = await queues[name].snapshot();
    const c = snap.countsByState;
    if ((c.done ?? 0) !== counted) fail(`${c.done ?? 0} tasks done, but ${counted} cycles counted`);
    if ((c.ready ?? 0) !== backlog) fail(`${c.ready ?? 0} ready at the end, expected ${backlog}`);
    if ((c.running ?? 0) !== 0) fail(`${c.running} still running`);
    return `done ${c.done}, ready ${c.ready}, running 0`;
  }
  if (name === 'bullmq') {
    const c = await bullQueue!.getJobCounts('completed', 'wait', 'active', 'failed', 'delayed', 'prioritized');
    if (c.completed !== counted) fail(`${c.completed} completed, but ${counted} cycles counted`);
    if (c.wait !== backlog) fail(`${c.wait} waiting at the end, expected ${backlog}`);
    if ((c.active ?? 0) + (c.failed ?? 0) + (c.delayed ?? 0) !== 0) fail(`left over: ${JSON.stringify(c)}`);
    return `completed ${c.completed}, waiting ${c.wait}, active 0, failed 0`;
  }
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    if (name === 'floor' || name === 'floor-client') {
      const s = name === 'floor' ? servers.schemas.floor : servers.schemas.floorClient;
      const r = (await client.query(
        `select count(*) filter (where state = 'done')::int as done, count(*) filter (where state = 'ready')::int as ready, count(*) filter (where state = 'running')::int as running,
           (select value::int from ${s}.counters where name = 'running') as counter, (select sum(running)::int from ${s}.tenant_running) as tenants,
           (select count(*)::int from ${s}.events) as events
         from ${s}.jobs`,
      )).rows[0];
      if (r.done !== counted) fail(`${r.done} jobs done, but ${counted} cycles counted`);
      if (r.ready !== backlog) fail(`${r.ready} ready at the end, expected ${backlog}`);
      if (r.running !== 0 || r.counter !== 0 || r.tenants !== 0) fail(`running ${r.running}, running counter ${r.counter}, tenants' counters ${r.tenants}: all should be 0`);
      if (r.events !== 2 * counted) fail(`${r.events} events, expected 2 per cycle (${2 * counted})`);
      return `done ${r.done}, ready ${r.ready}, running 0, counters 0, events ${r.events}`;
    }
    if (name === 'graphile-worker') {
      const s = servers.schemas.graphile;
      const r = (await client.query(`select count(*)::int as n, count(locked_at)::int as locked, count(*) filter (where attempts > 0)::int as tried from ${s}._private_jobs`)).rows[0];
      // graphile-worker deletes a completed job: completed = added - remaining.
      if (added - r.n !== counted) fail(`${added - r.n} jobs completed (deleted), but ${counted} cycles counted`);
      if (r.n !== backlog) fail(`${r.n} jobs left, expected ${backlog}`);
      if (r.locked !== 0 || r.tried !== 0) fail(`${r.locked} jobs left locked, ${r.tried} left attempted`);
      return `completed (deleted) ${added - r.n}, left ${r.n}, locked 0`;
    }
    const s = servers.schemas.boss;
    const rows = (await client.query(`select state::text as state, count(*)::int as n from ${s}.job where name = $1 group by state`, [BOSS_QUEUE])).rows as { state: string; n: number }[];
    const by = Object.fromEntries(rows.map((r) => [r.state, r.n]));
    if ((by.completed ?? 0) !== counted) fail(`${by.completed ?? 0} completed, but ${counted} cycles counted`);
    if ((by.created ?? 0) !== backlog) fail(`${by.created ?? 0} created at the end, expected ${backlog}`);
    if (rows.some((r) => r.state !== 'completed' && r.state !== 'created')) fail(`left over: ${JSON.stringify(by)}`);
    return `completed ${by.completed}, created ${by.created}`;
  } finally {
    await client.end();
  }
}

async function run(ctx: BenchContext): Promise<SectionResult> {
  const pgDown = await pgUnreachable();
  if (pgDown !== undefined) {
    ctx.progress(`  SKIPPED: ${pgDown}`);
    return { metrics: [], context: [{ label: 'SKIPPED', value: pgDown }], raw: { skipped: pgDown } };
  }
  const redisDown = await redisUnreachable();
  if (redisDown !== undefined) ctx.progress(`  bullmq SKIPPED: ${redisDown}`);

  const quick = ctx.options.quick;
  // Leasehold's enqueue is the slow fill (one advisory-locked transaction each); its claim cost does not
  // depend on the backlog's size (pg-claim-latency), and the others consume far more per slice, so they
  // get the larger standing backlog (which does not favour Leasehold).
  // BullMQ on an idle machine does over 7k cycles/s at 4 workers, more than a 5,000 backlog in one slice.
  const backlogOf = (n: ContenderName) => (n.startsWith('leasehold') ? (quick ? 400 : 2000) : n === 'bullmq' ? (quick ? 5000 : 20000) : quick ? 2000 : 5000);
  const sliceMs = quick ? 200 : Math.max(600, ctx.options.sliceMs * 6);
  const rounds = quick ? 1 : ctx.options.rounds;
  const names: ContenderName[] = ['leasehold', 'leasehold-1t', 'floor', 'floor-client', 'graphile-worker', 'pg-boss', ...(redisDown === undefined ? (['bullmq'] as const) : [])];

  const { servers, gwTaskId, lhQueue, lh1Queue, bullQueue } = await setUp(ctx, redisDown === undefined);
  const children: Child[] = [];
  try {
    const redis = redisHostPort();
    for (let i = 0; i < MAX_WORKERS; i++) {
      children.push(
        new Child(i, [
          `--url=${PG_URL}`,
          `--worker=bench-w${i}`,
          `--index=${i}`,
          `--lh-schema=${servers.schemas.leasehold}`,
          `--lh1-schema=${servers.schemas.leasehold1}`,
          `--floor-schema=${servers.schemas.floor}`,
          `--floor-client-schema=${servers.schemas.floorClient}`,
          `--gw-schema=${servers.schemas.graphile}`,
          `--gw-task=${gwTaskId}`,
          `--boss-schema=${servers.schemas.boss}`,
          ...(servers.bullPrefix !== undefined ? [`--bull-prefix=${servers.bullPrefix}`, `--redis-host=${redis.host}`, `--redis-port=${redis.port}`] : []),
        ]),
      );
    }
    ctx.progress(`  spawning ${MAX_WORKERS} worker processes`);
    await Promise.all(children.map((c) => c.next('ready')));
    const added: Record<string, number> = {};
    const counted: Record<string, number> = {};
    for (const n of names) {
      ctx.progress(`  filling ${backlogOf(n)} jobs for ${n}`);
      await fill(children, n, backlogOf(n));
      added[n] = backlogOf(n);
      counted[n] = 0;
    }
    // Planner statistics after the fill, as autovacuum would keep them (the local server may have it off).
    const autovacuum = await autovacuumSetting(PG_URL);
    await analyzeSchemas(PG_URL, Object.values(servers.schemas));
    const consume = async (n: ContenderName, w: number, ms: number) => {
      const s = await slice(children, n, w, ms);
      counted[n]! += s.count;
      await fill(children, n, s.count);
      added[n]! += s.count;
      return s;
    };

    const rates: Record<string, Record<string, number[]>> = {};
    const orders: Record<string, string[][]> = {};
    for (const w of LEVELS) {
      rates[w] = Object.fromEntries(names.map((n) => [n, []]));
      orders[w] = [];
      for (const n of names) {
        const s = await consume(n, w, quick ? 100 : 300); // warm-up (connections, prepared statements, JIT)
        ctx.progress(`  w${w} warm-up ${n}: ${fmtRate(s.rate)}`);
      }
      for (let r = 0; r < rounds; r++) {
        const rotated = names.map((_, i) => names[(i + r) % names.length]!);
        const order = r % 2 === 1 ? rotated.reverse() : rotated;
        orders[w]!.push(order);
        for (const n of order) {
          ctx.gc();
          rates[w]![n]!.push((await consume(n, w, sliceMs)).rate);
        }
        ctx.progress(`  w${w} round ${r + 1}/${rounds}: ${names.map((n) => `${n} ${fmtRate(rates[w]![n]![r]!)}`).join(', ')}`);
      }
    }

    const verified: Record<string, string> = {};
    for (const n of names) verified[n] = await verify(n, servers, counted[n]!, backlogOf(n), added[n]!, { leasehold: lhQueue, 'leasehold-1t': lh1Queue }, bullQueue);

    const metrics: Metric[] = [];
    const context: ContextLine[] = [];
    const ratiosRaw: Record<string, number[]> = {};
    const against: [ContenderName, keyof typeof PG_CYCLE_TARGETS, string][] = [
      ['graphile-worker', 'pgCycleToGraphileRatio', 'graphile-worker get_job→complete_job'],
      ['pg-boss', 'pgCycleToPgBossRatio', 'pg-boss fetch→complete'],
      ['bullmq', 'pgCycleToBullmqRatio', 'BullMQ (Redis) getNextJob→moveToCompleted, informational'],
      ['floor', 'pgCycleToFloorRatio', 'the equal-guarantee SQL floor (one statement a claim, one a complete), informational'],
      ['floor-client', 'pgCycleToFloorClientRatio', 'the same floor deciding in the client (two round trips a call, the lock held across one), informational'],
    ];
    for (const w of LEVELS) {
      const lh = rates[w]!.leasehold!;
      for (const [other, id, what] of against) {
        if (!names.includes(other)) continue;
        const ratios = pairedRatios(lh, rates[w]![other]!);
        ratiosRaw[`${id}_w${w}`] = ratios.map((v) => sig(v));
        metrics.push(metric(`${id}_w${w}`, `leasehold PG claim→complete cycles/s ÷ ${what}, ${w} worker process${w > 1 ? 'es' : ''}`, median(ratios), PG_CYCLE_TARGETS[id], ratios));
      }
      for (const [other, label] of [['graphile-worker', 'graphile-worker'], ['pg-boss', 'pg-boss']] as const) {
        const floorRatios = pairedRatios(rates[w]!.floor!, rates[w]![other]!);
        ratiosRaw[`floorTo${label}_w${w}`] = floorRatios.map((v) => sig(v));
        context.push({ label: `floor ÷ ${label} at ${w} worker${w > 1 ? 's' : ''} (the most a queue with Leasehold's claim→complete guarantees reaches against it)`, value: sig(median(floorRatios), 3).toString() });
        const clientRatios = pairedRatios(rates[w]!['floor-client']!, rates[w]![other]!);
        ratiosRaw[`floorClientTo${label}_w${w}`] = clientRatios.map((v) => sig(v));
        context.push({ label: `floor-client ÷ ${label} at ${w} worker${w > 1 ? 's' : ''} (the most such a queue reaches when its decisions are made in the client, as Leasehold's core makes them)`, value: sig(median(clientRatios), 3).toString() });
      }
      const oneTenant = pairedRatios(rates[w]!['leasehold-1t']!, rates[w]!['graphile-worker']!);
      ratiosRaw[`leasehold1tToGraphile_w${w}`] = oneTenant.map((v) => sig(v));
      context.push({ label: `leasehold-1t (1 tenant) ÷ graphile-worker at ${w} worker${w > 1 ? 's' : ''} (context)`, value: sig(median(oneTenant), 3).toString() });
      context.push({ label: `cycles/s at ${w} worker${w > 1 ? 's' : ''} (median)`, value: names.map((n) => `${n} ${fmtRate(median(rates[w]![n]!))}`).join(', ') });
    }
    context.push(
      { label: 'floor deadlocks retried', value: String([...FLOOR_DEADLOCKS.values()].reduce((a, b) => a + b, 0)) },
      { label: 'standing backlog at each slice start', value: names.map((n) => `${n} ${backlogOf(n)}`).join(', ') },
      { label: 'slice per contender', value: `${sliceMs} ms of every worker, rounds ${rounds}` },
      { label: 'server autovacuum', value: `${autovacuum}; every schema is ANALYZEd once after the initial fill` },
      { label: 'leasehold config', value: `${JSON.stringify(PG_CYCLE_CONFIG)}, ${PG_CYCLE_TENANTS} tenants, priority 0` },
      ...names.map((n) => ({ label: `verified ${n}`, value: verified[n]! })),
      ...(redisDown !== undefined ? [{ label: 'bullmq SKIPPED', value: redisDown }] : []),
    );
    return {
      metrics,
      context,
      raw: {
        servers: { postgres: PG_URL.replace(/:[^:@/]*@/, ':***@'), redis: REDIS_URL },
        versions: { 'graphile-worker': '0.16.6', 'pg-boss': '10.4.2', bullmq: '6.7.0' },
        backlog: Object.fromEntries(names.map((n) => [n, backlogOf(n)])),
        sliceMs,
        rounds,
        config: PG_CYCLE_CONFIG,
        tenants: PG_CYCLE_TENANTS,
        ratesPerRound: Object.fromEntries(LEVELS.map((w) => [`w${w}`, Object.fromEntries(names.map((n) => [n, rates[w]![n]!.map((v) => sig(v))]))])),
        order: orders,
        ratiosPerRound: ratiosRaw,
        cyclesCounted: counted,
        verified,
      },
    };
  } finally {
    await Promise.all(children.map((c) => c.stop().catch(() => undefined)));
    await lhQueue.close().catch(() => undefined);
    await lh1Queue.close().catch(() => undefined);
    await bullQueue?.close().catch(() => undefined);
    await dropSchemas(PG_URL, Object.values(servers.schemas)).catch((e) => ctx.progress(`  WARNING: dropping schemas: ${String(e)}`));
    if (servers.bullPrefix !== undefined) await flushPrefix(REDIS_URL, servers.bullPrefix).catch((e) => ctx.progress(`  WARNING: flushing redis: ${String(e)}`));
  }
}

export const pgCycleSection: BenchSection = {
  id: 'pg-cycle',
  title: 'Claim→complete cycles on PostgreSQL vs graphile-worker, pg-boss (and BullMQ on Redis), 1/4/16 worker processes',
  run,
};
