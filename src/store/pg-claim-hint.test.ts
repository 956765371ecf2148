/**
 * W1 on PostgreSQL, the claim hint (pg-claim-hint.ts): an enqueue that leaves its task the only ready
 * one sends what a claim reads first in its notice, and keeps it; the next claim of a store that has it
 * claims in one round trip, checking under the lock that those reads still hold, and reads them again
 * the usual way when they do not. On the server (tracing what pg sends) and on PGlite (the same SQL).
 */
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { assertEventLogConsistent, ManualClock } from '../queue/__test-helpers__/test-kit.ts';
import type { WorkQueue } from '../queue/types.ts';
import { openWorkQueue } from '../work-queue.ts';
import { dropSchema, freshSchemaName, PG_URL } from './__test-helpers__/pg-test-store.ts';
import { HINT_MAX_BYTES, notifyWithHint, parseSnapshot, snapshotUnchanged, splitPayload } from './pg-claim-hint.ts';
import { claimableChannel, PG_TYPES, queueLockKey } from './pg-store.ts';
import { PgStatements } from './pg-statements.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const CONFIG = { busyRetries: 3, globalLimit: 100, perTenantLimit: 100 };

function openQueue(schema: string, clock: ManualClock, db: string | PGlite = PG_URL): WorkQueue {
  const queue = openWorkQueue({ db, schema, clock, config: CONFIG });
  cleanups.push(() => queue.close());
  return queue;
}

function serverSchema(): string {
  const schema = freshSchemaName();
  cleanups.push(() => dropSchema(schema));
  return schema;
}

/** Runs `work` and returns its result with the text of every query a pg client sent meanwhile, PREPAREs left out. */
async function tracing<T>(work: () => Promise<T>): Promise<{ result: T; trips: string[] }> {
  const sent: string[] = [];
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const config = args[0] as string | { text: string };
    sent.push(typeof config === 'string' ? config : config.text);
    return (original as (...a: unknown[]) => Promise<unknown>).apply(this, args);
  } as typeof original;
  try {
    const result = await work();
    return { result, trips: sent.filter((text) => !/^(BEGIN;(\s*SET LOCAL [^;]*;)?\s*)?PREPARE /.test(text)) };
  } finally {
    pg.Client.prototype.query = original;
  }
}

/** A connection LISTENing on the schema's channel: the payloads it has heard, in order. */
async function listening(schema: string): Promise<{ payloads: string[]; next: () => Promise<string> }> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  cleanups.push(() => client.end());
  const payloads: string[] = [];
  const waiting: ((payload: string) => void)[] = [];
  client.on('notification', (message) => {
    payloads.push(message.payload ?? '');
    waiting.shift()?.(message.payload ?? '');
  });
  await client.query(`LISTEN ${claimableChannel(queueLockKey(schema))}`);
  let seen = 0;
  return {
    payloads,
    next: () => (seen < payloads.length ? Promise.resolve(payloads[seen++]!) : new Promise((resolve) => waiting.push((payload) => (seen++, resolve(payload))))),
  };
}

const task = (tenant: string, topic: string, priority = 0) => ({ tenant, topic, version: 1, priority, input: { topic } });

