/**
 * The PostgreSQL store against a real server (SPEC P1-P4): LEASEHOLD_PG_URL, the run's server. Each
 * test works in a fresh schema that it drops at the end. The contract suite runs on this store too
 * (`npx vitest run --project contract:postgres`); these tests cover what only a server can show:
 * migrations raced from two openers, writers serialised across connections, and typed errors for a
 * terminated backend, a real deadlock and a server that is not there.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, ConnectionError, InvariantError, OpenError, RetryableStoreError } from '../queue/errors.ts';
import { assertEventLogConsistent, ManualClock } from '../queue/__test-helpers__/test-kit.ts';
import type { WorkQueue } from '../queue/types.ts';
import { openWorkQueue } from '../work-queue.ts';
import { dropSchema, freshSchemaName, PG_URL } from './__test-helpers__/pg-test-store.ts';
import { COMMIT_DURABLY, COMMIT_OUTCOME, PgStore, QUEUE_LOCK_CLASS, queueLockKey } from './pg-store.ts';
import { claimCandidate, claimLevelHead, claimReadyHeads } from './sql/claim.ts';
import { taskOlderUnstarted } from './sql/tasks.ts';
import type { TaskRow } from './store.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A fresh schema, dropped after the test (after everything opened on it is closed). */
function schemaForTest(): string {
  const schema = freshSchemaName();
  cleanups.push(() => dropSchema(schema));
  return schema;
}

/** The server URL with an application_name, so a test can find the store's backends. */
function urlNamed(applicationName: string): string {
  const url = new URL(PG_URL);
  url.searchParams.set('application_name', applicationName);
  return url.toString();
}

function openQueue(schema: string, options: { url?: string; busyRetries?: number; clock?: ManualClock } = {}): { queue: WorkQueue; clock: ManualClock } {
  const clock = options.clock ?? new ManualClock();
  const queue = openWorkQueue({
    db: options.url ?? PG_URL,
    schema,
    clock,
    config: { busyRetries: options.busyRetries ?? 3, globalLimit: 10, perTenantLimit: 10 },
  });
  cleanups.push(() => queue.close());
  return { queue, clock };
}

async function admin(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  client.on('error', () => undefined);
  cleanups.push(() => client.end().catch(() => undefined));
  return client;
}

