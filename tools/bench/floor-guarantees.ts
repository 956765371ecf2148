/**
 * The equal-guarantee floor (issue 20): the least SQL a claim → complete cycle runs when it keeps every
 * guarantee Leasehold's cycle keeps, written by hand as one synchronous loop over prepared statements,
 * with no queue code around it (no state machine, no promises, no JSON canonicalisation, no validation).
 * Its workload is `leasehold-flat`'s: one tenant, priority 0, no budgets configured, the default session
 * policy (`serial`), a backlog of ready tasks.
 *
 * Where `floor+duties` (floor-cycle.ts) stops at Q5/Q7/Q8/Q15 plus Q6 slots, the Q3 live count and the
 * R4 ledger row, this one adds what else the SPEC makes every cycle of that workload read or write, each
 * the cheapest way we know:
 *
 *   claim    - BEGIN IMMEDIATE (Q5)
 *            - the held slots, with their tenants, from a partial index of holding tasks (Q6: the global
 *              and the per-tenant limit)
 *            - the paused tenants (A2: a paused tenant's work is deferred, not claimed)
 *            - the head of the ready index per (tenant, priority, enqueue, id), eligible by not_before
 *              (Q4 order, Q16 backoff)
 *            - no other task of its session running or uncertain (A6: the default `serial` policy runs one
 *              task per (tenant, topic) at a time)
 *            - UPDATE to running: worker, generation + 1, attempts + 1, lease, claim time, queue wait,
 *              the per-task event sequence (Q7, Q15)
 *            - the RUN decision counted by reason (A5 `signals().decisions`, exact at every instant, I22)
 *            - INSERT the event with its per-task sequence (Q15)
 *            - COMMIT
 *   complete - BEGIN IMMEDIATE
 *            - the task's row: state, worker, generation, lease, cancel request, hold (Q8 fence, Q13, R4)
 *            - a newer version of the topic queued? (Q2 stale_input)
 *            - the last checkpoint's usage (R4: the settlement charges what the run used)
 *            - fenced UPDATE to done: result, outcome, finish time, run time, hold settled (Q8, Q12, Q15, R4)
 *            - the live count - 1 (Q3)
 *            - the settlement's ledger row (R4)
 *            - INSERT the event (Q15)
 *            - COMMIT
 *
 * Its schema keeps what those need and what the SPEC's reads need: the events table has an index on
 * (task_id, seq), because `queue.events(taskId)` (SPEC API) reads one task's events and Q15's per-task
 * sequence is unique; the tasks table keeps the input, topic and version (Q1, Q2), the hold (R4), the
 * timings (Q15) and a UNIQUE (tenant, topic, version) (Q1: idempotent enqueue; A6 and Q2 find a topic's
 * tasks through it). It has none of Leasehold's defence in depth (no CHECK constraints on the state
 * machine, no audit columns on events).
 */
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import type { Contender } from './interleave.ts';
import { openWalDatabase, readSettings, type DbSettings } from './timing.ts';

const WORKER = 'floor-worker';
const TENANT = 'acme';
const LEASE_MS = 30_000;
const INPUT = '{"n":0,"text":"please look at order 1234"}';
const RESULT = '{"outcome":"resolved","summary":"ok"}';

export class FloorGuaranteesContender implements Contender {
  readonly name = 'floor+guarantees';
  private readonly db: Database.Database;
  private readonly s: Record<string, Database.Statement>;
  private ok = 0;
  private clock = 1;
  private seq = 0;

