/**
 * A claim in one round trip from a handoff (issue 31, W1's pickup): a transaction that makes a task
 * claimable sends, with its NOTIFY, the task's row when it is the only task live in the queue and no
 * tenant is paused (SQL.claimableNotify). The store whose listener the notice names keeps it, and its
 * next claim answers its first reads from it: BEGIN, the lock, claimUnchanged, the claim's writes and
 * COMMIT go in one round trip. If the queue changed meanwhile, claimUnchanged fails it with nothing
 * written and the claim runs again, reading. On PGlite the handoff goes from the committing store to
 * the next claim of any store on the database.
 */
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectionError } from '../queue/errors.ts';
import { assertEventLogConsistent, ManualClock } from '../queue/__test-helpers__/test-kit.ts';
import type { WorkQueue } from '../queue/types.ts';
import { openWorkQueue } from '../work-queue.ts';
import { dropSchema, freshSchemaName, PG_URL } from './__test-helpers__/pg-test-store.ts';
import { preparing, tracing } from './__test-helpers__/pg-tracing.ts';
import { handoffJson, isRowChanged, SQL } from './pg-statements.ts';
import { CLAIM_OUTCOME, claimableChannel, PgStore, queueLockKey } from './pg-store.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function until(what: string, done: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  if (!done()) throw new Error(`timed out waiting for ${what}`);
}

async function sql(text: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    return await client.query(text, values);
  } finally {
    await client.end();
  }
}