/** Polls until the store's backend (by application_name), other than `except`, waits on a lock; its pid. */
async function waitingBackend(client: pg.Client, applicationName: string, except?: number): Promise<number> {
  for (let i = 0; i < 200; i++) {
    // A terminated backend can still be listed for a moment: `except` skips it.
    const { rows } = await client.query(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock' AND pid <> $2`, [applicationName, except ?? 0]);
    if (rows.length > 0) return rows[0].pid as number;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no backend of ${applicationName} waits on a lock`);
}

async function enqueueOne(queue: WorkQueue, tenant = 'acme', topic = 'topic'): Promise<number> {
  const result = await queue.enqueue({ tenant, topic, version: 1, priority: 0, input: { text: 'hello' } });
  if (!result.ok) throw new Error(`enqueue failed: ${result.error}`);
  return result.taskId;
}

/**
 * Runs `work` and returns its result with the text of every query any pg client sent meanwhile, in order.
 * `answered`, if given, sees each query's text and answer before the caller does, and may hold it back.
 */
async function tracing<T>(work: () => Promise<T>, answered?: (text: string, answer: unknown) => Promise<void> | void): Promise<{ result: T; sent: string[] }> {
  const sent: string[] = [];
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const config = args[0] as string | { text: string };
    const text = typeof config === 'string' ? config : config.text;
    sent.push(text);
    const answer = (original as (...a: unknown[]) => Promise<unknown>).apply(this, args);
    return answered === undefined ? answer : answer.then(async (value) => (await answered(text, value), value));
  } as typeof original;
  try {
    return { result: await work(), sent };
  } finally {
    pg.Client.prototype.query = original;
  }
}

describe('PgStore on a PostgreSQL server', () => {
  it('migrates once when two stores open the same schema at the same time, and again finds nothing to do', async () => {
    const schema = schemaForTest();
    const first = openQueue(schema).queue;
    const second = openQueue(schema).queue;
    const [a, b] = await Promise.all([first.schemaMigrations(), second.schemaMigrations()]);
    expect(a).toEqual(b);
    expect(a.map((row) => row.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(a.map((row) => row.appliedAt)).toEqual(Array(8).fill(a[0]!.appliedAt));
    const third = openQueue(schema).queue;
    expect(await third.schemaMigrations()).toEqual(a);
    const client = await admin();
    const { rows } = await client.query(`SELECT count(*)::int AS n FROM "${schema}".schema_migrations`);
    expect(rows[0].n).toBe(8);
  });

  it('refuses a schema newer than this code, typed, and writes nothing', async () => {
    const schema = schemaForTest();
    const { queue } = openQueue(schema);
    await queue.schemaMigrations();
    const client = await admin();
    await client.query(`INSERT INTO "${schema}".schema_migrations (version, name, applied_at) VALUES (99, 'from the future', 0)`);
    const newer = openQueue(schema).queue;
    const error = await newer.enqueue({ tenant: 'a', topic: 't', version: 1, priority: 0, input: {} }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenError);
    expect(error).toMatchObject({ reason: 'newer_schema' });
    const { rows } = await client.query(`SELECT count(*)::int AS n FROM "${schema}".tasks`);
    expect(rows[0].n).toBe(0);
  });

  it('opens a schema whose name has capitals, as the name is written (the server folds an unquoted name to lower case)', async () => {
    const schema = `${schemaForTest()}_Agents`;
    cleanups.push(() => dropSchema(schema));
    const { queue } = openQueue(schema);
    const id = await enqueueOne(queue);
    expect(await queue.claim('w1')).toMatchObject({ ok: true, task: { id } });
    const client = await admin();
    const { rows } = await client.query('SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = $1', [schema]);
    expect(rows[0].n).toBe(1);
    expect((await client.query(`SELECT state FROM "${schema}".tasks WHERE id = $1`, [id])).rows).toEqual([{ state: 'running' }]);
  });

  it("keeps a URL's own options and adds the schema's search_path to them (pg lets the URL's override the pool's)", async () => {
    const schema = schemaForTest();
    const name = `lh_opts_${schema}`;
    const url = new URL(PG_URL);
    url.searchParams.set('options', `-c application_name=${name}`);
    const { queue } = openQueue(schema, { url: url.toString() });
    const id = await enqueueOne(queue);
    expect(await queue.get(id)).toMatchObject({ state: 'ready' });
    const client = await admin();
    const { rows } = await client.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [name]);
    expect(rows[0].n).toBeGreaterThan(0);
  });

  describe('the connection of the last transaction is kept for the next one', () => {
    it('takes a connection from its own pool once for calls one after another, and gives it back on close', async () => {
      const connect = pg.Pool.prototype.connect;
      let connects = 0;
      pg.Pool.prototype.connect = function (this: pg.Pool, ...args: unknown[]) {
        connects++;
        return (connect as (...a: unknown[]) => unknown).apply(this, args);
      } as typeof connect;
      try {
        const schema = schemaForTest();
        const queue = openWorkQueue({ db: PG_URL, schema, clock: new ManualClock(), config: { globalLimit: 10, perTenantLimit: 10 } });
        // Closed below as part of the test; this one (a second close does nothing) covers a failed assertion.
        cleanups.push(() => queue.close());
        await enqueueOne(queue, 'a');
        const before = connects;
        for (const tenant of ['b', 'c', 'd', 'e']) await enqueueOne(queue, tenant);
        expect(await queue.claim('w1')).toMatchObject({ ok: true });
        expect(connects - before).toBe(0);
        // Two at once: the second takes another connection from the pool, and both answer.
        const both = await Promise.all([queue.snapshot(), queue.liveCount()]);
        expect(both[1]).toBe(5);
        // close() ends the pool, which waits for every connection it lent: the kept one is given back.
        await queue.close();
      } finally {
        pg.Pool.prototype.connect = connect;
      }
    });

    it('a kept connection the server ends for idling (idle_session_timeout) is not used again: the next call succeeds with no retry to spare', async () => {
      const schema = schemaForTest();
      const name = `lh_idle_timeout_${schema}`;
      const url = new URL(urlNamed(name));
      url.searchParams.set('options', '-c idle_session_timeout=100');
      const { queue } = openQueue(schema, { url: url.toString(), busyRetries: 0 });
      await enqueueOne(queue, 'a');
      const client = await admin();
      // The server ends the idle session after 100 ms; pg has heard of it once the server lists it no more.
      for (let i = 0; i < 500; i++) {
        const left = await client.query('SELECT 1 FROM pg_stat_activity WHERE application_name = $1', [name]);
        if (left.rows.length === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect((await client.query('SELECT 1 FROM pg_stat_activity WHERE application_name = $1', [name])).rows).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 50));
      await enqueueOne(queue, 'b');
      // Read on another connection: the queue's own may be ended for idling again at any moment.
      expect((await client.query(`SELECT tenant FROM "${schema}".tasks ORDER BY id`)).rows).toEqual([{ tenant: 'a' }, { tenant: 'b' }]);
    });

    it('a kept connection the server dropped while idle is not used again: the next call succeeds with no retry to spare', async () => {
      const schema = schemaForTest();
      const name = `lh_kept_${schema}`;
      const { queue } = openQueue(schema, { url: urlNamed(name), busyRetries: 0 });
      await enqueueOne(queue, 'a');
      const client = await admin();
      const { rows } = await client.query('SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE application_name = $1', [name]);
      expect(rows.length).toBeGreaterThan(0);
      // The terminated session is gone once the server lists it no more; pg has heard of it by then.
      for (let i = 0; i < 200; i++) {
        const left = await client.query('SELECT 1 FROM pg_stat_activity WHERE application_name = $1', [name]);
        if (left.rows.length === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
      await enqueueOne(queue, 'b');
      expect((await queue.snapshot()).tasks.map((task) => task.tenant)).toEqual(['a', 'b']);
    });
  });

  it('runs enqueue, claim, heartbeat, complete and the event log through openWorkQueue', async () => {
    const schema = schemaForTest();
    const { queue, clock } = openQueue(schema);
    const id = await enqueueOne(queue);
    const claimed = await queue.claim('w1');
    expect(claimed).toMatchObject({ ok: true, task: { id, generation: 1, leaseUntil: clock.t + queue.config.leaseMs } });
    if (!claimed.ok) return;
    clock.advance(1_000);
    expect(await queue.heartbeat(id, 'w1', 1)).toEqual({ ok: true, leaseUntil: clock.t + queue.config.leaseMs, cancelRequested: false });
    clock.advance(500);
    expect(await queue.complete(id, 'w1', 1, { answer: 42 })).toMatchObject({ ok: true });
    expect(await queue.get(id)).toMatchObject({ state: 'done', result: { answer: 42 }, runMs: 1_500, queueWaitMs: 0 });
    const events = await queue.events(id);
    expect(events.map((event) => [event.seq, event.type])).toEqual([
      [1, 'enqueued'],
      [2, 'claimed'],
      [3, 'completed'],
    ]);
    expect(events.at(-1)?.at).toBe(clock.t);
    expect(await queue.eventsSince(0)).toEqual(await queue.allEvents());
    await assertEventLogConsistent(queue);
  });

  it('sends the writes a body does not wait for with the next statement or with COMMIT, and every value arrives as it was sent', async () => {
    const schema = schemaForTest();
    const store = PgStore.open(urlNamed('batch-values'), { busyRetries: 0, schema }, () => 0);
    cleanups.push(() => store.close());
    const odd = ["o'brien", 'back\\slash \\\'', 'E\'x\' $1 ;--', 'ünï 🐝', '', 'new\nline\ttab'];
    await store.write('rejections', () => 5, function* (tx, at) {
      for (const [i, text] of odd.entries()) yield* tx.rejectionInsert(text, `${text}/topic`, i + 1, `reason ${text}`, at);
      // A read after pending writes goes in their round trip and sees them.
      expect(yield* tx.rejectionList()).toHaveLength(odd.length);
      yield* tx.rejectionInsert('last', 'sent with COMMIT', 99, 'queue_full', at);
    });
    const rows = await store.read('rejections', (tx) => tx.rejectionList());
    expect(rows).toEqual([
      ...odd.map((text, i) => ({ tenant: text, topic: `${text}/topic`, version: i + 1, reason: `reason ${text}`, at: 5 })),
      { tenant: 'last', topic: 'sent with COMMIT', version: 99, reason: 'queue_full', at: 5 },
    ]);
    const counters = await store.read('signals', (tx) => tx.signalList());
    expect(counters.find((row) => row.name === `rejection:reason ${odd[1]}`)).toMatchObject({ value: 1 });
  });

  it('claims in 2 round trips and completes in 2 (what the bench cycle does)', async () => {
    const schema = schemaForTest();
    const { queue } = openQueue(schema);
    const id = await enqueueOne(queue);
    const claim = await tracing(() => queue.claim('w1'));
    expect(claim.result).toMatchObject({ ok: true });
    const complete = await tracing(() => queue.complete(id, 'w1', 1, { answer: 42 }));
    expect(complete.result).toMatchObject({ ok: true });
    const sent = [...claim.sent, ...complete.sent];
    // Statements prepared for batches on first use on a connection are round trips of their own: count them apart.
    const preparing = (text: string) => /^(BEGIN;(\s*SET LOCAL [^;]*;)?\s*)?PREPARE /.test(text);
    expect({ claim: claim.sent.filter((text) => !preparing(text)).length, cycle: sent.filter((text) => !preparing(text)).length }).toEqual({ claim: 2, cycle: 4 });
    expect(sent.filter((text) => text.endsWith(COMMIT_DURABLY) && text.includes('EXECUTE leasehold_eventInsert_b'))).toHaveLength(2);
    expect(await queue.get(id)).toMatchObject({ state: 'done', result: { answer: 42 } });
    await assertEventLogConsistent(queue);
  });

  describe("a holder's call reads its row before the lock, and writes only if it is unchanged under the lock", () => {
    /** Runs `work` with `meanwhile` run once right after the round trip that read the holder's row, before the next is sent. */
    function between<T>(work: () => Promise<T>, meanwhile: () => Promise<unknown>): Promise<{ result: T; sent: string[] }> {
      let done = false;
      return tracing(work, async (text) => {
        if (done || !text.includes('EXECUTE leasehold_completingRowVersioned_b')) return;
        done = true;
        await meanwhile();
      });
    }

    it('takes the lock after the row, and checks the row in the same round trip as the writes', async () => {
      const { queue } = openQueue(schemaForTest());
      const id = await enqueueOne(queue);
      expect(await queue.claim('w1')).toMatchObject({ ok: true });
      const { result, sent } = await tracing(() => queue.complete(id, 'w1', 1, { answer: 42 }));
      expect(result).toMatchObject({ ok: true, outcome: 'done' });
      const [first, second] = sent.filter((text) => !/^(BEGIN;(\s*SET LOCAL [^;]*;)?\s*)?PREPARE /.test(text));
      expect(first).toContain('EXECUTE leasehold_completingRowVersioned_b');
      expect(first).not.toContain('pg_advisory_xact_lock');
      expect(second).toMatch(/^EXECUTE leasehold_queueLock_b\([^)]*\);\nEXECUTE leasehold_rowUnchanged_b\(/);
      expect(second!.endsWith(COMMIT_DURABLY)).toBe(true);
    });

    it('a cancel request committed between the read and the lock: the complete runs again with the lock first, and its event says a cancel was requested', async () => {
      const schema = schemaForTest();
      const { queue } = openQueue(schema);
      const other = openQueue(schema).queue;
      const id = await enqueueOne(queue);
      expect(await queue.claim('w1')).toMatchObject({ ok: true });
      const { result, sent } = await between(
        () => queue.complete(id, 'w1', 1, { answer: 42 }),
        async () => expect(await other.cancel(id)).toMatchObject({ ok: true }),
      );
      // Q13: completion committed after the request still wins, and says the request was there.
      expect(result).toMatchObject({ ok: true, outcome: 'done' });
      const events = await queue.events(id);
      expect(events.map((event) => event.type)).toEqual(['enqueued', 'claimed', 'cancel_requested', 'completed']);
      expect(events.at(-1)?.data).toMatchObject({ cancelRequested: true });
      // The first try's check failed under the lock; the second took the lock in its first round trip.
      const mine = sent.filter((text) => text.includes('leasehold_rowUnchanged_b') || text.includes('pg_advisory_xact_lock(') || text.includes('completingRowVersioned'));
      expect(mine.some((text) => text.includes('leasehold_rowUnchanged_b'))).toBe(true);
      expect(mine.at(-1)).toMatch(/pg_advisory_xact_lock\(.*EXECUTE leasehold_holderRow_b/s);
      await assertEventLogConsistent(queue);
    });

    it('a newer version enqueued between the read and the lock (a change beside the row): the complete sees it, stale_input', async () => {
      const schema = schemaForTest();
      const { queue } = openQueue(schema);
      const other = openQueue(schema).queue;
      const id = await enqueueOne(queue, 'acme', 'topic');
      expect(await queue.claim('w1')).toMatchObject({ ok: true });
      const { result } = await between(
        () => queue.complete(id, 'w1', 1, { answer: 42 }),
        async () => expect(await other.enqueue({ tenant: 'acme', topic: 'topic', version: 2, priority: 0, input: { text: 'newer' } })).toMatchObject({ ok: true }),
      );
      expect(result).toMatchObject({ ok: true, outcome: 'stale_input' });
      await assertEventLogConsistent(queue);
    });
  });

  it('runs a whole cycle as a role that is not a superuser (the flush after COMMIT needs no privilege)', async () => {
    const client = await admin();
    const role = `lh_plain_${process.pid}_${Math.floor(Math.random() * 1e6)}`;
    await client.query(`CREATE ROLE ${role} LOGIN PASSWORD 'plain' NOSUPERUSER`);
    cleanups.push(async () => {
      await client.query(`DROP ROLE IF EXISTS ${role}`);
    });
    const schema = schemaForTest();
    await client.query(`CREATE SCHEMA ${schema} AUTHORIZATION ${role}`);
    const url = new URL(PG_URL);
    url.username = role;
    url.password = 'plain';
    const { queue } = openQueue(schema, { url: url.toString() });
    const id = await enqueueOne(queue);
    expect(await queue.claim('w1')).toMatchObject({ ok: true, task: { id } });
    expect(await queue.complete(id, 'w1', 1, { answer: 42 })).toMatchObject({ ok: true, outcome: 'done' });
    await assertEventLogConsistent(queue);
  });

  it("a write's COMMIT does not wait for the disk under the lock; the call returns once the WAL through it is flushed", async () => {
    const { queue } = openQueue(schemaForTest());
    const { sent } = await tracing(() => enqueueOne(queue));
    expect(sent.find((text) => text.startsWith('BEGIN;') && text.includes('pg_advisory_xact_lock('))).toContain('SET LOCAL synchronous_commit = off;');
    // The flush's record comes after the commit's in the WAL; by the time the call returned it was on disk.
    let flushed: string | undefined;
    await tracing(
      () => enqueueOne(queue, 'acme', 'second'),
      (text, results) => {
        if (text.endsWith(COMMIT_DURABLY)) flushed = String((results as { rows: { flushed?: string }[] }[]).at(-1)?.rows[0]?.flushed);
      },
    );
    expect(flushed).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
    const client = await admin();
    const { rows } = await client.query(`SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn AS durable`, [flushed]);
    expect(rows[0].durable).toBe(true);
    // A write transaction that wrote nothing (an idle worker's claim) has nothing to flush: a plain COMMIT.
    await queue.claim('w1');
    await queue.claim('w1');
    const idle = await tracing(() => queue.claim('w1'));
    expect(idle.result).toMatchObject({ ok: false, reason: 'empty' });
    expect(idle.sent.at(-1)).toBe('COMMIT');
  });

  it('flushes before it answers a call whose answer is kept, though its transaction wrote nothing', async () => {
    // A second cancel of a cancelled task answers from the first one's commit, which another connection
    // may not have flushed yet (its flush follows the COMMIT that made it visible): the answer is kept
    // only once this call's own flush has gone through that commit.
    const { queue } = openQueue(schemaForTest());
    const id = await enqueueOne(queue);
    expect(await queue.cancel(id)).toEqual({ ok: true, state: 'cancelled' });
    const again = await tracing(() => queue.cancel(id));
    expect(again.result).toMatchObject({ ok: false, error: 'already_terminal', state: 'cancelled' });
    // It read the task and wrote nothing: COMMIT's round trip carries no write, only the flush.
    expect(again.sent.filter((text) => text.includes('EXECUTE'))).toEqual([]);
    expect(again.sent.at(-1)).toBe(COMMIT_DURABLY);
  });

  describe("a claim's heads read ahead with the lock, before its time is known", () => {
    /** A clock whose reads return `times` in turn (the last one from then on): the claim reads it before its first round trip and again once it holds the lock. */
    class SteppingClock extends ManualClock {
      times: number[] = [];
      override now(): number {
        return this.times.length > 1 ? this.times.shift()! : (this.times[0] ?? super.now());
      }
    }

    /** Two tasks of one tenant: `older` (priority 5) and `better` (priority 20), held back until t0 + `heldMs`; the claim's clock reads t0 + 1 s, then t0 + 2 s. */
    async function heldBack(heldMs: number): Promise<{ queue: WorkQueue; older: number; better: number }> {
      const schema = schemaForTest();
      const clock = new SteppingClock();
      const { queue } = openQueue(schema, { clock });
      const older = await queue.enqueue({ tenant: 'acme', topic: 'a', version: 1, priority: 5, input: {} });
      const better = await queue.enqueue({ tenant: 'acme', topic: 'b', version: 1, priority: 20, input: {} });
      if (!older.ok || !better.ok) throw new Error('expected two enqueues');
      const t0 = clock.now();
      // As a retry's backoff would hold it back.
      await (await admin()).query(`UPDATE ${schema}.tasks SET not_before = $2 WHERE id = $1`, [better.taskId, t0 + heldMs]);
      clock.times = [t0 + 1_000, t0 + 2_000];
      return { queue, older: older.taskId, better: better.taskId };
    }

    /** The heads read at the claim's own time (claimReadyHeads, alone or in a batch). */
    const readsHeadsAtItsTime = (text: string) => text === claimReadyHeads.postgres.text || text.includes('EXECUTE leasehold_claimReadyHeads_b');

    it('claims the task that became eligible between the clock read before the lock and the time the claim got, from the heads read ahead', async () => {
      const { queue, older, better } = await heldBack(1_500);
      const { result, sent } = await tracing(() => queue.claim('w1'));
      expect(result).toMatchObject({ ok: true, task: { id: better } });
      // The heads read ahead answered the claim's: none was read again at its time.
      expect(sent.filter(readsHeadsAtItsTime)).toEqual([]);
      expect(await queue.get(older)).toMatchObject({ state: 'ready' });
      await assertEventLogConsistent(queue);
    });

    it("reads ahead the row of the head it picks, passing over a better head whose tenant is at its limit: no round trip of the candidate's own", async () => {
      const schema = schemaForTest();
      const clock = new ManualClock();
      const queue = openWorkQueue({ db: PG_URL, schema, clock, config: { globalLimit: 10, perTenantLimit: 1, tenantLimits: { small: 2 } } });
      cleanups.push(() => queue.close());
      for (const [tenant, topic] of [['big', 'running'], ['big', 'older'], ['small', 'a'], ['small', 'b'], ['small', 'c']] as const) {
        clock.advance(1_000);
        await queue.enqueue({ tenant, topic, version: 1, priority: 5, input: { topic } });
      }
      expect(await queue.claim('w0')).toMatchObject({ ok: true, task: { tenant: 'big', topic: 'running' } });
      // big is at its limit of 1: its head (the oldest ready task) is passed over; small's limit is 2 (tenantLimits).
      for (const topic of ['a', 'b']) {
        const { result, sent } = await tracing(() => queue.claim('w1'));
        expect(result).toMatchObject({ ok: true, task: { tenant: 'small', topic } });
        expect(sent.filter((text) => text === claimCandidate.postgres.text || text.includes('leasehold_claimCandidate_b'))).toEqual([]);
      }
      // small is at its limit of 2 now: nothing is eligible, and nothing was read for a candidate.
      expect(await queue.claim('w2')).toMatchObject({ ok: false, reason: 'quota' });
    });

    /** The seek of one level range of a tenant (claimLevelHead), alone or in a batch. */
    const seeksALevel = (text: string) => text === claimLevelHead.postgres.text || text.includes('EXECUTE leasehold_claimLevelHead_b');

    /** Tasks of one tenant at `priorities`, in that order, one minute apart. */
    async function levels(priorities: readonly number[]): Promise<{ queue: WorkQueue; clock: ManualClock; schema: string; ids: number[] }> {
      const schema = schemaForTest();
      const { queue, clock } = openQueue(schema);
      const ids: number[] = [];
      for (const [i, priority] of priorities.entries()) {
        clock.advance(60_000);
        const enqueued = await queue.enqueue({ tenant: 'acme', topic: `t${i}`, version: 1, priority, input: {} });
        if (!enqueued.ok) throw new Error('expected an enqueue');
        ids.push(enqueued.taskId);
      }
      return { queue, clock, schema, ids };
    }

    it('answers the seek beneath a head from the task read ahead beneath it: a tenant at one priority level is claimed in 2 round trips', async () => {
      const { queue, ids } = await levels([10]);
      const { result, sent } = await tracing(() => queue.claim('w1'));
      expect(result).toMatchObject({ ok: true, task: { id: ids[0] } });
      expect(sent.filter(seeksALevel)).toEqual([]);
      expect(sent.filter((text) => !/^(BEGIN;(\s*SET LOCAL [^;]*;)?\s*)?PREPARE /.test(text))).toHaveLength(2);
      await assertEventLogConsistent(queue);
    });

    it('with two levels, seeks only beneath the second: the first seek is answered from the task read ahead', async () => {
      const { queue, ids } = await levels([10, 20]);
      const first = await tracing(() => queue.claim('w1'));
      expect(first.result).toMatchObject({ ok: true, task: { id: ids[1] } });
      expect(first.sent.filter(seeksALevel)).toHaveLength(1);
      const second = await tracing(() => queue.claim('w2'));
      expect(second.result).toMatchObject({ ok: true, task: { id: ids[0] } });
      expect(second.sent.filter(seeksALevel)).toEqual([]);
      await assertEventLogConsistent(queue);
    });

    it('seeks beneath a head at its own time when the task read ahead beneath it is held back, and does not claim that task', async () => {
      // The priority-10 task waited an hour: aged to 40 (the cap), it would outscore the fresh priority-20 one, were it eligible.
      const { queue, clock, schema, ids } = await levels([10]);
      clock.advance(60 * 60_000);
      const fresh = await queue.enqueue({ tenant: 'acme', topic: 'fresh', version: 1, priority: 20, input: {} });
      if (!fresh.ok) throw new Error('expected an enqueue');
      ids.push(fresh.taskId);
      await (await admin()).query(`UPDATE ${schema}.tasks SET not_before = $2 WHERE id = $1`, [ids[0], clock.now() + 60_000]);
      const { result, sent } = await tracing(() => queue.claim('w1'));
      expect(result).toMatchObject({ ok: true, task: { id: ids[1] } });
      expect(sent.filter(seeksALevel)).toHaveLength(1);
      expect(await queue.get(ids[0]!)).toMatchObject({ state: 'ready' });
      await assertEventLogConsistent(queue);
    });

    it('reads the heads at its own time when a head read ahead is not eligible by then, and claims the eligible task beneath it', async () => {
      const { queue, older, better } = await heldBack(5_000);
      const { result, sent } = await tracing(() => queue.claim('w1'));
      expect(result).toMatchObject({ ok: true, task: { id: older } });
      expect(sent.filter(readsHeadsAtItsTime)).toHaveLength(1);
      expect(await queue.get(better)).toMatchObject({ state: 'ready' });
      await assertEventLogConsistent(queue);
    });
  });

  it('forgets what it read ahead once the transaction writes: a read after a write sees the write', async () => {
    const schema = schemaForTest();
    const store = PgStore.open(PG_URL, { busyRetries: 0, schema }, () => 0);
    cleanups.push(() => store.close());
    const seen = await store.write('pause', () => 3, function* (tx, at) {
      yield* tx.claimHolding(); // reads the paused tenants ahead: none
      expect(yield* tx.tenantPause('acme', 'planted', at)).toBe(true);
      const afterPause = (yield* tx.tenantPauseList()).map((row) => row.tenant);
      yield* tx.claimHolding();
      yield* tx.tenantResume('acme');
      yield* tx.tenantPause('beta', 'planted', at);
      return { afterPause, afterResume: (yield* tx.tenantPauseList()).map((row) => row.tenant) };
    });
    expect(seen).toEqual({ afterPause: ['acme'], afterResume: ['beta'] });
  });

  it('fails the transaction with an InvariantError, COMMIT unsent, when a claim sent with COMMIT changes no row', async () => {
    const schema = schemaForTest();
    const store = PgStore.open(PG_URL, { busyRetries: 0, schema }, () => 0);
    cleanups.push(() => store.close());
    const missed = store.write('claim', () => 7, function* (tx, at) {
      yield* tx.signalBump('planted', 1);
      return yield* tx.taskWriteState({ kind: 'claim', id: 404, previousGeneration: 0, workerId: 'w1', generation: 1, leaseUntil: at + 1_000, eventSeq: 2, now: at });
    });
    await expect(missed).rejects.toBeInstanceOf(InvariantError);
    await expect(missed).rejects.toThrow("task 404's claim changed no row");
    // Nothing of the transaction committed, and the store goes on.
    expect(await store.read('signals', (tx) => tx.signalList())).toEqual([]);
    await store.write('signal', () => 8, (tx) => tx.signalBump('after', 1));
    expect((await store.read('signals', (tx) => tx.signalList())).map((row) => row.name)).toEqual(['after']);
  });

  it('finds a topic\'s older versions through the task key, not the tenant\'s ready backlog, even with no planner statistics', async () => {
    const schema = schemaForTest();
    const { queue } = openQueue(schema);
    for (let i = 0; i < 50; i++) await enqueueOne(queue, 'acme', `topic-${i}`);
    const client = await admin();
    // A fresh table has no statistics until ANALYZE (and this machine's server runs with autovacuum off).
    await client.query(`SELECT pg_stat_reset_single_table_counters('${schema}.tasks'::regclass)`);
    const plan = await client.query(`SET search_path TO ${schema}; EXPLAIN (FORMAT JSON) ${taskOlderUnstarted.postgres.text.replace('$1', "'acme'").replace('$2', "'topic-7'").replace('$3', '2')}`);
    const text = JSON.stringify((plan as unknown as pg.QueryResult[])[1]!.rows[0]);
    expect(text).not.toContain('tasks_ready');
    expect(text).toMatch(/tasks_tenant_topic_version_key|Index/);
  });

  it('returns BIGINT and COUNT columns as numbers, without touching pg’s global parsers', async () => {
    const schema = schemaForTest();
    const store = PgStore.open(PG_URL, { busyRetries: 0, schema }, () => 1_700_000_000_000);
    cleanups.push(() => store.close());
    const { queue } = openQueue(schema);
    const id = await enqueueOne(queue);
    const row = (await store.read('test', (tx) => tx.taskById(id))) as TaskRow;
    for (const column of ['id', 'version', 'enqueued_at', 'not_before', 'generation', 'event_seq', 'cancel_requested', 'critical'] as const) {
      expect(typeof row[column], column).toBe('number');
    }
    expect(row.enqueued_at).toBe(1_700_000_000_000);
    expect(await store.read('test', (tx) => tx.taskCountsByState())).toEqual([{ state: 'ready', n: 1 }]);
    expect(await store.read('test', (tx) => tx.eventCursor())).toBe(1);
    expect(await store.read('test', (tx) => tx.migrationList())).toContainEqual({ version: 1, name: 'tasks, events, rejections', applied_at: 1_700_000_000_000 });
    // The process-wide parser of int8 is pg's default still: a string.
    expect(pg.types.getTypeParser(20, 'text')('9007199254740993')).toBe('9007199254740993');
  });

  it('serialises claims from two stores on one schema: each task goes to exactly one of them', async () => {
    const schema = schemaForTest();
    const clock = new ManualClock();
    const left = openQueue(schema, { clock }).queue;
    const right = openQueue(schema, { clock }).queue;
    for (let round = 0; round < 5; round++) {
      const id = await enqueueOne(left, `tenant-${round}`);
      const [a, b] = await Promise.all([left.claim(`left-${round}`), right.claim(`right-${round}`)]);
      const winners = [a, b].filter((answer) => answer.ok);
      expect(winners, `round ${round}`).toHaveLength(1);
      expect(winners[0]).toMatchObject({ task: { id, generation: 1 } });
      expect([a, b].find((answer) => !answer.ok)).toEqual({ ok: false, reason: 'empty' });
    }
    expect((await left.snapshot()).countsByState.running).toBe(5);
    await assertEventLogConsistent(left);
  });

  it('retries a transaction whose backend was terminated mid-transaction, and nothing is half-written', async () => {
    const schema = schemaForTest();
    const name = `lh_terminate_${schema}`;
    const { queue, clock } = openQueue(schema, { url: urlNamed(name) });
    const id = await enqueueOne(queue);
    expect(await queue.claim('w1')).toMatchObject({ ok: true });
    // A second connection holds the task's row: complete() takes the queue's lock, then waits for the row.
    const blocker = await admin();
    await blocker.query('BEGIN');
    await blocker.query(`SELECT id FROM "${schema}".tasks WHERE id = $1 FOR UPDATE`, [id]);
    clock.advance(100);
    const completing = queue.complete(id, 'w1', 1, { done: true });
    // Polled outside the blocker's transaction: pg_stat_activity is read once per transaction.
    const observer = await admin();
    const pid = await waitingBackend(observer, name);
    await observer.query('SELECT pg_terminate_backend($1)', [pid]);
    // The retry waits for the row again, on a new connection; then the blocker lets go.
    const retried = await waitingBackend(observer, name, pid);
    expect(retried).not.toBe(pid);
    await blocker.query('ROLLBACK');
    expect(await completing).toMatchObject({ ok: true });
    const events = await queue.events(id);
    expect(events.filter((event) => event.type === 'completed')).toHaveLength(1);
    expect((await queue.creditLedger()).filter((entry) => entry.taskId === id)).toHaveLength(1);
    await assertEventLogConsistent(queue);
  });

  it('surfaces a terminated backend as a typed, retryable error when retries are spent, with nothing written', async () => {
    const schema = schemaForTest();
    const name = `lh_terminate0_${schema}`;
    const { queue, clock } = openQueue(schema, { url: urlNamed(name), busyRetries: 0 });
    const id = await enqueueOne(queue);
    expect(await queue.claim('w1')).toMatchObject({ ok: true });
    const before = { task: await queue.get(id), events: await queue.events(id), ledger: await queue.creditLedger() };
    const blocker = await admin();
    await blocker.query('BEGIN');
    await blocker.query(`SELECT id FROM "${schema}".tasks WHERE id = $1 FOR UPDATE`, [id]);
    clock.advance(100);
    const completing = queue.complete(id, 'w1', 1, { done: true }).catch((error: unknown) => error);
    const observer = await admin();
    await observer.query('SELECT pg_terminate_backend($1)', [await waitingBackend(observer, name)]);
    const error = await completing;
    await blocker.query('ROLLBACK');
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toBeInstanceOf(RetryableStoreError);
    expect(error).toMatchObject({ code: 'connection_lost', sqlState: '57P01', maybeCommitted: false, operation: 'complete' });
    expect({ task: await queue.get(id), events: await queue.events(id), ledger: await queue.creditLedger() }).toEqual(before);
    // The caller's retry of the same call succeeds.
    expect(await queue.complete(id, 'w1', 1, { done: true })).toMatchObject({ ok: true });
    await assertEventLogConsistent(queue);
  });

  it('also recovers when an idle pooled connection was terminated between two calls', async () => {
    const schema = schemaForTest();
    const name = `lh_idle_${schema}`;
    const { queue } = openQueue(schema, { url: urlNamed(name) });
    await enqueueOne(queue, 'a');
    const client = await admin();
    const { rows } = await client.query('SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE application_name = $1', [name]);
    expect(rows.length).toBeGreaterThan(0);
    await enqueueOne(queue, 'b');
    expect((await queue.snapshot()).tasks.map((task) => task.tenant)).toEqual(['a', 'b']);
  });

  /**
   * A real deadlock: a second connection locks the task's row, the queue's complete() takes the queue's
   * advisory lock and waits for the row, then the second connection asks for the advisory lock. The
   * second connection's deadlock_timeout is long, so the server's detector aborts the queue's side
   * (40P01); the queue's lock is released, the other side finishes, and the store's retry goes through.
   */
  async function deadlock(busyRetries: number): Promise<{ answer: unknown; queue: WorkQueue; id: number }> {
    const schema = schemaForTest();
    const name = `lh_deadlock_${schema}`;
    const { queue, clock } = openQueue(schema, { url: urlNamed(name), busyRetries });
    const id = await enqueueOne(queue);
    expect(await queue.claim('w1')).toMatchObject({ ok: true });
    const other = await admin();
    await other.query('BEGIN');
    await other.query(`SET LOCAL deadlock_timeout = '20s'`);
    await other.query(`SELECT id FROM "${schema}".tasks WHERE id = $1 FOR UPDATE`, [id]);
    clock.advance(100);
    const completing = queue.complete(id, 'w1', 1, { done: true }).catch((error: unknown) => error);
    await waitingBackend(await admin(), name);
    await other.query('SELECT pg_advisory_xact_lock($1, $2)', [QUEUE_LOCK_CLASS, queueLockKey(schema)]);
    await other.query('COMMIT');
    return { answer: await completing, queue, id };
  }

  it('retries a transaction the deadlock detector aborted, and succeeds', async () => {
    const { answer, queue, id } = await deadlock(3);
    expect(answer).toMatchObject({ ok: true });
    expect((await queue.get(id))?.state).toBe('done');
    await assertEventLogConsistent(queue);
  });

  it('surfaces a deadlock as a typed, retryable error when retries are spent', async () => {
    const { answer, queue, id } = await deadlock(0);
    expect(answer).toBeInstanceOf(ConnectionError);
    expect(answer).toMatchObject({ code: 'deadlock', sqlState: '40P01', maybeCommitted: false });
    expect((await queue.get(id))?.state).toBe('running');
    await assertEventLogConsistent(queue);
  });

  it('gives a typed, retryable error for a server that is not there', async () => {
    const queue = openWorkQueue({ db: 'postgres://postgres@127.0.0.1:1/test', clock: new ManualClock(), config: { busyRetries: 1 } });
    cleanups.push(() => queue.close());
    const error = await queue.enqueue({ tenant: 'a', topic: 't', version: 1, priority: 0, input: {} }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toBeInstanceOf(RetryableStoreError);
    expect(error).toMatchObject({ code: 'server_unavailable', sqlState: 'ECONNREFUSED', maybeCommitted: false });
  });

  it('opens on a pg Pool passed in, which it leaves open, and refuses a durability', async () => {
    const schema = schemaForTest();
    const pool = new pg.Pool({ connectionString: PG_URL });
    cleanups.push(() => pool.end());
    expect(() => openWorkQueue({ db: pool, clock: new ManualClock(), durability: 'every_commit' })).toThrow(ConfigError);
    expect(() => openWorkQueue({ db: 'postgresql://postgres@127.0.0.1/test', clock: new ManualClock(), durability: 'every_commit' })).toThrow(ConfigError);
    const queue = openWorkQueue({ db: pool, schema, clock: new ManualClock() });
    await enqueueOne(queue);
    expect((await queue.snapshot()).tasks).toHaveLength(1);
    await queue.close();
    expect((await pool.query(`SELECT count(*)::int AS n FROM "${schema}".tasks`)).rows[0].n).toBe(1);
  });
});

/**
 * The driver's retry rules without a server: a pool-shaped fake whose client answers the migration's
 * version read with the latest version and fails the statements a test names.
 */
function fakePool(fail: (text: string, call: number) => Error | undefined, options: { xid?: string; status?: string } = {}): { pool: pg.Pool; texts: string[] } {
  const texts: string[] = [];
  const client = {
    query(config: string | { text: string }) {
      const text = typeof config === 'string' ? config : config.text;
      texts.push(text);
      const failure = fail(text, texts.filter((seen) => seen === text).length);
      if (failure !== undefined) return Promise.reject(failure);
      if (text.includes('txid_current()')) return Promise.resolve(options.xid === undefined ? { rows: [], rowCount: 0 } : [{ rows: [], rowCount: 0 }, { rows: [{ xid: options.xid }], rowCount: 1 }]);
      if (text.includes('txid_status')) return Promise.resolve({ rows: [{ status: options.status ?? null }], rowCount: 1 });
      if (text.includes('MAX(version)')) return Promise.resolve({ rows: [{ v: 8 }], rowCount: 1 });
      if (text.includes('FROM counters')) return Promise.resolve({ rows: [{ value: 7 }], rowCount: 1 });
      return Promise.resolve({ rows: [], rowCount: 0 });
    },
    release() {},
    // A pg client is an EventEmitter: the store listens for its 'error' event.
    on() {},
  };
  const pool = { connect: () => Promise.resolve(client), query: client.query, on() {} } as unknown as pg.Pool;
  return { pool, texts };
}

function sqlError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

const liveCount = function* (tx: import('./store.ts').StoreTx) {
  return yield* tx.counterLive();
};
const counterLiveAdjust = function* (tx: import('./store.ts').StoreTx) {
  yield* tx.counterLiveAdjust(1);
};

describe('PgStore retry rules', () => {
  it('retries a serialization failure and a deadlock before COMMIT, up to busyRetries times', async () => {
    const { pool, texts } = fakePool((text, call) =>
      text.includes('FROM counters') && call <= 2 ? sqlError(call === 1 ? '40001' : '40P01', 'refused') : undefined,
    );
    const store = PgStore.open(pool, { busyRetries: 2 }, () => 0);
    expect(await store.write('liveCount', () => 0, liveCount)).toBe(7);
    expect(texts.filter((text) => text.startsWith('BEGIN;'))).toHaveLength(3);
    expect(texts.filter((text) => text === 'ROLLBACK')).toHaveLength(2);
    expect(texts.filter((text) => text === 'COMMIT')).toHaveLength(2); // the migration's and the write's (it wrote nothing: no flush)
  });

  it('surfaces the failure typed once the retries are spent', async () => {
    const { pool } = fakePool((text) => (text.includes('FROM counters') ? sqlError('40001', 'could not serialize access') : undefined));
    const store = PgStore.open(pool, { busyRetries: 1 }, () => 0);
    const error = await store.write('liveCount', () => 0, liveCount).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toMatchObject({ code: 'serialization_failure', sqlState: '40001', attempts: 2, maybeCommitted: false, operation: 'liveCount' });
  });

  it('does not retry a connection lost while COMMIT was in flight, and says it may have committed', async () => {
    let commits = 0;
    const { pool, texts } = fakePool((text) => (text === 'COMMIT' && ++commits === 2 ? sqlError('ECONNRESET', 'read ECONNRESET') : undefined));
    const store = PgStore.open(pool, { busyRetries: 3 }, () => 0);
    const error = await store.write('liveCount', () => 0, liveCount).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toMatchObject({ code: 'connection_lost', maybeCommitted: true, attempts: 1 });
    expect(texts.filter((text) => text.startsWith('BEGIN;'))).toHaveLength(1);
  });

  it('retries when a write sent with COMMIT was refused (the server aborted the transaction, COMMIT with it)', async () => {
    const { pool, texts } = fakePool((text, call) => (text.includes('EXECUTE leasehold_counterLiveAdjust_b') && call === 1 ? sqlError('40001', 'refused') : undefined));
    const store = PgStore.open(pool, { busyRetries: 2 }, () => 0);
    await store.write('counterLiveAdjust', () => 0, counterLiveAdjust);
    expect(texts.filter((text) => text.startsWith('PREPARE leasehold_counterLiveAdjust_b AS'))).toHaveLength(1); // once per connection
    expect(texts.filter((text) => text === `EXECUTE leasehold_counterLiveAdjust_b('1');\n${COMMIT_DURABLY}`)).toHaveLength(2);
    expect(texts.filter((text) => text.startsWith('BEGIN;'))).toHaveLength(2);
  });

  it('does not retry a connection lost while writes went with COMMIT, and says it may have committed', async () => {
    const { pool, texts } = fakePool((text) => (text.endsWith(COMMIT_DURABLY) && text.includes('EXECUTE') ? sqlError('ECONNRESET', 'read ECONNRESET') : undefined));
    const store = PgStore.open(pool, { busyRetries: 3 }, () => 0);
    const error = await store.write('counterLiveAdjust', () => 0, counterLiveAdjust).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'connection_lost', maybeCommitted: true, attempts: 1 });
    expect(texts.filter((text) => text.startsWith('BEGIN;'))).toHaveLength(1);
  });

  it('asks the server after a connection lost during COMMIT: committed is a success, aborted is retried, and only no answer says maybe', async () => {
    const lostAtCommit = (calls: { n: number }) => (text: string) => (text.endsWith(COMMIT_DURABLY) && text.includes('EXECUTE') && ++calls.n === 1 ? sqlError('ECONNRESET', 'read ECONNRESET') : undefined);
    const committed = fakePool(lostAtCommit({ n: 0 }), { xid: '77', status: 'committed' });
    await PgStore.open(committed.pool, { busyRetries: 3 }, () => 0).write('counterLiveAdjust', () => 0, counterLiveAdjust);
    expect(committed.texts.filter((text) => text.startsWith('BEGIN;'))).toHaveLength(1); // not sent again
    expect(committed.texts).toContain(COMMIT_OUTCOME);

    const aborted = fakePool(lostAtCommit({ n: 0 }), { xid: '77', status: 'aborted' });
    await PgStore.open(aborted.pool, { busyRetries: 3 }, () => 0).write('counterLiveAdjust', () => 0, counterLiveAdjust);
    expect(aborted.texts.filter((text) => text.startsWith('BEGIN;'))).toHaveLength(2); // tried again, and it went through

    const abortedNoRetries = fakePool(lostAtCommit({ n: 0 }), { xid: '77', status: 'aborted' });
    const refused = await PgStore.open(abortedNoRetries.pool, { busyRetries: 0 }, () => 0).write('counterLiveAdjust', () => 0, counterLiveAdjust).catch((caught: unknown) => caught);
    expect(refused).toMatchObject({ code: 'connection_lost', maybeCommitted: false, attempts: 1 });

    const inProgress = fakePool(lostAtCommit({ n: 0 }), { xid: '77', status: 'in progress' });
    const unknown = await PgStore.open(inProgress.pool, { busyRetries: 3 }, () => 0).write('counterLiveAdjust', () => 0, counterLiveAdjust).catch((caught: unknown) => caught);
    expect(unknown).toMatchObject({ code: 'connection_lost', maybeCommitted: true, attempts: 1 });
  });

  it('lets any other SQL error through as it is, without a retry', async () => {
    const refusal = sqlError('23505', 'duplicate key value violates unique constraint');
    const { pool, texts } = fakePool((text) => (text.includes('FROM counters') ? refusal : undefined));
    const store = PgStore.open(pool, { busyRetries: 3 }, () => 0);
    await expect(store.write('liveCount', () => 0, liveCount)).rejects.toBe(refusal);
    expect(texts.filter((text) => text.startsWith('BEGIN;'))).toHaveLength(1);
  });
});
