/**
 * The PostgreSQL store on PGlite (pg-store.ts's PGlite connector): the production transaction driver
 * over one in-process database. What only this connector shows: numbers come back as numbers, the
 * event cursor the store keeps after each commit equals MAX(id) (a savepoint rolled back to forgets its
 * event), transactions are lent the one connection in call order, and a store reopened on the same
 * database (a restart) reads the cursor back.
 */
import { PGlite } from '@electric-sql/pglite';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { ManualClock } from '../queue/__test-helpers__/test-kit.ts';
import { openWorkQueue } from '../work-queue.ts';
import { PgStore, withPgliteConnection } from './pg-store.ts';
import type { Step, StoreTx } from './store.ts';

const db = new PGlite();
afterAll(() => db.close());

function* maxEventId(tx: StoreTx): Step<number> {
  return yield* tx.eventCursor();
}

describe('the PostgreSQL store on PGlite', () => {
  it('opens through openWorkQueue, keeps the event cursor exact across commits, a refused insert and a reopen', async () => {
    await db.exec('CREATE SCHEMA IF NOT EXISTS cursor_test');
    const clock = new ManualClock();
    const store = PgStore.open(db, { busyRetries: 2, schema: 'cursor_test' }, () => clock.now());
    expect(store.kind).toBe('pglite');
    const queue = openWorkQueue({ db: store, clock, config: { globalLimit: 1, perTenantLimit: 1, capacity: 1 } });
    const enqueued = await queue.enqueue({ tenant: 'acme', topic: 't1', version: 1, priority: 5, input: {} });
    expect(enqueued.ok).toBe(true);
    const cursors: number[] = [];
    const seen = (cursor: number) => cursors.push(cursor);
    const max = await store.readAtCommit('max', maxEventId, seen);
    expect(typeof max).toBe('number');
    expect(max).toBeGreaterThan(0);
    expect(store.committedEventCursor()).toBe(max);
    expect(cursors).toEqual([max]);
    // A second enqueue meets the full queue: its insert is rolled back to a savepoint, and the cursor keeps only what committed.
    await queue.enqueue({ tenant: 'acme', topic: 't2', version: 1, priority: 5, input: {} });
    expect(store.committedEventCursor()).toBe(await store.read('max', maxEventId));
    const claimed = await queue.claim('w1');
    expect(claimed.ok).toBe(true);
    const after = await store.read('max', maxEventId);
    expect(after).toBeGreaterThan(max);
    expect(store.committedEventCursor()).toBe(after);
    await store.close();
    // A restart: a new store on the same database reads the cursor back on open.
    const reopened = PgStore.open(db, { busyRetries: 2, schema: 'cursor_test' }, () => clock.now());
    expect(await reopened.read('max', maxEventId)).toBe(after);
    expect(reopened.committedEventCursor()).toBe(after);
    await reopened.close();
    await expect(store.read('max', maxEventId)).rejects.toMatchObject({ code: 'connection_lost' });
  });

  it('lends the one connection to transactions in call order, never two at once', async () => {
    await db.exec('CREATE SCHEMA IF NOT EXISTS order_test');
    const clock = new ManualClock();
    const store = PgStore.open(db, { busyRetries: 0, schema: 'order_test' }, () => clock.now());
    const order: string[] = [];
    let open = 0;
    const body = (name: string) =>
      function* (tx: StoreTx): Step<void> {
        open++;
        expect(open).toBe(1);
        order.push(`${name}:begin`);
        yield* tx.eventCursor();
        yield* tx.counterLive();
        order.push(`${name}:end`);
        open--;
      };
    await Promise.all([
      store.write('a', () => clock.now(), body('a')),
      store.read('b', body('b')),
      store.write('c', () => clock.now(), body('c')),
      store.read('d', body('d')),
    ]);
    expect(order).toEqual(['a:begin', 'a:end', 'b:begin', 'b:end', 'c:begin', 'c:end', 'd:begin', 'd:end']);
    await store.close();
  });

  it('closes only once its transactions in flight have ended, and lends the database to other work between transactions', async () => {
    await db.exec('CREATE SCHEMA IF NOT EXISTS close_test');
    const clock = new ManualClock();
    const store = PgStore.open(db, { busyRetries: 0, schema: 'close_test' }, () => clock.now());
    const order: string[] = [];
    const reading = store.read('slow', function* (tx: StoreTx): Step<void> {
      yield* tx.eventCursor();
      yield* tx.counterLive();
      order.push('read');
    });
    const between = withPgliteConnection(db, async () => {
      order.push('exclusive');
      // No transaction of the store is open while this runs: a schema change is allowed.
      await db.exec('CREATE TABLE IF NOT EXISTS close_test.scratch (x int)');
    });
    await store.close();
    order.push('closed');
    await Promise.all([reading, between]);
    // The read had not asked for the connection yet when the exclusive work did (it waits for the migration first): each ran whole, and close waited for the read.
    expect(order).toEqual(['exclusive', 'read', 'closed']);
  });

  it("runs the queue's named statements prepared: one PREPARE per statement on the database, then EXECUTEs; two schemas on one database each get their own tables", async () => {
    // A database of its own: the statements prepared are kept per database object, and the tests above prepared theirs on `db`.
    const own = new PGlite();
    onTestFinished(() => own.close());
    const texts: { via: 'exec' | 'query'; text: string }[] = [];
    const spy = {
      waitReady: own.waitReady,
      exec: (text: string, options?: Parameters<PGlite['exec']>[1]) => {
        texts.push({ via: 'exec', text });
        return own.exec(text, options);
      },
      query: (text: string, params?: unknown[], options?: Parameters<PGlite['query']>[2]) => {
        texts.push({ via: 'query', text });
        return own.query(text, params, options);
      },
    };
    const clock = new ManualClock();
    const counts: number[] = [];
    for (const schema of ['prepared_a', 'prepared_b']) {
      await own.exec(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      const queue = openWorkQueue({ db: PgStore.open(spy, { busyRetries: 0, schema }, () => clock.now()), clock, config: { globalLimit: 4, perTenantLimit: 4, capacity: 8 } });
      for (let i = 0; i < (schema === 'prepared_a' ? 3 : 1); i++) {
        const enqueued = await queue.enqueue({ tenant: 'acme', topic: `t${i}`, version: 1, priority: 5, input: { i } });
        const claimed = await queue.claim('w1');
        if (!enqueued.ok || !claimed.ok) throw new Error('expected an enqueue and a claim');
        expect(await queue.complete(claimed.task.id, 'w1', claimed.task.generation, { i })).toMatchObject({ ok: true });
      }
      counts.push((await queue.listForTenant('acme')).length);
      await queue.close();
    }
    // Each schema's queue saw its own tasks only: a statement prepared under one search_path is re-parsed under the other.
    expect(counts).toEqual([3, 1]);
    const queueTexts = texts.filter(({ text }) => !/^\s*(CREATE|ALTER|DROP|INSERT INTO schema_migrations|SELECT pg_advisory|SELECT 1 FROM pg_namespace|SET )/.test(text));
    // No statement of the queue went through the extended protocol, where PGlite would parse and plan it on every call.
    expect(queueTexts.filter(({ via, text }) => via === 'query' && /\$1/.test(text))).toEqual([]);
    const prepares = queueTexts.flatMap(({ text }) => [...text.matchAll(/PREPARE (leasehold_\w+)/g)].map((match) => match[1]!));
    expect(prepares.length).toBeGreaterThan(5);
    expect(new Set(prepares).size).toBe(prepares.length);
    expect(queueTexts.some(({ text }) => /EXECUTE leasehold_\w+/.test(text))).toBe(true);
  });
});
