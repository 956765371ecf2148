/**
 * One worker process of the `pg-cycle` section (pg-cycle.ts): `node --import tsx tools/bench/pg-cycle-child.ts
 * --name=value...`. It opens its own connections to every contender once (a Leasehold queue with its
 * own pool, one pg client shared by graphile-worker's SQL and pg-boss, one BullMQ worker on Redis),
 * prints `{"type":"ready"}`, then obeys one command a line on stdin and answers one JSON line each:
 *
 *   go <contender> <ms>      loop claim → complete for <ms> of wall time (hrtime, from the moment the line
 *                            arrived; the parent sends it to every worker of the round at once), answer
 *                            { type: 'count', count, ns, exhausted }
 *   fill <contender> <n>     add n jobs to that contender's backlog (untimed), answer { type: 'filled' }
 *   quit                     close everything and exit
 *
 * When stdin closes (the parent ended or died) the child exits, so no orphan is left behind. What each
 * contender's cycle does, and what it guarantees, is in pg-cycle.ts's doc comment.
 */
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { Queue as BullQueue, Worker as BullWorker } from 'bullmq';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { openWorkQueue, SystemClock, type WorkQueue } from '../../src/index.ts';

export const CONTENDERS = ['leasehold', 'leasehold-1t', 'floor', 'floor-client', 'graphile-worker', 'pg-boss', 'bullmq'] as const;
export type ContenderName = (typeof CONTENDERS)[number];

export const PG_CYCLE_CONFIG = {
  capacity: 100_000_000,
  globalLimit: 64,
  perTenantLimit: 16,
} as const;
export const PG_CYCLE_TENANTS = 64;
export const BOSS_QUEUE = 'bench';
export const BULL_QUEUE = 'bench';
export const GW_TASK = 'bench';
const RESULT = { outcome: 'resolved' };

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

function need(a: Map<string, string>, k: string): string {
  const v = a.get(k);
  if (v === undefined) throw new Error(`--${k} is required`);
  return v;
}

/** The floor contender's lease, as Leasehold's default (ms). */
export const FLOOR_LEASE_MS = 30_000;

/**
 * The floor's tables (pg-cycle.ts creates them in its schema): the least a queue needs to give
 * Leasehold's claim→complete guarantees, with nothing else. A job row with its lease and fencing
 * generation; one counter row, locked by every claim and complete, holding the running count the
 * global limit checks (the serialisation point every exact global limit needs, as Leasehold's queue
 * lock is); per-tenant running counts for the per-tenant limit; an outbox event per transition,
 * written in the transition's own transaction.
 */
export function floorSchemaSql(s: string): string {
  return `\
create table ${s}.jobs (id bigserial primary key, tenant text not null, state text not null default 'ready', priority int not null default 0,
  enqueued_at bigint not null, worker_id text, generation int not null default 0, lease_until bigint, input jsonb not null, result jsonb);
create index jobs_ready on ${s}.jobs (tenant, priority desc, enqueued_at, id) where state = 'ready';
create table ${s}.tenant_running (tenant text primary key, running int not null default 0, served_at bigint not null default 0);
create table ${s}.counters (name text primary key, value bigint not null);
insert into ${s}.counters values ('running', 0);
create table ${s}.events (id bigserial primary key, job_id bigint not null, type text not null, at bigint not null, worker_id text, generation int);
insert into ${s}.tenant_running (tenant) select 't' || g from generate_series(0, ${PG_CYCLE_TENANTS - 1}) g;`;
}

/**
 * The floor's claim, one statement in one round trip (floorCall): lock the running counter and check
 * the global limit; pick the tenant to serve, fairly (the fewest running, then the longest unserved,
 * among tenants under the per-tenant limit with ready work: a head lookup per tenant, as Leasehold's
 * claim does); take that tenant's first ready job (priority, then age) with FOR UPDATE SKIP LOCKED; lease
 * it to the worker with the next generation, count it in both counters, append its claimed event.
 * $1 worker, $2 now (ms, from the client, as Leasehold's clock), $3 global limit, $4 per-tenant limit.
 * It has none of Leasehold's aging, sessions, budgets, admission records, pauses or deadlines: a floor
 * faster than any queue with all of those can be.
 */