  constructor(dir: string, private readonly backlog: number) {
    this.db = openWalDatabase(join(dir, `${this.name}.sqlite`));
    this.db.exec(`
      CREATE TABLE tasks (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, topic TEXT NOT NULL, version INTEGER NOT NULL,
        priority INTEGER NOT NULL, input TEXT NOT NULL, state TEXT NOT NULL, generation INTEGER NOT NULL DEFAULT 0,
        attempts INTEGER NOT NULL DEFAULT 0, worker_id TEXT, lease_until INTEGER, enqueued_at INTEGER NOT NULL,
        not_before INTEGER NOT NULL, claimed_at INTEGER, finished_at INTEGER, queue_wait_ms INTEGER, run_ms INTEGER,
        cancel_requested INTEGER NOT NULL DEFAULT 0, outcome TEXT, result TEXT, event_seq INTEGER NOT NULL DEFAULT 0,
        hold_credits INTEGER NOT NULL, hold_state TEXT, UNIQUE (tenant, topic, version));
      CREATE INDEX tasks_ready ON tasks (tenant, priority DESC, enqueued_at, id, not_before) WHERE state = 'ready';
      CREATE INDEX tasks_holding ON tasks (tenant) WHERE state IN ('running', 'uncertain');
      CREATE TABLE events (id INTEGER PRIMARY KEY, task_id INTEGER NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL,
        at INTEGER NOT NULL, data TEXT NOT NULL);
      CREATE UNIQUE INDEX events_task_seq ON events (task_id, seq);
      CREATE TABLE checkpoints (task_id INTEGER NOT NULL, seq INTEGER NOT NULL, usage TEXT, PRIMARY KEY (task_id, seq)) WITHOUT ROWID;
      CREATE TABLE tenant_pauses (tenant TEXT PRIMARY KEY) WITHOUT ROWID;
      CREATE TABLE ledger (id INTEGER PRIMARY KEY, task_id INTEGER NOT NULL, tenant TEXT NOT NULL, credits INTEGER NOT NULL, at INTEGER NOT NULL);
      CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
      INSERT INTO counters VALUES ('live', 0);`);
    const p = (sql: string) => this.db.prepare(sql);
    this.s = {
      begin: p('BEGIN IMMEDIATE'),
      commit: p('COMMIT'),
      insertTask: p(`INSERT INTO tasks (tenant, topic, version, priority, input, state, enqueued_at, not_before, event_seq, hold_credits, hold_state)
                     VALUES (?, ?, 1, 0, ?, 'ready', ?, ?, 1, 20, 'held')`),
      enqueueEvent: p(`INSERT INTO events (task_id, seq, type, at, data) VALUES (?, 1, 'enqueued', ?, '{}')`),
      live: p(`UPDATE counters SET value = value + ? WHERE name = 'live'`),
      holding: p(`SELECT tenant FROM tasks WHERE state IN ('running', 'uncertain')`),
      paused: p('SELECT tenant FROM tenant_pauses'),
      head: p(`SELECT id, topic FROM tasks WHERE state = 'ready' AND tenant = ? AND not_before <= ?
               ORDER BY priority DESC, enqueued_at, id LIMIT 1`),
      topicRunning: p(`SELECT 1 FROM tasks WHERE tenant = ? AND topic = ? AND state IN ('running', 'uncertain') AND id <> ? LIMIT 1`),
      claim: p(`UPDATE tasks SET state = 'running', worker_id = ?, generation = generation + 1, attempts = attempts + 1,
                lease_until = ?, claimed_at = ?, queue_wait_ms = ? - enqueued_at, event_seq = event_seq + 1
                WHERE id = ? AND state = 'ready' RETURNING generation, event_seq`),
      decision: p(`INSERT INTO counters (name, value) VALUES ('decision:RUN:admitted', 1) ON CONFLICT (name) DO UPDATE SET value = value + 1`),
      event: p('INSERT INTO events (task_id, seq, type, at, data) VALUES (?, ?, ?, ?, ?)'),
      row: p(`SELECT tenant, topic, version, state, worker_id, generation, lease_until, cancel_requested, event_seq, hold_state, hold_credits
              FROM tasks WHERE id = ?`),
      newer: p('SELECT 1 FROM tasks WHERE tenant = ? AND topic = ? AND version > ? LIMIT 1'),
      usage: p('SELECT usage FROM checkpoints WHERE task_id = ? ORDER BY seq DESC LIMIT 1'),
      complete: p(`UPDATE tasks SET state = 'done', result = ?, outcome = 'resolved', finished_at = ?, run_ms = ? - claimed_at,
                   lease_until = NULL, hold_state = 'settled', event_seq = event_seq + 1
                   WHERE id = ? AND state = 'running' AND worker_id = ? AND generation = ? AND lease_until > ?`),
      settle: p('INSERT INTO ledger (task_id, tenant, credits, at) VALUES (?, ?, ?, ?)'),
      counts: p(`SELECT SUM(state = 'done') AS done, SUM(state = 'ready') AS ready FROM tasks`),
    };
    this.prepare(backlog);
  }