/** Polls until a backend named `name` waits on a lock; its pid. */
async function waitingBackend(name: string): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const { rows } = await sql(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, [name]);
    if (rows.length > 0) return rows[0].pid as number;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no backend of ${name} waits on a lock`);
}

/**
 * A producer and a worker's queue on one fresh schema of the server (the worker's with an
 * application_name, to find its backends), and the notices the worker has heard so far.
 */
async function fleet(busyRetries = 3, handoff?: boolean): Promise<{ producer: WorkQueue; worker: WorkQueue; clock: ManualClock; heard: () => number; schema: string; name: string }> {
  const schema = freshSchemaName();
  cleanups.push(() => dropSchema(schema));
  const clock = new ManualClock();
  const config = { busyRetries, globalLimit: 10, perTenantLimit: 10 };
  const name = `lh_handoff_${schema}`;
  const url = new URL(PG_URL);
  url.searchParams.set('application_name', name);
  const producer = openWorkQueue({ db: PG_URL, schema, clock, config, ...(handoff === undefined ? {} : { handoff }) });
  const worker = openWorkQueue({ db: url.toString(), schema, clock, config, ...(handoff === undefined ? {} : { handoff }) });
  cleanups.push(() => producer.close(), () => worker.close());
  let notices = 0;
  const stop = worker.watch(() => notices++);
  cleanups.push(async () => stop());
  // The listener tells its watchers once when its LISTEN is up.
  await until('the worker listening', () => notices >= 1);
  return { producer, worker, clock, heard: () => notices, schema, name };
}

async function enqueue(queue: WorkQueue, topic: string, tenant = 'acme'): Promise<number> {
  const result = await queue.enqueue({ tenant, topic, version: 1, priority: 10, input: { topic } });
  if (!result.ok) throw new Error(`enqueue failed: ${result.error}`);
  return result.taskId;
}

/** The round trips a claim sent, without its statements' PREPAREs. */
const roundTrips = (sent: string[]) => sent.filter((text) => !preparing(text));

describe('a claim from a handoff, on a PostgreSQL server', () => {
  it('claims the one task of an idle queue in one round trip: BEGIN, the lock, the check, the writes and COMMIT', async () => {
    const { producer, worker, heard } = await fleet();
    // A first claim prepares the claim's statements on the worker's connection, so the next counts round trips only.
    const warm = await enqueue(producer, 'warm');
    expect(await worker.claim('w0')).toMatchObject({ ok: true, task: { id: warm } });
    expect(await worker.complete(warm, 'w0', 1, { ok: true })).toMatchObject({ ok: true });

    const before = heard();
    const id = await enqueue(producer, 'next');
    await until('the notice', () => heard() > before);
    const { result, sent } = await tracing(() => worker.claim('w1'));
    expect(result).toMatchObject({ ok: true, task: { id, tenant: 'acme', topic: 'next', generation: 1, input: { topic: 'next' } } });
    const trips = roundTrips(sent);
    expect(trips).toHaveLength(1);
    expect(trips[0]).toMatch(/^BEGIN;.*pg_advisory_xact_lock.*;\s*EXECUTE leasehold_claimUnchanged_b\('\d+', E?'\["\d+", \d+, "acme", "next",.*?\]'\);.*EXECUTE leasehold_taskClaim.*COMMIT;/s);
    expect(await worker.get(id)).toMatchObject({ state: 'running', workerId: 'w1', generation: 1 });
    await assertEventLogConsistent(worker);
  });

  it('a queue that changed since the handoff: the check fails with nothing written, and the claim reads and decides again', async () => {
    const { producer, worker, heard } = await fleet();
    const before = heard();
    const id = await enqueue(producer, 'paused-later');
    await until('the notice', () => heard() > before);
    // A pause sends no notice: the worker's handoff still says the tenant is claimable.
    await producer.pauseTenant('acme', 'maintenance');
    const { result, sent } = await tracing(() => worker.claim('w1'));
    expect(result).toMatchObject({ ok: false });
    expect(sent.some((text) => text.includes('leasehold_claimUnchanged_b'))).toBe(true);
    expect(sent).toContain('ROLLBACK');
    // Decided again on what is there: the paused tenant's task is passed over (and says so), not claimed.
    expect(await worker.get(id)).toMatchObject({ state: 'ready', generation: 0 });
    expect((await worker.events(id)).map((event) => event.type)).not.toContain('claimed');
    await assertEventLogConsistent(worker);
  });

  it('a task taken by another worker after its handoff is not claimed twice', async () => {
    const { producer, worker, heard } = await fleet();
    const before = heard();
    const id = await enqueue(producer, 'raced');
    await until('the notice', () => heard() > before);
    expect(await producer.claim('other')).toMatchObject({ ok: true, task: { id } });
    const { result, sent } = await tracing(() => worker.claim('w1'));
    expect(result).toMatchObject({ ok: false });
    expect(sent.some((text) => text.includes('leasehold_claimUnchanged_b'))).toBe(true);
    expect(await worker.get(id)).toMatchObject({ state: 'running', workerId: 'other', generation: 1 });
    expect((await worker.events(id)).map((event) => event.type)).toEqual(['enqueued', 'claimed']);
    await assertEventLogConsistent(worker);
  });

  it('sends no handoff while another task is live: the claim reads first, as without one', async () => {
    const { producer, worker, heard } = await fleet();
    await enqueue(producer, 'first');
    const before = heard();
    await enqueue(producer, 'second', 'beta');
    await until('the notice', () => heard() > before);
    const { result, sent } = await tracing(() => worker.claim('w1'));
    expect(result).toMatchObject({ ok: true, task: { topic: 'first' } });
    expect(sent.some((text) => text.includes('claimUnchanged'))).toBe(false);
  });

  it('a claim from a handoff whose backend is terminated before COMMIT: not committed, said so, and the retry claims it', async () => {
    const { producer, worker, heard, schema, name } = await fleet(0);
    const before = heard();
    const id = await enqueue(producer, 'cut');
    await until('the notice', () => heard() > before);
    // A second connection holds the task's row: the claim's write waits for it, COMMIT in the same round trip.
    const blocker = new pg.Client({ connectionString: PG_URL });
    await blocker.connect();
    blocker.on('error', () => undefined);
    cleanups.push(() => blocker.end().catch(() => undefined));
    await blocker.query('BEGIN');
    await blocker.query(`SELECT id FROM "${schema}".tasks WHERE id = $1 FOR UPDATE`, [id]);
    const claiming = worker.claim('w1').catch((error: unknown) => error);
    await sql('SELECT pg_terminate_backend($1)', [await waitingBackend(name)]);
    const error = await claiming;
    await blocker.query('ROLLBACK');
    // Its claimed event is not there, so the store knows it did not commit (its id never came back).
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toMatchObject({ code: 'connection_lost', maybeCommitted: false, operation: 'claim' });
    expect(await worker.get(id)).toMatchObject({ state: 'ready', generation: 0 });
    expect(await worker.claim('w1')).toMatchObject({ ok: true, task: { id, generation: 1 } });
    await assertEventLogConsistent(worker);
  });

  it('claimUnchanged holds only while the queue is as the handoff found it: each of its four conditions', async () => {
    const { producer, worker, schema } = await fleet();
    const x = await enqueue(producer, 'x');
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    cleanups.push(() => client.end());
    await client.query(`SET search_path TO "${schema}"`);
    // The task's row as a handoff carries it (its xmin first).
    const version = async () => (await client.query(`SELECT ${handoffJson('t')} AS v FROM tasks AS t WHERE t.id = $1`, [x])).rows[0].v as string;
    const xmin = await version();
    const holds = (id = x, v = xmin) =>
      client.query(SQL.claimUnchanged, [id, v]).then(
        () => true,
        (error: unknown) => (isRowChanged(error) ? false : Promise.reject(error)),
      );
    expect(await holds()).toBe(true);
    // Another task ready.
    const y = (await producer.enqueue({ tenant: 'beta', topic: 'y', version: 1, priority: 20, input: {} })) as { ok: true; taskId: number };
    expect(await holds()).toBe(false);
    // That task holding a slot, none other ready.
    expect(await worker.claim('w1')).toMatchObject({ ok: true, task: { id: y.taskId } });
    expect(await holds()).toBe(false);
    expect(await worker.complete(y.taskId, 'w1', 1, { ok: true })).toMatchObject({ ok: true });
    expect(await holds()).toBe(true);
    // A paused tenant, even another one.
    await producer.pauseTenant('zeta', 'maintenance');
    expect(await holds()).toBe(false);
    await producer.resumeTenant('zeta');
    expect(await holds()).toBe(true);
    // The task's row written since (its version moved on), though still ready and alone.
    await client.query('UPDATE tasks SET priority = priority WHERE id = $1', [x]);
    expect(await holds()).toBe(false);
    const now = await version();
    expect(await holds(x, now)).toBe(true);
    // A text that says otherwise of any column than the row does (here its input).
    expect(await holds(x, now.replace('"{\\"topic\\":\\"x\\"}"', '"{\\"topic\\":\\"forged\\"}"'))).toBe(false);
  });

  it("a notice anyone connected could send decides nothing: a forged handoff's input is not the task's, and the claim reads the row", async () => {
    const { producer, worker, heard, schema } = await fleet();
    const before = heard();
    const id = await enqueue(producer, 'real');
    await until('the notice', () => heard() > before);
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    cleanups.push(() => client.end());
    // The true handoff, with its input replaced, sent on the queue's channel by another connection.
    const real = (await client.query(`SELECT ${handoffJson('t')} AS v FROM "${schema}".tasks AS t WHERE t.id = $1`, [id])).rows[0].v as string;
    const forged = real.replace('{\\"topic\\":\\"real\\"}', '{\\"topic\\":\\"forged\\"}');
    expect(forged).not.toBe(real);
    const again = heard();
    await client.query('SELECT pg_notify($1, $2)', [claimableChannel(queueLockKey(schema)), `1 ${forged}`]);
    await until('the forged notice', () => heard() > again);
    const { result, sent } = await tracing(() => worker.claim('w1'));
    expect(sent.some((text) => text.includes('leasehold_claimUnchanged_b'))).toBe(true);
    expect(result).toMatchObject({ ok: true, task: { id, input: { topic: 'real' } } });
    await assertEventLogConsistent(worker);
  });

  it('handoff: false keeps the task out of the notice (its payload is the transaction id alone), and the claim reads first', async () => {
    const { producer, worker, heard, schema } = await fleet(3, false);
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    cleanups.push(() => client.end());
    const payloads: (string | undefined)[] = [];
    client.on('notification', (message) => payloads.push(message.payload));
    await client.query(`LISTEN ${claimableChannel(queueLockKey(schema))}`);
    const before = heard();
    const id = await enqueue(producer, 'private');
    await until('the notice', () => heard() > before);
    await client.query('SELECT 1');
    expect(payloads).toHaveLength(1);
    expect(payloads[0]).toMatch(/^\d+$/);
    const { result, sent } = await tracing(() => worker.claim('w1'));
    expect(result).toMatchObject({ ok: true, task: { id } });
    expect(sent.some((text) => text.includes('claimUnchanged'))).toBe(false);
  });

  it('refuses handoff for a SQLite queue, and one that is not a boolean, naming it', () => {
    const clock = new ManualClock();
    expect(() => openWorkQueue({ db: ':memory:', clock, handoff: false })).toThrow(expect.objectContaining({ name: 'ConfigError', field: 'handoff' }));
    expect(() => openWorkQueue({ db: PG_URL, clock, handoff: 'no' as unknown as boolean })).toThrow(/handoff must be true or false, got "no"/);
  });

  it("CLAIM_OUTCOME finds a claim by its claimed event: the worker's and the generation's", async () => {
    const { producer, worker, schema } = await fleet();
    const id = await enqueue(producer, 'outcome');
    expect(await worker.claim('w1')).toMatchObject({ ok: true, task: { id, generation: 1 } });
    const status = async (workerId: string, generation: number) => (await sql(CLAIM_OUTCOME(`"${schema}".events`), [id, workerId, generation])).rows[0]?.status;
    expect(await status('w1', 1)).toBe('committed');
    expect(await status('w2', 1)).toBe('aborted');
    expect(await status('w1', 2)).toBe('aborted');
  });
});

describe('a claim from a handoff, on PGlite', () => {
  /** Two queues (a producer's and a worker's stores) on one schema of one PGlite database, and every text the database was sent. */
  async function pgliteFleet(schema: string): Promise<{ producer: WorkQueue; worker: WorkQueue; sent: string[]; db: PGlite }> {
    const db = await PGlite.create();
    const sent: string[] = [];
    const exec = db.exec.bind(db);
    db.exec = (text: string, options?: Parameters<PGlite['exec']>[1]) => (sent.push(text), exec(text, options));
    const clock = new ManualClock();
    const open = (name: string) => {
      const queue = openWorkQueue({ db: PgStore.open(db, { busyRetries: 2, schema: name }, () => clock.now()), clock, config: { globalLimit: 10, perTenantLimit: 10 } });
      cleanups.push(() => queue.close());
      return queue;
    };
    cleanups.push(() => db.close());
    return { producer: open(schema), worker: open(schema), sent, db };
  }

  it("hands the one ready task from the producer's commit to the next claim on the same queue, and not to another queue's", async () => {
    const { producer, worker, sent } = await pgliteFleet('handoff');
    const warm = await enqueue(producer, 'warm');
    expect(await worker.claim('w0')).toMatchObject({ ok: true, task: { id: warm } });
    expect(await worker.complete(warm, 'w0', 1, { ok: true })).toMatchObject({ ok: true });
    const id = await enqueue(producer, 'next');
    sent.length = 0;
    expect(await worker.claim('w1')).toMatchObject({ ok: true, task: { id, generation: 1, input: { topic: 'next' } } });
    const trips = sent.filter((text) => !preparing(text));
    expect(trips).toHaveLength(1);
    expect(trips[0]).toMatch(/^BEGIN;.*EXECUTE leasehold_claimUnchanged_b/s);
    await assertEventLogConsistent(worker);
  });

  it("a handoff of another queue (schema) on the same database is not this queue's", async () => {
    const { producer, worker, sent, db } = await pgliteFleet('mine');
    const clock = new ManualClock();
    const other = openWorkQueue({ db: PgStore.open(db, { busyRetries: 2, schema: 'theirs' }, () => clock.now()), clock, config: { globalLimit: 10, perTenantLimit: 10 } });
    cleanups.push(() => other.close());
    const id = await enqueue(producer, 'mine');
    // Two live: no handoff for this queue; the other queue's one task has one of its own.
    await enqueue(producer, 'mine-too', 'beta');
    await enqueue(other, 'theirs');
    sent.length = 0;
    expect(await worker.claim('w1')).toMatchObject({ ok: true, task: { id } });
    expect(sent.some((text) => text.includes('claimUnchanged'))).toBe(false);
  });
});
