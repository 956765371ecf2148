/**
 * The floor contender: the least SQL any queue meeting SPEC Q5, Q7, Q8 and Q15 must run per cycle, with
 * none of Leasehold's other duties (no quotas, aging, holds, credit ledger, checkpoints, capacity
 * count, input validation or JSON). It is not a queue anyone should use; it answers one question
 * with a measurement instead of an argument: how fast can a claim → complete cycle be on this machine
 * once every transition appends its event in the same transaction (Q15, the transactional outbox)?
 *
 *   claim:    BEGIN IMMEDIATE; seek the head of the ready index; UPDATE it to running with a new
 *             generation and lease; INSERT its event; COMMIT.
 *   complete: BEGIN IMMEDIATE; fenced UPDATE to done (id, worker, generation, lease); INSERT its
 *             event; COMMIT.
 *
 * The events table keeps only its rowid order (no per-task index), which is cheaper than Q15's
 * per-task sequence lookups need: a generous floor.
 *
 * `floor+duties` adds, each the cheapest way we know, the writes three more SPEC requirements make
 * every cycle pay, still without Leasehold's code:
 *   - Q6: the claim must know the slots held (running + uncertain): a partial index of holding tasks,
 *     read at claim, entered by the claim and left by the completion;
 *   - Q3: capacity counts live tasks, kept exact in the transaction that ends one: a counter row;
 *   - R4: the settlement is a ledger row in the completion's transaction.
 */
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import type { Contender } from './interleave.ts';
import { openWalDatabase, readSettings, type DbSettings } from './timing.ts';

const WORKER = 'floor-worker';
const LEASE_MS = 30_000;

export class FloorCycleContender implements Contender {
  readonly name: string;
  private readonly db: Database.Database;
  private readonly insertTask: Database.Statement;
  private readonly head: Database.Statement;
  private readonly claim: Database.Statement;
  private readonly complete: Database.Statement;
  private readonly insertEvent: Database.Statement;
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  private readonly counts: Database.Statement;
  private readonly holding: Database.Statement | undefined;
  private readonly settle: Database.Statement | undefined;
  private readonly adjustLive: Database.Statement | undefined;
  private ok = 0;
  private clock = 1;

  constructor(dir: string, private readonly backlog: number, duties = false) {
    this.name = duties ? 'floor+duties' : 'floor';
    this.db = openWalDatabase(join(dir, `${this.name}.sqlite`));
    this.db.exec(`
      CREATE TABLE tasks (id INTEGER PRIMARY KEY, priority INTEGER NOT NULL, enqueued_at INTEGER NOT NULL,
        state TEXT NOT NULL, generation INTEGER NOT NULL DEFAULT 0, worker_id TEXT, lease_until INTEGER,
        input TEXT NOT NULL, result TEXT);
      CREATE INDEX tasks_ready ON tasks (priority DESC, enqueued_at, id) WHERE state = 'ready';
      CREATE TABLE events (id INTEGER PRIMARY KEY, task_id INTEGER NOT NULL, seq INTEGER NOT NULL,
        type TEXT NOT NULL, at INTEGER NOT NULL, data TEXT NOT NULL);`);
    if (duties) {
      this.db.exec(`
        CREATE INDEX tasks_holding ON tasks (lease_until) WHERE state IN ('running', 'uncertain');
        CREATE TABLE ledger (id INTEGER PRIMARY KEY, task_id INTEGER NOT NULL, credits INTEGER NOT NULL, at INTEGER NOT NULL);
        CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
        INSERT INTO counters VALUES ('live', 0);`);
      this.holding = this.db.prepare(`SELECT id, lease_until FROM tasks WHERE state IN ('running', 'uncertain')`);
      this.settle = this.db.prepare('INSERT INTO ledger (task_id, credits, at) VALUES (?, 20, ?)');
      this.adjustLive = this.db.prepare(`UPDATE counters SET value = value + ? WHERE name = 'live'`);
    }
    this.insertTask = this.db.prepare(`INSERT INTO tasks (priority, enqueued_at, state, input) VALUES (0, ?, 'ready', ?)`);
    this.head = this.db.prepare(`SELECT id, generation FROM tasks WHERE state = 'ready' ORDER BY priority DESC, enqueued_at, id LIMIT 1`);
    this.claim = this.db.prepare(`UPDATE tasks SET state = 'running', generation = ?, worker_id = ?, lease_until = ?
                                  WHERE id = ? AND state = 'ready'`);
    this.complete = this.db.prepare(`UPDATE tasks SET state = 'done', result = ?, lease_until = NULL
                                     WHERE id = ? AND state = 'running' AND worker_id = ? AND generation = ? AND lease_until > ?`);
    this.insertEvent = this.db.prepare('INSERT INTO events (task_id, seq, type, at, data) VALUES (?, ?, ?, ?, ?)');
    this.begin = this.db.prepare('BEGIN IMMEDIATE');
    this.commit = this.db.prepare('COMMIT');
    this.counts = this.db.prepare(`SELECT SUM(state = 'done') AS done, SUM(state = 'ready') AS ready FROM tasks`);
    this.prepare(backlog);
  }

  prepare(n: number): void {
    this.db.transaction(() => {
      for (let i = 0; i < n; i++) this.insertTask.run(this.clock++, '{"text":"please look at order 1234"}');
    })();
  }

  run(n: number): void {
    for (let i = 0; i < n; i++) {
      const at = this.clock++;
      this.begin.run();
      if (this.holding !== undefined && this.holding.all().length >= 2) throw new Error('floor: slots full');
      const row = this.head.get() as { id: number; generation: number } | undefined;
      if (row === undefined) throw new Error('floor: nothing ready');
      const generation = row.generation + 1;
      if (this.claim.run(generation, WORKER, at + LEASE_MS, row.id).changes !== 1) throw new Error('floor: claim lost');
      this.insertEvent.run(row.id, 2 * generation, 'claimed', at, '{}');
      this.commit.run();
      this.begin.run();
      if (this.complete.run('{"outcome":"resolved"}', row.id, WORKER, generation, at).changes !== 1) throw new Error('floor: complete refused');
      this.insertEvent.run(row.id, 2 * generation + 1, 'completed', at, '{}');
      this.settle?.run(row.id, at);
      this.adjustLive?.run(-1);
      this.commit.run();
    }
    this.ok += n;
  }

  okCount(): number {
    return this.ok;
  }

  verify(): void {
    const { done, ready } = this.counts.get() as { done: number; ready: number };
    if (done !== this.ok) throw new Error(`floor: ${done} tasks done, but ${this.ok} cycles counted`);
    if (ready !== this.backlog) throw new Error(`floor: ${ready} ready at the end, expected ${this.backlog}`);
  }

  settings(): DbSettings {
    return readSettings(this.db);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