  /** Enqueues n tasks (untimed), each with its hold, its first event and the live count, as an enqueue must. */
  prepare(n: number): void {
    const s = this.s;
    this.db.transaction(() => {
      for (let i = 0; i < n; i++) {
        const at = this.clock++;
        const id = Number(s.insertTask!.run(TENANT, `topic-${this.seq++}`, INPUT, at, at).lastInsertRowid);
        s.enqueueEvent!.run(id, at);
        s.live!.run(1);
      }
    })();
  }

  run(n: number): void {
    const s = this.s;
    for (let i = 0; i < n; i++) {
      const at = this.clock++;
      s.begin!.run();
      const held = s.holding!.all() as { tenant: string }[];
      if (held.length >= 2 || held.some((h) => h.tenant === TENANT)) throw new Error('floor+guarantees: slots full');
      if ((s.paused!.all() as unknown[]).length > 0) throw new Error('floor+guarantees: tenant paused');
      const head = s.head!.get(TENANT, at) as { id: number; topic: string } | undefined;
      if (head === undefined) throw new Error('floor+guarantees: nothing ready');
      if (s.topicRunning!.get(TENANT, head.topic, head.id) !== undefined) throw new Error('floor+guarantees: topic busy');
      const claimed = s.claim!.get(WORKER, at + LEASE_MS, at, at, head.id) as { generation: number; event_seq: number } | undefined;
      if (claimed === undefined) throw new Error('floor+guarantees: claim lost');
      s.decision!.run();
      s.event!.run(head.id, claimed.event_seq, 'claimed', at, '{"from":"ready","to":"running"}');
      s.commit!.run();

      s.begin!.run();
      const row = s.row!.get(head.id) as { tenant: string; topic: string; version: number; state: string; worker_id: string; generation: number; lease_until: number; event_seq: number; hold_credits: number };
      if (row.state !== 'running' || row.worker_id !== WORKER || row.generation !== claimed.generation || row.lease_until <= at) throw new Error('floor+guarantees: stale lease');
      if (s.newer!.get(row.tenant, row.topic, row.version) !== undefined) throw new Error('floor+guarantees: stale input');
      s.usage!.get(head.id);
      if (s.complete!.run(RESULT, at, at, head.id, WORKER, claimed.generation, at).changes !== 1) throw new Error('floor+guarantees: complete refused');
      s.live!.run(-1);
      s.settle!.run(head.id, row.tenant, row.hold_credits, at);
      s.event!.run(head.id, row.event_seq + 1, 'completed', at, '{"from":"running","to":"done"}');
      s.commit!.run();
    }
    this.ok += n;
  }

  okCount(): number {
    return this.ok;
  }

  verify(): void {
    const { done, ready } = this.s.counts!.get() as { done: number; ready: number };
    if (done !== this.ok) throw new Error(`floor+guarantees: ${done} tasks done, but ${this.ok} cycles counted`);
    if (ready !== this.backlog) throw new Error(`floor+guarantees: ${ready} ready at the end, expected ${this.backlog}`);
  }

  settings(): DbSettings {
    return readSettings(this.db);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
