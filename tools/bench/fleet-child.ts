/**
 * One worker process of the `fleet` section (fleet.ts): `node --import tsx tools/bench/fleet-child.ts
 * --name=value...`. The section runs four of these; each hosts one worker of every contender's fleet,
 * through that contender's own worker runtime (not a hand-written loop), so the four processes are the
 * four-process fleet of every contender at once. It opens its connections once, prints
 * `{"type":"ready"}`, then obeys one command a line on stdin:
 *
 *   start <contender>   start that contender's worker runtime in this process; answer { type: 'started' }
 *   stop <contender>    stop it from taking more tasks; answer { type: 'stopped' } (a task it had already
 *                       taken may still run and is reported as usual)
 *   quit                close everything and exit
 *
 * and reports every handler of every contender as it happens, one JSON line each:
 *
 *   { type: 's', c: <contender>, k: <task key>, t: <wall ms> }   the handler started
 *   { type: 'e', c: <contender>, k: <task key>, t: <wall ms> }   the handler returned
 *
 * The wall clock is `performance.timeOrigin + performance.now()` in every process, so the parent can
 * subtract its own enqueue time from a child's start time. A handler does nothing but report: for
 * Leasehold it is the model of the public `Worker`, answering at step 0 with no tool calls; for the
 * others it is their job handler. When stdin closes (the parent ended or died) the child exits, so no
 * orphan is left behind.
 */
import { appendFileSync, fdatasyncSync, openSync, watch, type FSWatcher } from 'node:fs';
import { resolve } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { Worker as BullWorker, type Job } from 'bullmq';
import { Logger, run as runGraphile, type Runner } from 'graphile-worker';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { openWorkQueue, SystemClock, TimerWaiter, Worker, type Model, type WorkQueue } from '../../src/index.ts';
import { floorCall, floorClaimSql, floorCompleteSql } from './pg-cycle-child.ts';

export const FLEET_CONTENDERS = ['leasehold-sqlite', 'leasehold-pg', 'bullmq', 'graphile-worker', 'pg-boss', 'floor-pg', 'floor-sqlite'] as const;
export type FleetContender = (typeof FLEET_CONTENDERS)[number];

/**
 * Leasehold's queue config for the fleet: admission is never what limits four one-slot workers (the
 * capacity takes the whole backlog; 64 running at once globally and per tenant).
 */
export const FLEET_CONFIG = { capacity: 100_000_000, globalLimit: 64, perTenantLimit: 64 } as const;
/** Tenants the tasks are spread over, round robin (Leasehold and the floors). */
export const FLEET_TENANTS = 8;
/** Tasks one worker of any contender runs at once: one slot a process, the same for every contender. */
export const FLEET_SLOTS = 1;
export const FLEET_QUEUE = 'fleet';
/** The floors' lease (ms), as Leasehold's default. */
const FLOOR_LEASE_MS = 30_000;
/**
 * How often an idle floor worker looks for work when nothing woke it: a fallback for a lost wake-up,
 * never the path a measured pickup takes (graphile-worker's poll interval, 2 s, for comparison).
 */
export const FLOOR_FALLBACK_POLL_MS = 2_000;

export function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