export function floorClaimSql(s: string): string {
  return `\
with g as (select value from ${s}.counters where name = 'running' for update),
pick as (
  select tr.tenant from ${s}.tenant_running as tr, g
  where g.value < $3 and tr.running < $4
    and exists (select 1 from ${s}.jobs as r where r.state = 'ready' and r.tenant = tr.tenant)
  order by tr.running, tr.served_at, tr.tenant
  limit 1
),
j as (
  select jobs.id from ${s}.jobs as jobs, pick
  where jobs.state = 'ready' and jobs.tenant = pick.tenant
  order by jobs.priority desc, jobs.enqueued_at, jobs.id
  limit 1
  for update of jobs skip locked
),
c as (
  update ${s}.jobs as jobs set state = 'running', worker_id = $1, generation = jobs.generation + 1, lease_until = $2::bigint + ${FLOOR_LEASE_MS}
  from j where jobs.id = j.id
  returning jobs.id, jobs.generation, jobs.tenant
),
t as (update ${s}.tenant_running as tr set running = tr.running + 1, served_at = $2::bigint from c where tr.tenant = c.tenant),
n as (update ${s}.counters set value = value + 1 from c where name = 'running'),
e as (insert into ${s}.events (job_id, type, at, worker_id, generation) select id, 'claimed', $2::bigint, $1, generation from c)
select id, generation from c`;
}

/**
 * The floor's complete, one statement (floorCall): fenced by worker, generation and an unexpired
 * lease, as Leasehold's; the job done with its result, both counters decremented, its completed event
 * appended. $1 id, $2 worker, $3 generation, $4 result, $5 now.
 */
export function floorCompleteSql(s: string): string {
  return `\
with g as (select value from ${s}.counters where name = 'running' for update),
d as (
  update ${s}.jobs as jobs set state = 'done', result = $4, worker_id = null, lease_until = null
  from g
  where jobs.id = $1 and jobs.state = 'running' and jobs.worker_id = $2 and jobs.generation = $3 and jobs.lease_until > $5
  returning jobs.id, jobs.tenant, jobs.generation
),
t as (update ${s}.tenant_running as tr set running = tr.running - 1 from d where tr.tenant = d.tenant),
n as (update ${s}.counters set value = value - 1 from d where name = 'running'),
e as (insert into ${s}.events (job_id, type, at, worker_id, generation) select id, 'completed', $5, $2, generation from d)
select count(*)::int as n from d`;
}

/**
 * The floor with its decisions made where Leasehold makes them, in the client (contender `floor-client`):
 * the same tables, the same guarantees and the same choices as floorClaimSql / floorCompleteSql, but
 * each call is two round trips, the first taking the lock (the running counter, FOR UPDATE) and reading
 * what the decision needs, the second writing it with COMMIT, so the lock is held across one client
 * round trip, as a TypeScript core that decides between its reads and its writes must hold it. Values
 * travel as literals (one simple-protocol text a round trip); every one is a number or an escaped string.
 */
