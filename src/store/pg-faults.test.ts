/**
 * SPEC P4, issue 19 item 2: the faults of a real PostgreSQL server, caused for real, against the queue
 * and the worker runtime on top of it: a backend terminated mid-transaction (pg_terminate_backend), a
 * serialization failure raised by the server inside the store's transaction, a deadlock, and a server
 * restart. Each surfaces as a typed, retryable error (or is retried inside the store), nothing committed
 * is lost, nothing half-written stays, and the worker runtime carries on within its bounds.
 *
 * The restart test starts a server of its own (throwaway-postgres.ts), never the shared one; the others
 * work in a schema of their own on the run's server (LEASEHOLD_PG_URL).
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectionError, RetryableStoreError, SystemClock, TimerWaiter, Worker, openWorkQueue, type RunOutcome, type WorkQueue } from '../index.ts';
import { startThrowawayPostgres } from './__test-helpers__/throwaway-postgres.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function serverUrl(): string {
  const url = process.env.LEASEHOLD_PG_URL;
  if (url === undefined || url === '') throw new Error('LEASEHOLD_PG_URL is not set: vitest.config.ts globalSetup should have set it');
  return url;
}

async function sql<T extends pg.QueryResultRow = pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

let schemaCount = 0;

/** A fresh schema on the run's server and a URL whose connections use it and name themselves after it. */
async function freshSchema(base = serverUrl()): Promise<{ schema: string; url: string }> {
  const schema = `lh_faults_${process.pid}_${++schemaCount}`;
  await sql(base, `DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
  cleanups.push(async () => void (await sql(base, `DROP SCHEMA IF EXISTS ${schema} CASCADE`)));
  const url = `${base}${base.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}&application_name=${schema}`;
  return { schema, url };
}

function open(url: string, config: Parameters<typeof openWorkQueue>[0]['config'] = {}): WorkQueue {
  const queue = openWorkQueue({ db: url, clock: new SystemClock(), config: { busyRetries: 5, ...config } });
  cleanups.push(() => queue.close());
  return queue;
}

/** The queue's own backends on the server (its connections carry the schema as application_name). */
async function terminateBackends(base: string, applicationName: string): Promise<number> {
  const rows = await sql<{ n: string }>(base, 'SELECT count(pg_terminate_backend(pid))::text AS n FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()', [applicationName]);
  return Number(rows[0]?.n ?? 0);
}

/** A stub agent: one read-only tool call, then the answer. */
function stubWorker(queue: WorkQueue, workerId: string, outcomes: RunOutcome[], logs: string[]): Worker {
  return new Worker({
    queue,
    workerId,
    clock: new SystemClock(),
    waiter: new TimerWaiter(),
    slots: 2,
    idleWaitMs: 20,
    maxIdleWaitMs: 100,
    // W2: store trouble is retried for as long as it lasts, 100 ms after the first refusal, then up to 1 s apart.
    busyWaitMs: 100,
    busyWaitMaxMs: 1_000,
    // Each call takes 200 ms, so runs are in flight whenever the server goes down.
    tools: [{ name: 'lookup', readOnly: true, call: async (args) => new TimerWaiter().sleep(200).then(() => ({ seen: args })) }],
    model: {
      decide: async ({ step, input }) =>
        step === 0 ? { toolCalls: [{ id: 'c0', tool: 'lookup', args: input }], usage: { inputTokens: 10, outputTokens: 2 } } : { toolCalls: [], final: 'ok', usage: { inputTokens: 5, outputTokens: 1 } },
    },
    onOutcome: (outcome) => outcomes.push(outcome),
    log: (line) => logs.push(line.message),
  });
}

async function until(what: string, timeoutMs: number, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await done()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Q15 and the claim order: each task's events contiguous, its claims' generations 1, 2, ... */
async function expectLogConsistent(queue: WorkQueue): Promise<void> {
  for (const task of (await queue.snapshot()).tasks) {
    const events = await queue.events(task.id);
    expect(events.map((event) => event.seq), `task ${task.id}`).toEqual(events.map((_, i) => i + 1));
    const claims = events.filter((event) => event.type === 'claimed').map((event) => event.data.generation);
    expect(claims, `task ${task.id}`).toEqual(claims.map((_, i) => i + 1));
  }
}

describe('PostgreSQL server faults (SPEC P4)', () => {
  it('a backend terminated mid-transaction: the transaction is rolled back whole and retried; nothing half-written', async () => {
    const base = serverUrl();
    const { schema, url } = await freshSchema(base);
    const queue = open(url);
    expect((await queue.enqueue({ tenant: 'acme', topic: 'warm-up', version: 1, priority: 1, input: {} })).ok).toBe(true);
    // Each insert into events sleeps 300 ms inside the store's transaction: long enough to be killed in.
    await sql(base, `CREATE FUNCTION ${schema}.slow_event() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.3); RETURN NEW; END $$;
      CREATE TRIGGER slow_event BEFORE INSERT ON ${schema}.events FOR EACH ROW EXECUTE FUNCTION ${schema}.slow_event()`);
    const enqueued = queue.enqueue({ tenant: 'acme', topic: 'killed-mid-write', version: 1, priority: 1, input: { n: 1 } });
    // Wait until the enqueue's transaction is inside its insert, then kill that backend.
    await until('the enqueue in flight', 5_000, async () => (await sql(base, `SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND state = 'active' AND query ILIKE '%insert%'`, [schema])).length > 0);
    expect(await terminateBackends(base, schema)).toBeGreaterThan(0);
    await sql(base, `DROP TRIGGER slow_event ON ${schema}.events`);
    // The store retried on a fresh connection: one task, one enqueued event, nothing of the killed attempt.
    const result = await enqueued;
    expect(result).toMatchObject({ ok: true, status: 'enqueued' });
    const rows = await sql<{ n: string }>(base, `SELECT count(*)::text AS n FROM ${schema}.tasks WHERE topic = 'killed-mid-write'`);
    expect(rows[0]?.n).toBe('1');
    const events = await queue.events((result as { taskId: number }).taskId);
    expect(events.map((event) => event.type)).toEqual(['enqueued']);
    await expectLogConsistent(queue);
  });

  it('a serialization failure the server raises inside the transaction is retried; the write lands once, or the call fails typed with nothing written', async () => {
    const base = serverUrl();
    const { schema, url } = await freshSchema(base);
    const queue = open(url, { busyRetries: 3 });
    expect((await queue.enqueue({ tenant: 'acme', topic: 'warm-up', version: 1, priority: 1, input: {} })).ok).toBe(true);
    // The server fails the first `limit` event inserts from now on with SQLSTATE 40001, as SERIALIZABLE
    // does under a conflict. A sequence counts the attempts: nextval is not rolled back with them.
    await sql(base, `CREATE SEQUENCE ${schema}.attempts; CREATE TABLE ${schema}.conflict_limit (n INTEGER); INSERT INTO ${schema}.conflict_limit VALUES (2);
      CREATE FUNCTION ${schema}.conflict() RETURNS trigger LANGUAGE plpgsql SET search_path = ${schema} AS $$
      BEGIN
        IF nextval('attempts') <= (SELECT n FROM conflict_limit) THEN
          RAISE EXCEPTION 'could not serialize access due to read/write dependencies among transactions' USING ERRCODE = '40001';
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER conflict BEFORE INSERT ON ${schema}.events FOR EACH ROW EXECUTE FUNCTION ${schema}.conflict()`);
    // Two failures, three retries: the third attempt lands, once.
    const landed = await queue.enqueue({ tenant: 'acme', topic: 'conflicted', version: 1, priority: 1, input: {} });
    expect(landed).toMatchObject({ ok: true, status: 'enqueued' });
    expect((await sql<{ n: string }>(base, `SELECT last_value::text AS n FROM ${schema}.attempts`))[0]?.n).toBe('3');
    expect((await queue.events((landed as { taskId: number }).taskId)).map((event) => event.type)).toEqual(['enqueued']);
    // More failures than retries: the call fails typed and retryable, and nothing of it was written.
    await sql(base, `ALTER SEQUENCE ${schema}.attempts RESTART; UPDATE ${schema}.conflict_limit SET n = 100`);
    const refused = await queue.enqueue({ tenant: 'acme', topic: 'refused', version: 1, priority: 1, input: {} }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ConnectionError);
    expect(refused).toMatchObject({ code: 'serialization_failure', sqlState: '40001', maybeCommitted: false, attempts: 4 });
    expect(await sql(base, `SELECT id FROM ${schema}.tasks WHERE topic = 'refused'`)).toEqual([]);
    await expectLogConsistent(queue);
  }, 30_000);

  it('a deadlock with another session: PostgreSQL aborts one side, the store retries, the claim lands once', async () => {
    const base = serverUrl();
    const { schema, url } = await freshSchema(base);
    const queue = open(url, { busyRetries: 5 });
    const enqueued = await queue.enqueue({ tenant: 'acme', topic: 'contended', version: 1, priority: 1, input: {} });
    if (!enqueued.ok) throw new Error(JSON.stringify(enqueued));
    // Another session locks the task row, so the claim (holding the queue's advisory lock) waits for it;
    // then that session asks for the queue's advisory lock itself: a cycle the deadlock detector breaks.
    const other = new pg.Client({ connectionString: base });
    await other.connect();
    cleanups.push(() => other.end());
    await other.query('SET deadlock_timeout = 100');
    await other.query('BEGIN');
    await other.query(`SELECT id FROM ${schema}.tasks WHERE id = $1 FOR UPDATE`, [enqueued.taskId]);
    const claim = queue.claim('w1');
    await until('the claim waiting on the row lock', 5_000, async () => (await sql(base, `SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, [schema])).length > 0);
    const locks = await sql<{ classid: number; objid: number }>(base, `SELECT classid::int AS classid, objid::int AS objid FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE a.application_name = $1 AND l.locktype = 'advisory' AND l.granted`, [schema]);
    expect(locks.length, 'the claim holds the queue\'s advisory lock').toBe(1);
    const otherSide = other.query('SELECT pg_advisory_xact_lock($1::int, $2::int)', [locks[0]!.classid, locks[0]!.objid]).then(
      () => 'granted',
      (error: { code?: string }) => error.code,
    );
    const outcome = await otherSide;
    // Whichever side PostgreSQL chose to abort, the claim ends with the task claimed exactly once.
    if (outcome === 'granted') await other.query('ROLLBACK');
    else {
      expect(outcome).toBe('40P01');
      await other.query('ROLLBACK');
    }
    const claimed = await claim;
    expect(claimed).toMatchObject({ ok: true, task: { id: enqueued.taskId, generation: 1 } });
    const events = await queue.events(enqueued.taskId);
    expect(events.map((event) => event.type)).toEqual(['enqueued', 'claimed']);
  }, 30_000);

  it('a server restart while workers run: calls fail typed and retryable, the runtime rides the outage out, nothing is lost or doubled, every run ends typed, every task ends done once', async () => {
    const server = await startThrowawayPostgres();
    cleanups.push(() => server.stop());
    const queue = open(server.url, { leaseMs: 30_000, heartbeatMs: 1_000, globalLimit: 4, perTenantLimit: 4 });
    const taskCount = 40;
    for (let i = 0; i < taskCount; i++) expect((await queue.enqueue({ tenant: `t${i % 3}`, topic: `task-${i}`, version: 1, priority: i % 4, input: { i } })).ok).toBe(true);
    const outcomes: RunOutcome[] = [];
    const logs: string[] = [];
    const workers = [stubWorker(queue, 'w1', outcomes, logs), stubWorker(queue, 'w2', outcomes, logs)];
    const loops = workers.map((worker) => worker.runLoop());
    await until('a first completion', 20_000, async () => outcomes.some((outcome) => outcome.kind === 'completed'));

    // While the workers run, the server goes down and comes back.
    const seen: unknown[] = [];
    const probe = openWorkQueue({ db: server.url, clock: new SystemClock(), config: { busyRetries: 0 } });
    cleanups.push(() => probe.close());
    await probe.snapshot();
    // Down for 2 s: every run in flight then meets the outage at its next write (each tool call takes 200 ms).
    const restarted = server.restart(2_000);
    await until('a call to fail while the server is down', 10_000, async () => {
      try {
        await probe.get(1);
        return false;
      } catch (error) {
        seen.push(error);
        return true;
      }
    });
    await restarted;
    expect(seen[0]).toBeInstanceOf(ConnectionError);
    expect(seen[0]).toBeInstanceOf(RetryableStoreError);

    const done = async () => (await queue.snapshot()).tasks.filter((task) => task.state === 'done').length === taskCount;
    await until('every task done after the restart', 60_000, done);
    for (const worker of workers) worker.stop();
    await Promise.all(loops);
    await Promise.all(workers.map((worker) => worker.drain(10_000)));
    const tasks = (await queue.snapshot()).tasks;
    // Nothing lost: every task ended done.
    expect(tasks.filter((task) => task.state !== 'done').map((task) => `${task.id}:${task.state}`)).toEqual([]);
    // Nothing doubled: each task was completed once (one `completed` event), whatever its runs met.
    for (const task of tasks) expect((await queue.events(task.id)).filter((event) => event.type === 'completed').map((event) => event.seq), `task ${task.id}`).toHaveLength(1);
    // Every run ended typed, by its own outcome or by losing its lease (R9): a complete committed just as
    // its connection was lost is retried (maybeCommitted) and then finds its lease moved on, which is the
    // correct end of that run, not a failure of the outage handling. No run crashed or gave up (W2).
    const kinds = new Set(outcomes.map((outcome) => outcome.kind));
    expect([...kinds].filter((kind) => kind !== 'completed' && kind !== 'lost_lease' && kind !== 'retry')).toEqual([]);
    expect(outcomes.filter((outcome) => outcome.kind === 'completed').length).toBeLessThanOrEqual(taskCount);
    // The outage reached the runtime: a run's call was refused and retried.
    expect(logs.filter((line) => /the database refused the call \((connection_lost|server_unavailable)\), attempt \d+; retrying/.test(line)).length).toBeGreaterThan(0);
    await expectLogConsistent(queue);
  }, 120_000);
});