function emit(message: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

function args(): Map<string, string> {
  const out = new Map<string, string>();
  for (const a of process.argv.slice(2)) {
    const m = /^--([^=]+)=(.*)$/s.exec(a);
    if (!m) throw new Error(`argument not of the form --name=value: ${a}`);
    out.set(m[1]!, m[2]!);
  }
  return out;
}

/** The task key every contender's payload carries (`{ k, text }`). */
function keyOf(payload: unknown): string {
  const k = (payload as { k?: unknown } | null)?.k;
  return typeof k === 'string' ? k : '?';
}

/** One handler: report its start and its end; the work itself is nothing. */
function handle(contender: FleetContender, payload: unknown): void {
  const k = keyOf(payload);
  emit({ type: 's', c: contender, k, t: wallMs() });
  emit({ type: 'e', c: contender, k, t: wallMs() });
}

interface Runtime {
  start(): Promise<void>;
  stop(): Promise<void>;
  close(): Promise<void>;
}

/**
 * FLEET_TRACE=PREFIX (a diagnostic, not part of a measurement): each child appends to PREFIX-<pid>.jsonl
 * one line `{ c, ev, t }` (t in wall ms) for every wake-up a Leasehold queue hears (`wake`), every claim
 * it starts and ends (`claim0`, `claim1:<key>`, `claimNone`) and every model call (`decide:<key>`); for
 * leasehold-sqlite also each garbage collection over 2 ms (`gc:<kind>:<ms>`) and each event-loop stall
 * over 15 ms (`lag:<ms>`), and the parent writes PREFIX-parent.jsonl with each probe's enqueue times. It
 * is how a pickup's milliseconds were split into enqueue, wake-up, claim and run start.
 */
function traceLeasehold(prefix: string, contender: FleetContender, queue: WorkQueue): (key: string) => void {
  const line = (c: string, ev: string, t: number) => appendFileSync(`${prefix}-${process.pid}.jsonl`, `${JSON.stringify({ c, ev, t })}\n`);
  const record = (ev: string) => line(contender, ev, wallMs());
  queue.watch(() => record('wake'));
  const claim = queue.claim.bind(queue);
  (queue as { claim: typeof claim }).claim = async (workerId) => {
    record('claim0');
    const claimed = await claim(workerId);
    record(claimed.ok ? `claim1:${keyOf(claimed.task.input)}` : 'claimNone');
    return claimed;
  };
  if (contender === 'leasehold-sqlite') {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        if (e.duration > 2) line('gc', `gc:${((e as { detail?: { kind?: number } }).detail)?.kind}:${e.duration.toFixed(1)}`, performance.timeOrigin + e.startTime);
      }
    }).observe({ entryTypes: ['gc'] });
    let last = wallMs();
    setInterval(() => {
      const t = wallMs();
      if (t - last > 15) line('lag', `lag:${(t - last).toFixed(1)}`, last);
      last = t;
    }, 5).unref();
  }
  return (key) => record(`decide:${key}`);
}

/** Leasehold: the public Worker with a model that answers at once, on a queue opened as a user opens it. */
function leaseholdRuntime(contender: FleetContender, queue: WorkQueue, workerPrefix: string): Runtime {
  let worker: Worker | undefined;
  let generation = 0;
  const model: Model = {
    async decide(request) {
      const k = keyOf(request.input);
      emit({ type: 's', c: contender, k, t: wallMs() });
      traceDecide?.(k);
      // The handler "returns" once the model has decided; the Worker then writes the run's end.
      queueMicrotask(() => emit({ type: 'e', c: contender, k, t: wallMs() }));
      return { toolCalls: [], final: { ok: true }, usage: { inputTokens: 1, outputTokens: 1 } };
    },
  };
  const traceDecide = process.env.FLEET_TRACE ? traceLeasehold(process.env.FLEET_TRACE, contender, queue) : undefined;
  return {
    async start() {
      const clock = new SystemClock();
      // A new Worker each start: a stopped one may still be in its idle sleep, which stop() does not cut short.
      worker = new Worker({ queue, workerId: `${workerPrefix}-${generation++}`, model, tools: [], waiter: new TimerWaiter(), clock, slots: FLEET_SLOTS });
      worker.runLoop().catch((error: unknown) => fatal(error));
    },
    async stop() {
      worker?.stop();
      worker = undefined;
    },
    async close() {
      worker?.stop();
      await queue.close();
    },
  };
}

function silentGraphileLogger(): Logger {
  return new Logger(() => () => undefined);
}

/**
 * The floor on PostgreSQL: the least a worker with Leasehold's claim guarantees can do to start an
 * enqueued task. Woken by LISTEN/NOTIFY (the enqueue notifies in its own transaction), it claims with
 * one statement (pg-cycle-child.ts floorClaimSql: lease with expiry, fencing generation, global and
 * per-tenant limits on locked counters, fair tenant choice, an outbox event), runs the handler and
 * completes with one fenced statement (floorCompleteSql), each committed as Leasehold's store commits
 * (floorCall). One slot: it claims again as soon as a run ends, and sleeps only when a claim found nothing.
 */
