import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { FloorGuaranteesContender } from './floor-guarantees.ts';

// The equal-guarantee floor is a measurement only if its cycles really do what its header says each
// cycle must: these tests read its file back after a run.
describe('floor+guarantees bench contender', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const contender = (backlog: number) => {
    const dir = mkdtempSync(join(tmpdir(), 'floor-guarantees-'));
    dirs.push(dir);
    return { dir, floor: new FloorGuaranteesContender(dir, backlog) };
  };

  it('writes, per cycle, what its guarantees need: two events in per-task sequence, one settlement, the RUN count, the live count', () => {
    const { dir, floor } = contender(20);
    floor.prepare(50);
    floor.run(50);
    floor.verify();
    floor.close();
    const db = new Database(join(dir, 'floor+guarantees.sqlite'), { readonly: true });
    try {
      const done = db.prepare(`SELECT id, generation, attempts, event_seq, hold_state, queue_wait_ms, run_ms FROM tasks WHERE state = 'done'`).all() as {
        id: number;
        generation: number;
        attempts: number;
        event_seq: number;
        hold_state: string;
        queue_wait_ms: number | null;
        run_ms: number | null;
      }[];
      expect(done).toHaveLength(50);
      for (const task of done) {
        expect(task).toMatchObject({ generation: 1, attempts: 1, event_seq: 3, hold_state: 'settled' });
        expect(task.queue_wait_ms).not.toBeNull();
        expect(task.run_ms).not.toBeNull();
        const events = db.prepare('SELECT seq, type FROM events WHERE task_id = ? ORDER BY seq').all(task.id);
        expect(events).toEqual([
          { seq: 1, type: 'enqueued' },
          { seq: 2, type: 'claimed' },
          { seq: 3, type: 'completed' },
        ]);
        expect(db.prepare('SELECT COUNT(*) AS n FROM ledger WHERE task_id = ?').get(task.id)).toEqual({ n: 1 });
      }
      const counters = Object.fromEntries((db.prepare('SELECT name, value FROM counters').all() as { name: string; value: number }[]).map((row) => [row.name, row.value]));
      expect(counters).toEqual({ live: 20, 'decision:RUN:admitted': 50 });
      expect(db.prepare(`SELECT COUNT(*) AS n FROM tasks WHERE state = 'ready'`).get()).toEqual({ n: 20 });
      // queue.events(taskId) reads one task's events through this index (Q15's per-task sequence).
      expect(db.prepare(`SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = 'events_task_seq'`).get()).toEqual({ sql: 'CREATE UNIQUE INDEX events_task_seq ON events (task_id, seq)' });
    } finally {
      db.close();
    }
  });

  it('refuses to count cycles it cannot account for', () => {
    const { dir, floor } = contender(5);
    floor.prepare(10);
    floor.run(10);
    const db = new Database(join(dir, 'floor+guarantees.sqlite'));
    db.prepare(`UPDATE tasks SET state = 'ready' WHERE id = (SELECT MIN(id) FROM tasks WHERE state = 'done')`).run();
    db.close();
    expect(() => floor.verify()).toThrow(/9 tasks done, but 10 cycles counted/);
    floor.close();
  });

  it('stops instead of claiming past the slots: a task left running holds the tenant (Q6 per-tenant limit 1)', () => {
    const { dir, floor } = contender(5);
    const db = new Database(join(dir, 'floor+guarantees.sqlite'));
    db.prepare(`UPDATE tasks SET state = 'running', worker_id = 'other', generation = 1, lease_until = 1e15 WHERE id = (SELECT MIN(id) FROM tasks)`).run();
    db.close();
    expect(() => floor.run(1)).toThrow(/slots full/);
    floor.close();
  });
});