describe('the claim hint on a PostgreSQL server', () => {
  it("an enqueue leaving the only ready task sends the claim's first reads in its notice; the same store's next claim takes one round trip", async () => {
    const schema = serverSchema();
    const clock = new ManualClock();
    const queue = openQueue(schema, clock);
    const heard = await listening(schema);
    // Warm: the connection has prepared what a cycle uses, so the counts below are the round trips alone.
    expect(await queue.enqueue(task('acme', 'warm'))).toMatchObject({ ok: true });
    const warm = await queue.claim('w0');
    expect(warm).toMatchObject({ ok: true });
    if (!warm.ok) return;
    await queue.complete(warm.task.id, 'w0', warm.task.generation, {});
    await heard.next();

    const enqueued = await queue.enqueue(task('acme', 'one'));
    expect(enqueued).toMatchObject({ ok: true });
    const { xid, hint } = splitPayload(await heard.next());
    expect(xid).toMatch(/^\d+$/);
    const snapshot = parseSnapshot(hint);
    expect(snapshot).toBeDefined();
    // The heads whatever the time: acme's one task, with its row read ahead as the likely pick.
    expect(snapshot!.results[2]!.rows).toMatchObject([{ tenant: 'acme', id: (enqueued as { taskId: number }).taskId, priority: 0, ahead_input: true }]);
    expect(snapshot!.results[0]!.rows).toEqual([]);

    clock.advance(10);
    const { result, trips } = await tracing(() => queue.claim('w1'));
    expect(result).toMatchObject({ ok: true, task: { id: (enqueued as { taskId: number }).taskId, generation: 1 } });
    expect(trips, trips.join('\n----\n')).toHaveLength(1);
    expect(trips[0]).toMatch(/^BEGIN;.*txid_current\(\) AS xid;\s*EXECUTE leasehold_queueLock_b\([^)]*\);\s*EXECUTE leasehold_claimSnapshotUnchanged_b\(.*COMMIT; SELECT pg_logical_emit_message/s);
    await assertEventLogConsistent(queue);
  });

  it("the snapshot is exactly what the claim reads first, row for row and type for type, with holders and pauses in it", async () => {
    const schema = serverSchema();
    const clock = new ManualClock();
    const queue = openQueue(schema, clock);
    const heard = await listening(schema);
    // A holder (acme's task claimed), a paused tenant, then one ready task of a third tenant.
    expect(await queue.enqueue(task('acme', 'held'))).toMatchObject({ ok: true });
    expect(await queue.claim('w1')).toMatchObject({ ok: true });
    expect(await queue.pauseTenant('bravo', 'maintenance')).toMatchObject({ ok: true });
    clock.advance(5);
    expect(await queue.enqueue(task('cargo', 'ready', 7))).toMatchObject({ ok: true });
    // Two notices (the enqueues; a claim and a pause make nothing claimable).
    const payloads = [await heard.next(), await heard.next()];
    const snapshot = parseSnapshot(splitPayload(payloads.at(-1)).hint);
    expect(snapshot).toBeDefined();

    const [at, agingCap, agingPeriodMs, perTenantLimit, tenantLimits] = snapshot!.settings;
    const reads = PgStatements.readsFirst({ claim: { agingCap, agingPeriodMs, perTenantLimit, tenantLimits } }, at);
    const client = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
    await client.connect();
    cleanups.push(() => client.end());
    const read = [];
    for (const config of reads) read.push((await client.query({ text: config.text, values: config.values, types: PG_TYPES } as pg.QueryConfig)).rows);
    expect(read[0]).toHaveLength(1);
    expect(read[1]).toMatchObject([{ tenant: 'bravo' }]);
    expect(read[2]).toMatchObject([{ tenant: 'cargo', priority: 7 }]);
    expect(snapshot!.results.map((result) => result.rows)).toEqual(read);
    // And the check under the lock agrees with it now.
    const check = snapshotUnchanged(snapshot!);
    expect((await client.query({ text: check.text, values: check.values })).rows).toEqual([{ unchanged: 1 }]);
  });

  it('a snapshot that no longer holds is refused under the lock, nothing written, and the claim reads again with the lock (a pause meanwhile)', async () => {
    const schema = serverSchema();
    const clock = new ManualClock();
    const producer = openQueue(schema, clock);
    const operator = openQueue(schema, clock);
    expect(await producer.enqueue(task('acme', 'x'))).toMatchObject({ ok: true });
    // Another store pauses acme after the enqueue: the producer's snapshot still says acme may run.
    expect(await operator.pauseTenant('acme', 'incident')).toMatchObject({ ok: true, changed: true });
    const { result, trips } = await tracing(() => producer.claim('w1'));
    expect(result).toMatchObject({ ok: false });
    // The hinted round trip failed at its check (the claim's writes in it went nowhere), then the usual claim.
    expect(trips[0]).toContain('EXECUTE leasehold_claimSnapshotUnchanged_b');
    expect(trips[1]).toBe('ROLLBACK');
    expect(trips[2]).toMatch(/^BEGIN;.*pg_advisory_xact_lock/s);
    expect(await producer.tasksInState('running')).toEqual([]);
    expect(await operator.resumeTenant('acme')).toMatchObject({ ok: true, changed: true });
    expect(await producer.claim('w1')).toMatchObject({ ok: true });
    await assertEventLogConsistent(producer);
  });

  it('a snapshot whose task another store claimed meanwhile: the claim finds nothing and never claims it twice', async () => {
    const schema = serverSchema();
    const clock = new ManualClock();
    const producer = openQueue(schema, clock);
    const other = openQueue(schema, clock);
    const enqueued = await producer.enqueue(task('acme', 'x'));
    expect(await other.claim('w2')).toMatchObject({ ok: true, task: { id: (enqueued as { taskId: number }).taskId } });
    expect(await producer.claim('w1')).toMatchObject({ ok: false, reason: 'empty' });
    expect(await producer.tasksInState('running')).toMatchObject([{ workerId: 'w2' }]);
    await assertEventLogConsistent(producer);
  });

  it('sends no snapshot when another task is ready (a backlog: busy workers claim on their own) or when it would not fit in a notice', async () => {
    const schema = serverSchema();
    const clock = new ManualClock();
    const queue = openQueue(schema, clock);
    const heard = await listening(schema);
    await queue.enqueue(task('acme', 'a'));
    expect(splitPayload(await heard.next()).hint).toBeDefined();
    await queue.enqueue(task('acme', 'b'));
    expect(await heard.next()).toMatch(/^\d+$/);
    // Holders enough that the snapshot is over HINT_MAX_BYTES: the notice is sent without it.
    for (let i = 0; i < 80; i++) await queue.enqueue(task(`t${i % 10}`, `h${i}`));
    for (let i = 0; i < 82; i++) expect(await queue.claim(`worker-with-a-long-name-${i}`)).toMatchObject({ ok: true });
    const before = heard.payloads.length;
    await queue.enqueue(task('acme', 'last'));
    while (heard.payloads.length === before) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(heard.payloads.at(-1)).toMatch(/^\d+$/);
    // The same statement, run for that state, says why: the snapshot's size.
    const lock = queueLockKey(schema);
    const notice = notifyWithHint(claimableChannel(lock), '1', { agingCap: 10, agingPeriodMs: 60_000, perTenantLimit: 100, tenantLimits: {} }, clock.now());
    const client = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
    await client.connect();
    cleanups.push(() => client.end());
    const { rows } = await client.query(
      `SELECT octet_length(json_agg(x)::text) AS bytes FROM (SELECT id, tenant, state, generation, worker_id, lease_until, hold_state FROM tasks WHERE state IN ('running','uncertain')) AS x`,
    );
    expect(Number(rows[0]!.bytes)).toBeGreaterThan(HINT_MAX_BYTES);
    expect((await client.query({ text: notice.text, values: notice.values })).rows).toMatchObject([{ hint: null }]);
  });
});