async function floorPgRuntime(url: string, schema: string, workerId: string): Promise<Runtime> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  await client.query(`PREPARE floor_claim AS ${floorClaimSql(schema)}`);
  await client.query(`PREPARE floor_complete AS ${floorCompleteSql(schema)}`);
  const listener = new pg.Client({ connectionString: url });
  listener.on('error', () => undefined);
  await listener.connect();
  await listener.query(`LISTEN ${schema}`);
  const quoted = (v: string) => client.escapeLiteral(v);
  const call = async (prepared: string, literals: string[]): Promise<pg.QueryResult> => {
    for (;;) {
      try {
        const answer = (await client.query(floorCall(prepared, literals))) as unknown as pg.QueryResult[];
        return answer[2]!;
      } catch (error) {
        await client.query('ROLLBACK');
        if ((error as { code?: string }).code !== '40P01') throw error;
      }
    }
  };
  const claimAndRun = async (): Promise<boolean> => {
    const rows = (await call('floor_claim', [quoted(workerId), String(Date.now()), String(FLEET_CONFIG.globalLimit), String(FLEET_CONFIG.perTenantLimit)])).rows as { id: string; generation: number }[];
    const job = rows[0];
    if (job === undefined) return false;
    // The task's key is its id (the parent learns it from the enqueue's RETURNING): no round trip for the payload.
    handle('floor-pg', { k: `id:${job.id}` });
    const done = await call('floor_complete', [job.id, quoted(workerId), String(job.generation), quoted('{"ok":true}'), String(Date.now())]);
    if (done.rows[0]?.n !== 1) throw new Error(`floor-pg: completing job ${job.id} matched ${done.rows[0]?.n} rows`);
    return true;
  };
  return wakeLoop(claimAndRun, (wake) => listener.on('notification', wake), async () => {
    await listener.end().catch(() => undefined);
    await client.end().catch(() => undefined);
  });
}

/**
 * The floors' sync of a SQLite file's WAL after a commit at NORMAL, as Leasehold's store makes an
 * enqueue durable under its default durability (src/store/durability.ts): an fdatasync of the WAL file,
 * through a descriptor opened on the first call.
 */
export function floorWalSync(file: string): () => void {
  let fd: number | undefined;
  return () => {
    fd ??= openSync(`${file}-wal`, 'r+');
    fdatasyncSync(fd);
  };
}

/** The floor on SQLite's tables (fleet.ts floorSqliteSchema): one transaction a claim, one a complete. */
function floorSqliteRuntime(file: string, workerId: string): Runtime {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  const dataVersion = () => Number(db.pragma('data_version', { simple: true }));
  // The tenant to serve fairly (the fewest running, then the longest unserved, among those under the
  // limits with ready work), then its head (priority, then age), as the PostgreSQL floor picks them.
  const pickTenant = db.prepare(`
    select t.tenant from tenant_running t, counters g
    where g.name = 'running' and g.value < ? and t.running < ?
      and exists (select 1 from jobs r where r.state = 'ready' and r.tenant = t.tenant)
    order by t.running, t.served_at, t.tenant limit 1`);
  const head = db.prepare(`select id, generation, tenant, input from jobs where state = 'ready' and tenant = ? order by priority desc, enqueued_at, id limit 1`);
  const pick = { get: (globalLimit: number, perTenantLimit: number) => {
    const t = pickTenant.get(globalLimit, perTenantLimit) as { tenant: string } | undefined;
    return t === undefined ? undefined : head.get(t.tenant);
  } };
  const lease = db.prepare(`update jobs set state = 'running', worker_id = ?, generation = generation + 1, lease_until = ? where id = ? and state = 'ready'`);
  const countUp = db.prepare(`update tenant_running set running = running + 1, served_at = ? where tenant = ?`);
  const globalUp = db.prepare(`update counters set value = value + 1 where name = 'running'`);
  const event = db.prepare(`insert into events (job_id, type, at, worker_id, generation) values (?, ?, ?, ?, ?)`);
  const finish = db.prepare(`update jobs set state = 'done', result = ?, worker_id = null, lease_until = null
    where id = ? and state = 'running' and worker_id = ? and generation = ? and lease_until > ?`);
  const countDown = db.prepare(`update tenant_running set running = running - 1 where tenant = ?`);
  const globalDown = db.prepare(`update counters set value = value - 1 where name = 'running'`);
  // A claim may roll back on power loss (the queue re-derives it), as Leasehold's claim under its
  // default durability; a run's end is synced before it is acknowledged, as Leasehold's complete is,
  // here committed at NORMAL, then the WAL synced (floorWalSync) outside the write lock: for the
  // floor's one-row writes that ran its backlog faster than a FULL commit (1.4k to 1.7k against 1.2k to
  // 1.4k tasks/s in the fleet bench), where Leasehold's own run end keeps FULL (durability.ts).
  const syncWal = floorWalSync(file);
  const claim = db.transaction((now: number) => {
    const row = pick.get(FLEET_CONFIG.globalLimit, FLEET_CONFIG.perTenantLimit) as { id: number; generation: number; tenant: string; input: string } | undefined;
    if (row === undefined) return undefined;
    lease.run(workerId, now + FLOOR_LEASE_MS, row.id);
    countUp.run(now, row.tenant);
    globalUp.run();
    event.run(row.id, 'claimed', now, workerId, row.generation + 1);
    return { ...row, generation: row.generation + 1 };
  });
  const complete = db.transaction((id: number, tenant: string, generation: number, now: number) => {
    if (finish.run('{"ok":true}', id, workerId, generation, now).changes !== 1) throw new Error(`floor-sqlite: completing job ${id} matched no row`);
    countDown.run(tenant);
    globalDown.run();
    event.run(id, 'completed', now, workerId, generation);
  });
  let seen = -1;
  const claimAndRun = async (): Promise<boolean> => {
    // The counter is read before the claim: a commit that lands after a claim found nothing moves it
    // past this value, so its wake is not mistaken for one already seen.
    const before = dataVersion();
    const job = claim.immediate(Date.now());
    if (job === undefined) {
      seen = before;
      return false;
    }
    handle('floor-sqlite', JSON.parse(job.input));
    complete.immediate(job.id, job.tenant, job.generation, Date.now());
    syncWal();
    return true;
  };
  // The wake: the kernel's notice that another process wrote the WAL (inotify through fs.watch), then
  // PRAGMA data_version, which changes only when another connection committed, so a wake that brings
  // no commit costs one pragma, not a claim. The notice comes when the WAL is written, before the
  // commit is visible (the writer's sync and its wal-index update come after), so a notice whose
  // counter has not moved yet is checked again after 1, 2, 4, 8, 16 and 32 ms.
  let watcher: FSWatcher | undefined;
  // One recheck pending at a time, as Leasehold's WalWatcher does: otherwise every WAL notice of a
  // backlog's burst of writes leaves a chain of timers of its own.
  let recheck: NodeJS.Timeout | undefined;
  return wakeLoop(claimAndRun, (wake) => {
    const check = (delayMs: number) => {
      if (dataVersion() !== seen) wake();
      else if (delayMs <= 32 && recheck === undefined) {
        recheck = setTimeout(() => {
          recheck = undefined;
          check(delayMs * 2);
        }, delayMs);
      }
    };
    watcher = watch(`${file}-wal`, () => check(1));
  }, async () => {
    clearTimeout(recheck);
    watcher?.close();
    db.close();
  });
}