export function floorClientSql(s: string) {
  const lock = `BEGIN; ${ASYNC_COMMIT} SELECT value FROM ${s}.counters WHERE name = 'running' FOR UPDATE`;
  return {
    /** The candidate, as the floor's claim picks it (the counter's lock is held: no SKIP LOCKED needed). */
    claimRead: (now: number, globalLimit: number, perTenantLimit: number) => `${lock};
      SELECT jobs.id, jobs.generation, jobs.tenant FROM ${s}.jobs AS jobs,
        (SELECT tr.tenant FROM ${s}.tenant_running AS tr, ${s}.counters AS g
         WHERE g.name = 'running' AND g.value < ${globalLimit} AND tr.running < ${perTenantLimit}
           AND EXISTS (SELECT 1 FROM ${s}.jobs AS r WHERE r.state = 'ready' AND r.tenant = tr.tenant)
         ORDER BY tr.running, tr.served_at, tr.tenant LIMIT 1) AS pick
      WHERE jobs.state = 'ready' AND jobs.tenant = pick.tenant
      ORDER BY jobs.priority DESC, jobs.enqueued_at, jobs.id LIMIT 1`,
    claimWrite: (id: string, generation: number, tenant: string, worker: string, now: number) => `
      UPDATE ${s}.jobs SET state = 'running', worker_id = ${worker}, generation = ${generation + 1}, lease_until = ${now + FLOOR_LEASE_MS}
        WHERE id = ${id} AND state = 'ready' AND generation = ${generation};
      UPDATE ${s}.tenant_running SET running = running + 1, served_at = ${now} WHERE tenant = ${tenant};
      UPDATE ${s}.counters SET value = value + 1 WHERE name = 'running';
      INSERT INTO ${s}.events (job_id, type, at, worker_id, generation) VALUES (${id}, 'claimed', ${now}, ${worker}, ${generation + 1});
      ${FLUSHED_COMMIT}`,
    /**
     * The holder's row, for the fence (worker, generation, unexpired lease) the client checks, read before
     * the lock as Leasehold's holder calls read theirs, with its version (xmin).
     */
    completeRead: (id: string) => `SELECT state, worker_id, generation, lease_until, tenant, xmin::text AS version FROM ${s}.jobs WHERE id = ${id}`,
    /** The lock, then the writes only if the row is still the version read (else none, and the count says 0). */
    completeWrite: (id: string, tenant: string, worker: string, generation: number, result: string, now: number, version: string) => `${lock};
      WITH d AS (UPDATE ${s}.jobs SET state = 'done', result = ${result}, worker_id = NULL, lease_until = NULL
                 WHERE id = ${id} AND xmin::text = ${version} RETURNING id),
        t AS (UPDATE ${s}.tenant_running SET running = running - 1 FROM d WHERE tenant = ${tenant}),
        n AS (UPDATE ${s}.counters SET value = value - 1 FROM d WHERE name = 'running'),
        e AS (INSERT INTO ${s}.events (job_id, type, at, worker_id, generation) SELECT d.id, 'completed', ${now}, ${worker}, ${generation} FROM d)
      SELECT count(*)::int AS n FROM d;
      ${FLUSHED_COMMIT}`,
  };
}

/**
 * The floors commit as Leasehold's store does (src/store/pg-store.ts ASYNC_COMMIT, COMMIT_DURABLY): without
 * waiting for the disk while the counter row is locked, then, in the same round trip, a one-record
 * synchronous transaction that flushes the WAL through the commit before the call returns.
 */
const ASYNC_COMMIT = 'SET LOCAL synchronous_commit = off;';
const FLUSHED_COMMIT = `COMMIT; SELECT pg_logical_emit_message(true, 'floor', 'flush')`;

/** One floor statement as one simple-protocol text: in a transaction that commits as FLUSHED_COMMIT says, its values as literals. */
export function floorCall(prepared: string, literals: readonly string[]): string {
  return `BEGIN; ${ASYNC_COMMIT} EXECUTE ${prepared}(${literals.join(', ')}); ${FLUSHED_COMMIT}`;
}

/** graphile-worker 0.16.6's own job-fetch SQL (dist/sql/getJob.js: strategy 2, no flags, now()), verbatim. */
function graphileGetJobSql(s: string): string {
  return `\
with j as (
  select jobs.job_queue_id, jobs.priority, jobs.run_at, jobs.id
    from ${s}._private_jobs as jobs
    where jobs.is_available = true
    and run_at <= now()
    and task_id = any($2::int[])
    and (
      jobs.job_queue_id is null
      or
      jobs.job_queue_id in (
        select id
        from ${s}._private_job_queues as job_queues
        where job_queues.is_available = true
        for update
        skip locked
      )
    )
    order by priority asc, run_at asc
    limit 1
    for update
    skip locked
),
q as (
  update ${s}._private_job_queues as job_queues
    set
      locked_by = $1::text,
      locked_at = now()
    from j
    where job_queues.id = j.job_queue_id
)
  update ${s}._private_jobs as jobs
    set
      attempts = jobs.attempts + 1,
      locked_by = $1::text,
      locked_at = now()
    from j
    where jobs.id = j.id
    returning *`;
}