describe('the claim hint on PGlite', () => {
  it('claims from the snapshot when it holds and reads again when another store wrote meanwhile', async () => {
    const db = new PGlite();
    cleanups.push(() => db.close());
    const clock = new ManualClock();
    const producer = openQueue('hint', clock, db);
    const other = openQueue('hint', clock, db);
    const first = await producer.enqueue(task('acme', 'one'));
    expect(await producer.claim('w1')).toMatchObject({ ok: true, task: { id: (first as { taskId: number }).taskId } });
    await producer.enqueue(task('acme', 'two'));
    expect(await other.pauseTenant('acme', 'incident')).toMatchObject({ ok: true });
    expect(await producer.claim('w1')).toMatchObject({ ok: false });
    expect(await producer.tasksInState('running')).toHaveLength(1);
    await other.resumeTenant('acme');
    expect(await producer.claim('w2')).toMatchObject({ ok: true });
    await assertEventLogConsistent(producer);
  });
});

describe('a notice payload', () => {
  it('is split into the transaction id and the snapshot text', () => {
    expect(splitPayload(undefined)).toEqual({ xid: undefined, hint: undefined });
    expect(splitPayload('')).toEqual({ xid: undefined, hint: undefined });
    expect(splitPayload('123')).toEqual({ xid: '123', hint: undefined });
    expect(splitPayload('123 {"s":1}')).toEqual({ xid: '123', hint: '{"s":1}' });
  });

  it('gives no snapshot for anything that is not one', () => {
    const good = { s: [1, 10, 60_000, 64, {}], h: [], p: [], r: [{ tenant: 'a', id: 1 }], d: '0123456789abcdef0123456789abcdef' };
    expect(parseSnapshot(JSON.stringify(good))).toMatchObject({ settings: [1, 10, 60_000, 64, {}], digest: good.d });
    for (const bad of [
      undefined,
      null,
      'not json',
      '[]',
      '{}',
      JSON.stringify({ ...good, s: [1, 10, 60_000, 64] }),
      JSON.stringify({ ...good, s: [1.5, 10, 60_000, 64, {}] }),
      JSON.stringify({ ...good, s: [1, 10, 60_000, 64, []] }),
      JSON.stringify({ ...good, h: {} }),
      JSON.stringify({ ...good, r: [1] }),
      JSON.stringify({ ...good, d: 'zz' }),
    ]) {
      expect(parseSnapshot(bad)).toBeUndefined();
    }
  });
});