/**
 * A one-slot worker loop around claimAndRun: claim and run until a claim finds nothing, then wait for a
 * wake (or the fallback poll). A wake during a claim is remembered, so a task enqueued while the claim
 * that missed it ran is claimed next, not at the fallback poll.
 */
function wakeLoop(claimAndRun: () => Promise<boolean>, subscribe: (wake: () => void) => void, closeAll: () => Promise<void>): Runtime {
  let running = false;
  let busy = false;
  let pending = false;
  let timer: NodeJS.Timeout | undefined;
  const loop = async (): Promise<void> => {
    if (busy) {
      pending = true;
      return;
    }
    busy = true;
    try {
      do {
        pending = false;
        while (running && (await claimAndRun()));
      } while (running && pending);
    } finally {
      busy = false;
    }
    if (running) {
      clearTimeout(timer);
      timer = setTimeout(wake, FLOOR_FALLBACK_POLL_MS);
    }
  };
  const wake = () => {
    if (running) loop().catch(fatal);
  };
  subscribe(wake);
  return {
    async start() {
      running = true;
      wake();
    },
    async stop() {
      running = false;
      clearTimeout(timer);
    },
    async close() {
      running = false;
      clearTimeout(timer);
      await closeAll();
    },
  };
}

let fatal: (error: unknown) => void = () => undefined;

