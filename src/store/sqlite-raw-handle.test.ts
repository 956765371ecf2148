/**
 * SQLite-only cases of the contract suite (src/queue): each opens a better-sqlite3 handle itself and
 * reaches under the queue through it (its transaction state, a trigger, a raw UPDATE, sqlite_master), so
 * in src/queue they ran the same SQLite code once per store of the suite. Here they run once. Moved
 * unchanged from claim.test.ts (Q5), config.test.ts, enqueue.test.ts (Q1), lifecycle.test.ts (Q15) and
 * states.test.ts (migration 5), under their original describe names (issue 36 item 4).
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../queue/errors.ts';
import { openWorkQueue } from '../work-queue.ts';
import { ManualClock, assertEventLogConsistent, checkAndCloseQueues, claimOk, enqueueOk, fingerprint, openTestQueue } from '../queue/__test-helpers__/test-kit.ts';

afterEach(checkAndCloseQueues);

describe('Q5 atomic claim', () => {
  it('commits before returning: no transaction is left open for the worker', async () => {
    const db = new Database(':memory:');
    const { queue } = openTestQueue({ db });
    await enqueueOk(queue);
    await claimOk(queue, 'w1');
    expect(db.inTransaction).toBe(false);
    expect(await queue.claim('w2')).toMatchObject({ ok: false });
    expect(db.inTransaction).toBe(false);
    await queue.close();
    db.close();
  });
});

describe('config validation names the bad field', () => {
  it('touches nothing in a handed-in database when the config is bad', () => {
    const db = new Database(':memory:');
    try {
      expect(() => openWorkQueue({ db, clock: new ManualClock(), config: { capacity: 0 } })).toThrow(ConfigError);
      const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all();
      expect(tables).toEqual([]);
    } finally {
      db.close();
    }
  });
});

describe('Q1 idempotent enqueue', () => {
  it('is enforced by a unique constraint in the database, not by a check before the insert', async () => {
    const db = new Database(':memory:');
    const { queue } = openTestQueue({ db });
    await enqueueOk(queue, { tenant: 'acme', topic: 'order-1', version: 1 });
    const insert = db.prepare(
      `INSERT INTO tasks (tenant, topic, version, input_hash, priority, input, tier, state, enqueued_at, not_before)
       VALUES ('acme', 'order-1', 1, 'x', 0, '{}', 'standard', 'ready', 0, 0)`,
    );
    expect(() => insert.run()).toThrow(/UNIQUE/);
    await queue.close();
    db.close();
  });
});

describe('Q15 event log', () => {
  it('writes the event in the same transaction as the transition: if the event cannot be written, the transition is undone', async () => {
    const db = new Database(':memory:');
    const { queue } = openTestQueue({ db });
    const id = await enqueueOk(queue);
    db.exec(`CREATE TRIGGER refuse_claimed BEFORE INSERT ON events WHEN NEW.type = 'claimed' BEGIN SELECT RAISE(ABORT, 'outbox down'); END`);
    const before = await fingerprint(queue);
    await expect(queue.claim('w1')).rejects.toThrow(/outbox down/);
    expect(await fingerprint(queue)).toEqual(before);
    expect(await queue.get(id)).toMatchObject({ state: 'ready', generation: 0, attempts: 0 });
    db.exec('DROP TRIGGER refuse_claimed');
    await claimOk(queue, 'w1');
    db.exec(`CREATE TRIGGER refuse_completed BEFORE INSERT ON events WHEN NEW.type = 'completed' BEGIN SELECT RAISE(ABORT, 'outbox down'); END`);
    await expect(queue.complete(id, 'w1', 1, 'result')).rejects.toThrow(/outbox down/);
    expect(await queue.get(id)).toMatchObject({ state: 'running' });
    expect((await queue.get(id))?.result).toBeUndefined();
    db.exec('DROP TRIGGER refuse_completed');
    expect(db.inTransaction).toBe(false);
    await queue.close();
    db.close();
  });

  it('catches a broken log: the consistency check fails on a gap, an illegal edge and a wrong final state', async () => {
    const db = new Database(':memory:');
    const { queue } = openTestQueue({ db });
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    await assertEventLogConsistent(queue);
    db.prepare('UPDATE events SET seq = 5 WHERE task_id = ? AND seq = 2').run(id);
    await expect(assertEventLogConsistent(queue)).rejects.toThrow();
    db.prepare('UPDATE events SET seq = 2 WHERE task_id = ? AND seq = 5').run(id);
    db.prepare(`UPDATE events SET data = json_set(data, '$.from', 'done') WHERE task_id = ? AND seq = 2`).run(id);
    await expect(assertEventLogConsistent(queue)).rejects.toThrow();
    db.prepare(`UPDATE events SET data = json_set(data, '$.from', 'ready') WHERE task_id = ? AND seq = 2`).run(id);
    // A state the log never reached (the schema refuses a row no edge could leave, such as done without a result).
    db.prepare(`UPDATE tasks SET state = 'uncertain' WHERE id = ?`).run(id);
    await expect(assertEventLogConsistent(queue)).rejects.toThrow();
    await queue.close();
    db.close();
  });
});

describe('the schema refuses rows the state machine forbids (migration 5)', () => {
  /** A queue on a handle the test keeps, with one task claimed by w1 and one waiting. */
  async function queueWithRows() {
    const db = new Database(':memory:');
    const { queue } = openTestQueue({ db });
    const running = await enqueueOk(queue, { tenant: 'a' });
    const ready = await enqueueOk(queue, { tenant: 'b' });
    await claimOk(queue, 'w1');
    return { db, queue, running, ready };
  }

  const forbidden: [string, string][] = [
    ['a running task without a worker', `UPDATE tasks SET worker_id = NULL WHERE state = 'running'`],
    ['a running task without a lease', `UPDATE tasks SET lease_until = NULL WHERE state = 'running'`],
    ['an uncertain task without a generation', `UPDATE tasks SET state = 'uncertain', generation = 0 WHERE state = 'running'`],
    ['a ready task that still holds a lease', `UPDATE tasks SET state = 'ready' WHERE state = 'running'`],
    ['a running task never claimed', `UPDATE tasks SET state = 'running', worker_id = 'w9', lease_until = 1 WHERE state = 'ready'`],
    ['a done task without its result', `UPDATE tasks SET state = 'done', lease_until = NULL, finished_at = 1, outcome = 'done' WHERE state = 'running'`],
    ['an ended task that still holds its credits', `UPDATE tasks SET state = 'failed', lease_until = NULL, finished_at = 1 WHERE state = 'running'`],
    ['an ended task with no end time', `UPDATE tasks SET state = 'cancelled', hold_state = 'released' WHERE state = 'ready'`],
    ['an ended task that still holds a lease', `UPDATE tasks SET state = 'done', finished_at = 1, result = 'null', outcome = 'done', hold_state = 'released' WHERE state = 'running'`],
    ['a state the machine does not have', `UPDATE tasks SET state = 'paused' WHERE state = 'ready'`],
  ];

  it.each(forbidden)('refuses %s', async (_name, sql) => {
    const { db, queue } = await queueWithRows();
    const before = db.prepare('SELECT * FROM tasks ORDER BY id').all();
    expect(() => db.exec(sql)).toThrow(/CHECK constraint failed: task_(state_machine|lease)/);
    expect(db.prepare('SELECT * FROM tasks ORDER BY id').all()).toEqual(before);
    await queue.close();
    db.close();
  });

  it('accepts the rows each edge writes (a whole life, through the queue)', async () => {
    const { db, queue, running, ready } = await queueWithRows();
    expect(await queue.complete(running, 'w1', 1, { status: 'resolved' })).toMatchObject({ ok: true });
    expect(await queue.cancel(ready)).toMatchObject({ ok: true, state: 'cancelled' });
    const rows = db.prepare('SELECT state, hold_state, finished_at FROM tasks ORDER BY id').all() as { state: string; hold_state: string; finished_at: number }[];
    expect(rows.map((row) => [row.state, row.hold_state])).toEqual([
      ['done', 'released'],
      ['cancelled', 'released'],
    ]);
    await queue.close();
    db.close();
  });
});
