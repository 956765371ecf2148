/**
 * SQLite-only durability (Q18): a database file closed and reopened, its migrations, two connections on one
 * file, SQLITE_BUSY. It opens better-sqlite3 itself, so it runs once here rather than once per store in
 * the contract suite (src/queue), where it ran the same SQLite code five times.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { LATEST_SCHEMA_VERSION } from './migrations.ts';
import { BusyError, LeaseholdError } from '../queue/errors.ts';
import { ManualClock, checkAndCloseQueues, claimOk, enqueueOk, fingerprint, openTestQueue, request } from '../queue/__test-helpers__/test-kit.ts';

const directories: string[] = [];
const rawConnections: Database.Database[] = [];

afterEach(async () => {
  for (const connection of rawConnections.splice(0)) {
    if (connection.inTransaction) connection.exec('ROLLBACK');
    connection.close();
  }
  await checkAndCloseQueues();
  for (const directory of directories.splice(0)) fs.rmSync(directory, { recursive: true, force: true });
});

function databaseFile(): string {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'leasehold-queue-'));
  directories.push(directory);
  return path.join(directory, 'queue.sqlite3');
}

function rawConnection(file: string): Database.Database {
  const connection = new Database(file);
  rawConnections.push(connection);
  return connection;
}

describe('Q18 durability', () => {
  it('keeps ready, running and uncertain tasks (and their events) across close and reopen', async () => {
    const file = databaseFile();
    const clock = new ManualClock();
    const first = openTestQueue({ db: file, clock });
    const running = await enqueueOk(first.queue, { tenant: 'a', input: { text: 'running' } });
    const uncertain = await enqueueOk(first.queue, { tenant: 'b' });
    const ready = await enqueueOk(first.queue, { tenant: 'c', deadline: clock.t + 3_600_000, store: 's1', context: { brand: 'x' } });
    await claimOk(first.queue, 'w1');
    await claimOk(first.queue, 'w2');
    clock.advance(20_000);
    await first.queue.heartbeat(running, 'w1', 1);
    clock.advance(15_000);
    expect(await first.queue.expireLeases()).toBe(1);
    await first.queue.enqueue(request({ tenant: 'c', topic: 'expired-at-enqueue', deadline: 1 }));
    const tasks = (await first.queue.snapshot()).tasks;
    const events = await first.queue.allEvents();
    const rejections = await first.queue.rejections();
    expect(tasks.map((task) => task.state)).toEqual(['running', 'uncertain', 'ready']);
    await first.queue.close();

    const second = openTestQueue({ db: file, clock });
    expect((await second.queue.snapshot()).tasks).toEqual(tasks);
    expect(await second.queue.allEvents()).toEqual(events);
    expect(await second.queue.rejections()).toEqual(rejections);
    // The work goes on where it stopped: the lease holder still holds, the fence still fences.
    expect(await second.queue.heartbeat(running, 'w1', 1)).toMatchObject({ ok: true });
    expect(await second.queue.complete(uncertain, 'w2', 1, 'late')).toMatchObject({ ok: false, error: 'stale_lease' });
    expect(await second.queue.confirmStopped(uncertain, 1, 'supervisor')).toEqual({ ok: true, next: 'ready' });
    expect(await claimOk(second.queue, 'w3')).toMatchObject({ id: uncertain, generation: 2, attempt: 2 });
    expect(await second.queue.complete(running, 'w1', 1, { status: 'needs_human' })).toEqual({ ok: true, outcome: 'done' });
    expect((await claimOk(second.queue, 'w4')).id).toBe(ready);
  });

  it('migrates idempotently: repeated opens apply each migration once and keep the data', async () => {
    const file = databaseFile();
    const clock = new ManualClock();
    const first = openTestQueue({ db: file, clock });
    const id = await enqueueOk(first.queue);
    await first.queue.close();
    for (let open = 0; open < 3; open++) {
      clock.advance(1_000);
      const again = openTestQueue({ db: file, clock });
      expect((await again.queue.get(id))?.state).toBe('ready');
      await again.queue.close();
    }
    // Two queues open on one file at once also agree.
    const a = openTestQueue({ db: file, clock });
    const b = openTestQueue({ db: file, clock });
    expect(await b.queue.get(id)).toEqual(await a.queue.get(id));
    const raw = rawConnection(file);
    const versions = raw.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all();
    expect(versions).toEqual(Array.from({ length: LATEST_SCHEMA_VERSION }, (_, i) => i + 1));
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
  });

  it('migrates a handed-in handle once and leaves the handle open for its owner', async () => {
    const db = new Database(':memory:');
    const clock = new ManualClock();
    const first = openTestQueue({ db, clock });
    const id = await enqueueOk(first.queue);
    await first.queue.close();
    const second = openTestQueue({ db, clock });
    expect((await second.queue.get(id))?.state).toBe('ready');
    expect(db.open).toBe(true);
    expect(db.prepare('SELECT COUNT(*) FROM schema_migrations').pluck().get()).toBe(LATEST_SCHEMA_VERSION);
    await second.queue.close();
    db.close();
  });

  it('upgrades a version-3 database: the covering holding index replaces the old one, running tasks still hold their slots', async () => {
    const file = databaseFile();
    const clock = new ManualClock();
    const old = openTestQueue({ db: file, clock, config: { globalLimit: 2, perTenantLimit: 1 } });
    const running = await enqueueOk(old.queue, { tenant: 'a' });
    await enqueueOk(old.queue, { tenant: 'a' });
    expect((await claimOk(old.queue, 'w1')).id).toBe(running);
    await old.queue.close();
    // Turn the file back into what version 3 left: its index definition, no row of version 4 or later.
    const raw = rawConnection(file);
    raw.exec(`DROP INDEX tasks_holding;
      CREATE INDEX tasks_holding ON tasks (tenant, lease_until) WHERE state IN ('running', 'uncertain');
      DROP TABLE budget_levels; DROP TABLE reservations; DROP TABLE tenant_pauses; DROP TABLE admission_decisions; DROP TABLE signal_counters; DROP TABLE tenant_service;
      DELETE FROM schema_migrations WHERE version >= 4;`);

    const upgraded = openTestQueue({ db: file, clock, config: { globalLimit: 2, perTenantLimit: 1 } });
    const index = raw.prepare(`SELECT sql FROM sqlite_master WHERE name = 'tasks_holding'`).pluck().get() as string;
    expect(index).toContain('(tenant, lease_until, state, generation, worker_id, hold_state)');
    expect(raw.prepare('SELECT MAX(version) FROM schema_migrations').pluck().get()).toBe(LATEST_SCHEMA_VERSION);
    // Migration 5 rebuilt the table with the state machine's CHECK, and kept every row.
    const table = raw.prepare(`SELECT sql FROM sqlite_master WHERE name = 'tasks'`).pluck().get() as string;
    expect(table).toContain('CONSTRAINT task_state_machine CHECK');
    // Tenant a's one slot is still taken by the running task: the index was rebuilt from the rows.
    expect(await upgraded.queue.claim('w2')).toMatchObject({ ok: false, reason: 'quota' });
    expect((await upgraded.queue.tasksInState('running')).map((task) => task.id)).toEqual([running]);
  });

  it('shares one truth between two connections: a task claimed through one is not claimable through the other', async () => {
    const file = databaseFile();
    const clock = new ManualClock();
    const one = openTestQueue({ db: file, clock });
    const two = openTestQueue({ db: file, clock });
    const id = await enqueueOk(one.queue, { tenant: 'a' });
    expect((await claimOk(two.queue, 'w2')).id).toBe(id);
    expect(await one.queue.claim('w1')).toEqual({ ok: false, reason: 'empty' });
    expect(await one.queue.complete(id, 'w1', 1, 'thief')).toMatchObject({ ok: false, error: 'stale_lease' });
    expect(await one.queue.complete(id, 'w2', 1, 'owner')).toEqual({ ok: true, outcome: 'done' });
  });
});

describe('Q18 SQLITE_BUSY surfaces as a typed BusyError and writes nothing', () => {
  async function lockedQueue() {
    const file = databaseFile();
    const harness = openTestQueue({ db: file, config: { busyTimeoutMs: 10, busyRetries: 1 } });
    const held = await enqueueOk(harness.queue, { tenant: 'a' });
    await claimOk(harness.queue, 'w1');
    await enqueueOk(harness.queue, { tenant: 'a' });
    const locker = rawConnection(file);
    locker.exec('BEGIN IMMEDIATE');
    return { ...harness, locker, held };
  }

  const calls: [string, (harness: Awaited<ReturnType<typeof lockedQueue>>) => Promise<unknown>][] = [
    ['enqueue', ({ queue }) => queue.enqueue(request({ tenant: 'b' }))],
    ['claim', ({ queue }) => queue.claim('w2')],
    ['heartbeat', ({ queue, held }) => queue.heartbeat(held, 'w1', 1)],
    ['complete', ({ queue, held }) => queue.complete(held, 'w1', 1, { status: 'resolved' })],
    ['fail', ({ queue, held }) => queue.fail(held, 'w1', 1, { errorClass: 'rate_limited', message: '429' })],
    ['cancel', ({ queue, held }) => queue.cancel(held)],
    ['expireLeases', ({ queue }) => queue.expireLeases()],
  ];

  it.each(calls)('%s throws BusyError (code db_busy) while another connection holds the write lock', async (_name, call) => {
    const harness = await lockedQueue();
    const before = await fingerprint(harness.queue);
    let thrown: unknown;
    try {
      await call(harness);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(BusyError);
    expect(thrown).toBeInstanceOf(LeaseholdError);
    expect((thrown as BusyError).code).toBe('db_busy');
    expect((thrown as BusyError).attempts).toBe(2);
    harness.locker.exec('ROLLBACK');
    expect(await fingerprint(harness.queue)).toEqual(before);
    // Once the lock is gone the same call goes through.
    await call(harness);
  });

  it('takes the write lock up front even for a claim that finds nothing (BEGIN IMMEDIATE)', async () => {
    const file = databaseFile();
    const { queue } = openTestQueue({ db: file, config: { busyTimeoutMs: 10, busyRetries: 0 } });
    const locker = rawConnection(file);
    locker.exec('BEGIN IMMEDIATE');
    await expect(queue.claim('w1')).rejects.toThrow(BusyError);
    locker.exec('ROLLBACK');
    expect(await queue.claim('w1')).toEqual({ ok: false, reason: 'empty' });
  });
});

describe('Q18 several processes opening one new file at once', () => {
  /**
   * Another process (here a worker thread, which has a connection and a clock of its own) writes to the
   * new file, still in its first journal mode, and holds its write lock for `holdMs`. The store's switch
   * to WAL meets it: SQLite answers SQLITE_BUSY at once there (its busy handler would deadlock), where
   * the open must wait for the lock as any other statement of the store waits.
   */
  async function heldByAnotherWriter(file: string, holdMs: number): Promise<{ released: Promise<void> }> {
    const { Worker } = await import('node:worker_threads');
    const writer = new Worker(
      `const Database = require(${JSON.stringify(createRequire(import.meta.url).resolve('better-sqlite3'))});
       const { parentPort, workerData } = require('node:worker_threads');
       const db = new Database(workerData.file);
       db.exec('BEGIN IMMEDIATE; CREATE TABLE written_by_another (x); INSERT INTO written_by_another VALUES (1)');
       parentPort.postMessage('locked');
       setTimeout(() => { db.exec('COMMIT'); db.close(); parentPort.postMessage('released'); }, workerData.holdMs);`,
      { eval: true, workerData: { file, holdMs } },
    );
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    await new Promise<void>((resolve, reject) => {
      writer.on('error', reject);
      writer.on('message', (message) => (message === 'locked' ? resolve() : release()));
    });
    return { released };
  }

  it('waits for the other writer instead of failing the open with BusyError, and opens in WAL mode', async () => {
    const file = databaseFile();
    const { released } = await heldByAnotherWriter(file, 300);
    const { queue } = openTestQueue({ db: file, config: { busyTimeoutMs: 5_000 } });
    await enqueueOk(queue, { tenant: 'a' });
    await released;
    const reader = rawConnection(file);
    expect(reader.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(reader.prepare('SELECT x FROM written_by_another').all()).toEqual([{ x: 1 }]);
  });

  it('still gives up with a typed BusyError when the other writer outlasts every wait', async () => {
    const file = databaseFile();
    const { released } = await heldByAnotherWriter(file, 1_500);
    expect(() => openTestQueue({ db: file, config: { busyTimeoutMs: 50, busyRetries: 1 } })).toThrow(BusyError);
    await released;
  });
});