async function main(): Promise<void> {
  const a = args();
  const index = Number(a.get('index') ?? 0);
  const contenders = (a.get('contenders') ?? '').split(',').filter(Boolean) as FleetContender[];
  const url = a.get('url') ?? '';
  const runtimes = new Map<FleetContender, Runtime>();
  const clock = new SystemClock();
  fatal = (error: unknown) => {
    const err = error as { message?: string; stack?: string };
    emit({ type: 'error', message: err?.message ?? String(error), stack: err?.stack });
    process.exit(1);
  };

  for (const c of contenders) {
    if (c === 'leasehold-sqlite') {
      const queue = openWorkQueue({ db: a.get('lh-file')!, clock, config: { ...FLEET_CONFIG } });
      await queue.snapshot();
      runtimes.set(c, leaseholdRuntime(c, queue, `fleet-sqlite-w${index}`));
    } else if (c === 'leasehold-pg') {
      const queue = openWorkQueue({ db: url, schema: a.get('lh-schema')!, clock, config: { ...FLEET_CONFIG } });
      await queue.snapshot();
      runtimes.set(c, leaseholdRuntime(c, queue, `fleet-pg-w${index}`));
    } else if (c === 'graphile-worker') {
      // Its own pool, handed to run() so that stopping the runner does not end it (run() ends only a pool it made).
      const pool = new pg.Pool({ connectionString: url, max: 4 });
      pool.on('error', () => undefined);
      let runner: Runner | undefined;
      runtimes.set(c, {
        async start() {
          runner = await runGraphile({
            pgPool: pool,
            schema: a.get('gw-schema')!,
            concurrency: FLEET_SLOTS,
            noHandleSignals: true,
            logger: silentGraphileLogger(),
            taskList: { [FLEET_QUEUE]: async (payload) => handle(c, payload) },
          });
        },
        async stop() {
          await runner?.stop();
          runner = undefined;
        },
        async close() {
          await runner?.stop();
          await pool.end();
        },
      });
    } else if (c === 'pg-boss') {
      const boss = new PgBoss({ connectionString: url, schema: a.get('boss-schema')!, supervise: false, schedule: false, migrate: false, max: 2 });
      boss.on('error', () => undefined);
      await boss.start();
      let id: string | undefined;
      runtimes.set(c, {
        async start() {
          // One worker of one job at a time (batchSize 1), at its default polling interval.
          id = await boss.work(FLEET_QUEUE, { batchSize: 1 }, async ([job]) => handle(c, job?.data));
        },
        async stop() {
          if (id !== undefined) await boss.offWork({ id });
          id = undefined;
        },
        async close() {
          await boss.stop({ graceful: false, close: true, wait: false }).catch(() => undefined);
        },
      });
    } else if (c === 'bullmq') {
      const connection = { host: a.get('redis-host') ?? '127.0.0.1', port: Number(a.get('redis-port') ?? 6379), maxRetriesPerRequest: null };
      const worker = new BullWorker(FLEET_QUEUE, async (job: Job) => handle(c, job.data), { connection, prefix: a.get('bull-prefix')!, concurrency: FLEET_SLOTS, autorun: false });
      worker.on('error', () => undefined);
      await worker.waitUntilReady();
      let ran = false;
      runtimes.set(c, {
        async start() {
          if (!ran) {
            ran = true;
            worker.run().catch(fatal);
          } else worker.resume();
        },
        async stop() {
          await worker.pause();
        },
        async close() {
          await worker.close(true);
        },
      });
    } else if (c === 'floor-pg') {
      runtimes.set(c, await floorPgRuntime(url, a.get('floor-schema')!, `floor-w${index}`));
    } else if (c === 'floor-sqlite') {
      runtimes.set(c, floorSqliteRuntime(a.get('floor-file')!, `floor-w${index}`));
    } else {
      throw new Error(`unknown contender ${String(c)}`);
    }
  }

  const lines = createInterface({ input: process.stdin });
  let chain: Promise<void> = Promise.resolve();
  let quit: () => void = () => undefined;
  const finished = new Promise<void>((res) => (quit = res));
  lines.on('close', () => process.exit(0));
  lines.on('line', (line) => {
    const [cmd, name] = line.trim().split(' ');
    chain = chain.then(async () => {
      if (cmd === 'quit') return quit();
      const runtime = runtimes.get(name as FleetContender);
      if (runtime === undefined) throw new Error(`no runtime ${name} in this worker`);
      if (cmd === 'start') {
        await runtime.start();
        emit({ type: 'started', c: name });
      } else if (cmd === 'stop') {
        await runtime.stop();
        emit({ type: 'stopped', c: name });
      } else throw new Error(`unknown command ${line}`);
    });
    chain.catch(fatal);
  });
  emit({ type: 'ready' });
  await finished;
  await Promise.all([...runtimes.values()].map((r) => r.close().catch(() => undefined)));
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (invokedDirectly) {
  main().then(
    () => process.exit(0),
    (error: unknown) => fatal(error),
  );
}