/** graphile-worker 0.16.6's completeJob for a job outside any named queue (dist/sql/completeJob.js), verbatim. */
function graphileCompleteSql(s: string): string {
  return `\
delete from ${s}._private_jobs as jobs
where id = $1::bigint`;
}

async function main(): Promise<void> {
  const a = args();
  const url = need(a, 'url');
  const workerId = need(a, 'worker');
  const lhSchema = need(a, 'lh-schema');
  const lh1Schema = need(a, 'lh1-schema');
  const floorSchema = need(a, 'floor-schema');
  const floorClientSchema = need(a, 'floor-client-schema');
  const gwSchema = need(a, 'gw-schema');
  const gwTaskId = Number(need(a, 'gw-task'));
  const bossSchema = need(a, 'boss-schema');
  const bullPrefix = a.get('bull-prefix');
  const redisPort = Number(a.get('redis-port') ?? 6379);
  const redisHost = a.get('redis-host') ?? '127.0.0.1';
  const index = Number(need(a, 'index'));

  // Leasehold: its own pool from the URL (one connection in use at a time: a process's writes are serial).
  const queue: WorkQueue = openWorkQueue({ db: url, schema: lhSchema, clock: new SystemClock(), config: { ...PG_CYCLE_CONFIG } });
  // Context: the same queue and config with every task in one tenant (the claim walks one tenant, not 64).
  const queue1: WorkQueue = openWorkQueue({ db: url, schema: lh1Schema, clock: new SystemClock(), config: { ...PG_CYCLE_CONFIG } });
  // graphile-worker's SQL and pg-boss share one plain connection (pg-boss takes any `db` with executeSql).
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const boss = new PgBoss({
    db: { executeSql: (text: string, values: unknown[]) => client.query(text, values) },
    schema: bossSchema,
    supervise: false,
    schedule: false,
    migrate: false,
  });
  boss.on('error', () => undefined);
  await boss.start();
  const gwGet = { name: `get_job/${gwSchema}`, text: graphileGetJobSql(gwSchema) };
  const gwDone = { name: `complete_job/${gwSchema}`, text: graphileCompleteSql(gwSchema) };
  // The floor's two statements, prepared once on this connection; each call runs one as floorCall says.
  await client.query(`PREPARE floor_claim AS ${floorClaimSql(floorSchema)}`);
  await client.query(`PREPARE floor_complete AS ${floorCompleteSql(floorSchema)}`);
  const resultJson = JSON.stringify(RESULT);
  /** A statement of the floor (its result), tried again when the deadlock detector picks it (its locks are taken in one order, so it should not). */
  const floorQuery = async (prepared: string, literals: string[]): Promise<pg.QueryResult> => {
    for (;;) {
      try {
        return (await texts(floorCall(prepared, literals)))[2]!;
      } catch (error) {
        await client.query('ROLLBACK');
        if ((error as { code?: string }).code !== '40P01') throw error;
        floorDeadlocks++;
      }
    }
  };
  let floorDeadlocks = 0;
  const floorClient = floorClientSql(floorClientSchema);
  /** One simple-protocol text, its statements' results (pg answers a text of several with one each). */
  const texts = async (text: string): Promise<pg.QueryResult[]> => {
    const answer = (await client.query(text)) as unknown as pg.QueryResult | pg.QueryResult[];
    return Array.isArray(answer) ? answer : [answer];
  };
  const quoted = (value: string) => client.escapeLiteral(value);

  let bullQueue: BullQueue | undefined;
  let bullWorker: BullWorker | undefined;
  if (bullPrefix !== undefined) {
    const connection = { host: redisHost, port: redisPort, maxRetriesPerRequest: null };
    bullQueue = new BullQueue(BULL_QUEUE, { connection, prefix: bullPrefix });
    // No processor: the worker only fetches (getNextJob) and completes (moveToCompleted) when asked to.
    bullWorker = new BullWorker(BULL_QUEUE, null, { connection, prefix: bullPrefix, autorun: false });
    await bullWorker.waitUntilReady();
  }
  await queue1.snapshot();
  await queue.snapshot(); // connects and checks the schema before the first timed cycle

  let seq = 0;
  const leaseholdCycle = async (queue: WorkQueue): Promise<boolean> => {
      const c = await queue.claim(workerId);
      if (!c.ok) {
        if (c.reason === 'empty') return false;
        throw new Error(`leasehold claim failed: ${c.reason}`);
      }
      const r = await queue.complete(c.task.id, workerId, c.task.generation, RESULT);
      if (!r.ok || r.outcome !== 'done') throw new Error(`leasehold complete failed: ${JSON.stringify(r)}`);
      return true;
  };
  const cycle: Record<ContenderName, () => Promise<boolean>> = {
    leasehold: () => leaseholdCycle(queue),
    'leasehold-1t': () => leaseholdCycle(queue1),
    async floor() {
      const now = Date.now();
      const { rows } = await floorQuery('floor_claim', [quoted(workerId), String(now), String(PG_CYCLE_CONFIG.globalLimit), String(PG_CYCLE_CONFIG.perTenantLimit)]);
      const job = rows[0] as { id: string; generation: number } | undefined;
      if (job === undefined) return false;
      const done = await floorQuery('floor_complete', [String(job.id), quoted(workerId), String(job.generation), quoted(resultJson), String(Date.now())]);
      if (done.rows[0]?.n !== 1) throw new Error(`floor: completing job ${job.id} generation ${job.generation} matched ${done.rows[0]?.n} rows`);
      return true;
    },
    async 'floor-client'() {
      const claimedAt = Date.now();
      const candidate = (await texts(floorClient.claimRead(claimedAt, PG_CYCLE_CONFIG.globalLimit, PG_CYCLE_CONFIG.perTenantLimit))).at(-1)!.rows[0] as { id: string; generation: number; tenant: string } | undefined;
      if (candidate === undefined) {
        await client.query('ROLLBACK');
        return false;
      }
      const claimed = await texts(floorClient.claimWrite(candidate.id, candidate.generation, quoted(candidate.tenant), quoted(workerId), claimedAt));
      if (claimed[0]!.rowCount !== 1) throw new Error(`floor-client: claiming job ${candidate.id} updated ${claimed[0]!.rowCount} rows`);
      const generation = candidate.generation + 1;
      const completedAt = Date.now();
      const row = (await texts(floorClient.completeRead(candidate.id))).at(-1)!.rows[0] as { state: string; worker_id: string; generation: number; lease_until: string; tenant: string; version: string } | undefined;
      if (row === undefined || row.state !== 'running' || row.worker_id !== workerId || row.generation !== generation || Number(row.lease_until) <= completedAt) {
        throw new Error(`floor-client: job ${candidate.id} is not held by ${workerId} generation ${generation}: ${JSON.stringify(row)}`);
      }
      const done = await texts(floorClient.completeWrite(candidate.id, quoted(row.tenant), quoted(workerId), generation, quoted(resultJson), completedAt, quoted(row.version)));
      // [BEGIN, SET LOCAL, the lock, the writes, COMMIT, the flush]: nothing else writes this job, so its version held.
      if (done[3]!.rows[0]?.n !== 1) throw new Error(`floor-client: completing job ${candidate.id} changed ${done[3]!.rows[0]?.n} rows`);
      return true;
    },
    async 'graphile-worker'() {
      const { rows } = await client.query({ ...gwGet, values: [workerId, [gwTaskId]] });
      const job = rows[0] as { id: string } | undefined;
      if (job === undefined) return false;
      const done = await client.query({ ...gwDone, values: [job.id] });
      if (done.rowCount !== 1) throw new Error(`graphile-worker: completing job ${job.id} deleted ${done.rowCount} rows`);
      return true;
    },
    async 'pg-boss'() {
      const jobs = await boss.fetch(BOSS_QUEUE);
      const job = jobs[0];
      if (job === undefined) return false;
      const r = (await boss.complete(BOSS_QUEUE, job.id)) as unknown as { affected: number };
      if (r.affected !== 1) throw new Error(`pg-boss: complete(${job.id}) affected ${r.affected}`);
      return true;
    },
    async bullmq() {
      const token = workerId;
      const job = await bullWorker!.getNextJob(token, { block: false });
      if (job === undefined || job === null) return false;
      await job.moveToCompleted(RESULT, token, false);
      return true;
    },
  };

  const leaseholdFill = async (queue: WorkQueue, tenants: number, n: number): Promise<void> => {
      for (let i = 0; i < n; i++) {
        const s = seq++;
        const r = await queue.enqueue({
          tenant: `t${(index * 7 + s) % tenants}`,
          topic: `w${index}-topic-${s}`,
          version: 1,
          priority: 0,
          input: { n: s, text: 'please look at order 1234' },
        });
        if (!r.ok || r.status !== 'enqueued') throw new Error(`leasehold enqueue failed: ${JSON.stringify(r)}`);
      }
  };
  /** Jobs for a floor's tables (floorSchemaSql), spread over the tenants as the Leasehold fill spreads tasks. */
  const floorFill = async (schema: string, n: number): Promise<void> => {
    const first = seq;
    seq += n;
    await client.query(
      `insert into ${schema}.jobs (tenant, enqueued_at, input) select 't' || ((${index * 7} + g) % ${PG_CYCLE_TENANTS}), $3::bigint, json_build_object('n', g, 'text', 'please look at order 1234') from generate_series($1::int, $2::int) g`,
      [first, first + n - 1, Date.now()],
    );
  };
  const fill: Record<ContenderName, (n: number) => Promise<void>> = {
    leasehold: (n) => leaseholdFill(queue, PG_CYCLE_TENANTS, n),
    'leasehold-1t': (n) => leaseholdFill(queue1, 1, n),
    floor: (n) => floorFill(floorSchema, n),
    'floor-client': (n) => floorFill(floorClientSchema, n),
    async 'graphile-worker'(n) {
      await client.query(
        `select count(*) from ${gwSchema}.add_jobs(array(select row($1::text, json_build_object('n', g, 'text', 'please look at order 1234'), null, null, null, null, null, null)::${gwSchema}.job_spec from generate_series(1, $2::int) g))`,
        [GW_TASK, n],
      );
    },
    async 'pg-boss'(n) {
      const jobs = Array.from({ length: n }, () => ({ name: BOSS_QUEUE, data: { n: seq++, text: 'please look at order 1234' } }));
      await boss.insert(jobs);
    },
    async bullmq(n) {
      const jobs = Array.from({ length: n }, () => ({ name: 'bench', data: { n: seq++, text: 'please look at order 1234' } }));
      await bullQueue!.addBulk(jobs);
    },
  };

  const lines = createInterface({ input: process.stdin });
  let chain: Promise<void> = Promise.resolve();
  let quit: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (quit = resolve));
  lines.on('close', () => process.exit(0));
  lines.on('line', (line) => {
    const t0 = process.hrtime.bigint();
    const [cmd, name, num] = line.trim().split(' ');
    chain = chain.then(async () => {
      if (cmd === 'go') {
        const run = cycle[name as ContenderName];
        const deadline = t0 + BigInt(Number(num)) * 1_000_000n;
        let count = 0;
        let exhausted = false;
        while (process.hrtime.bigint() < deadline) {
          if (!(await run())) {
            exhausted = true;
            break;
          }
          count++;
        }
        emit({ type: 'count', count, ns: Number(process.hrtime.bigint() - t0), exhausted, ...(name === 'floor' ? { deadlocks: floorDeadlocks } : {}) });
      } else if (cmd === 'fill') {
        await fill[name as ContenderName](Number(num));
        emit({ type: 'filled' });
      } else if (cmd === 'quit') {
        quit();
      } else {
        throw new Error(`unknown command ${line}`);
      }
    });
    chain.catch((error: unknown) => {
      const err = error as { message?: string; stack?: string };
      emit({ type: 'error', message: err?.message ?? String(error), stack: err?.stack });
      process.exit(1);
    });
  });
  emit({ type: 'ready' });
  await finished;
  await queue.close();
  await queue1.close();
  await boss.stop({ graceful: false, close: false }).catch(() => undefined);
  await bullWorker?.close();
  await bullQueue?.close();
  await client.end();
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (invokedDirectly) main().then(
  () => process.exit(0),
  (error: unknown) => {
    const err = error as { message?: string; stack?: string };
    emit({ type: 'error', message: err?.message ?? String(error), stack: err?.stack });
    process.exit(1);
  },
);
