import type { Database, Statement } from 'better-sqlite3';

/**
 * Every SQL statement of the work queue, prepared once when the queue opens. Time is always a bound
 * parameter (`:now`), never SQLite's clock, so the simulator's virtual time reaches every decision.
 * Integer maths uses CAST because better-sqlite3 binds JavaScript numbers as REAL.
 */

/** A row of `tasks` as SQLite returns it. */
export interface TaskRow {
  id: number;
  tenant: string;
  topic: string;
  version: number;
  input_hash: string;
  priority: number;
  input: string;
  store: string | null;
  tier: string;
  deadline: number | null;
  context: string | null;
  state: string;
  generation: number;
  attempts: number;
  deliveries: number;
  worker_id: string | null;
  lease_until: number | null;
  enqueued_at: number;
  not_before: number;
  first_claimed_at: number | null;
  claimed_at: number | null;
  finished_at: number | null;
  queue_wait_ms: number | null;
  run_ms: number | null;
  cancel_requested: number;
  outcome: string | null;
  result: string | null;
  error_class: string | null;
  error_message: string | null;
  event_seq: number;
}

/** A task holding a slot, as the claim reads it. */
export type HoldingRow = Pick<TaskRow, 'id' | 'tenant' | 'state' | 'generation' | 'worker_id' | 'lease_until'>;

/** A ready task with its aged score at claim time. */
export type CandidateRow = Pick<
  TaskRow,
  | 'id'
  | 'tenant'
  | 'topic'
  | 'version'
  | 'state'
  | 'generation'
  | 'attempts'
  | 'priority'
  | 'input'
  | 'tier'
  | 'enqueued_at'
  | 'deadline'
  | 'first_claimed_at'
  | 'cancel_requested'
  | 'event_seq'
> & { score: number };

/** A level head as the claim's walk reads it from the index alone. */
export type LevelHeadRow = Pick<TaskRow, 'id' | 'priority' | 'enqueued_at'> & { score: number };

/** A running task as complete() reads it. */
export type CompletingRow = Pick<
  TaskRow,
  'id' | 'tenant' | 'topic' | 'version' | 'state' | 'worker_id' | 'generation' | 'lease_until' | 'deadline' | 'cancel_requested' | 'event_seq'
> & { hold_state: string | null };

const OCCUPYING = `state IN ('running', 'uncertain')`;

/**
 * Hot statements name their columns: better-sqlite3 builds one JavaScript object per row, and with all
 * forty columns of a task that costs more than the SQL itself.
 */
const CANDIDATE_COLUMNS =
  'id, tenant, topic, version, state, generation, attempts, priority, input, tier, enqueued_at, deadline, first_claimed_at, cancel_requested, event_seq';
/** What complete needs to check the fence, the deadline and the hold in JavaScript before its UPDATE. */
const COMPLETING_COLUMNS = 'id, tenant, topic, version, state, worker_id, generation, lease_until, deadline, cancel_requested, event_seq, hold_state';

/**
 * Q4/Q5: the head of the highest eligible priority level of one tenant, within [minPriority,
 * maxPriority]: the earliest-enqueued ready task of that level whose backoff has passed. One index
 * seek on tasks_ready, whose order (tenant, priority DESC, enqueued_at, id) is exactly this ORDER BY.
 * It reads only columns of that index (a covering seek, no table row); the winner's row is read once,
 * by id, after the walk.
 */
const LEVEL_HEAD_SQL = `
  SELECT id, priority, enqueued_at FROM tasks
  WHERE state = 'ready' AND tenant = :tenant AND priority <= :maxPriority AND priority >= :minPriority AND not_before <= :now
  ORDER BY priority DESC, enqueued_at, id
  LIMIT 1`;

/** Q8: the fence shared by every write from a lease holder. */
const FENCE = `id = :id AND state = 'running' AND worker_id = :workerId AND generation = :generation AND lease_until > :now`;

export function prepareStatements(db: Database) {
  const p = (sql: string): Statement => db.prepare(sql);
  return {
    // ---- reads
    taskById: p('SELECT * FROM tasks WHERE id = ?'),
    taskByKey: p('SELECT * FROM tasks WHERE tenant = ? AND topic = ? AND version = ?'),
    tasksForTenant: p('SELECT * FROM tasks WHERE tenant = ? ORDER BY id'),
    allTasks: p('SELECT * FROM tasks ORDER BY id'),
    tasksInState: p('SELECT * FROM tasks WHERE state = ? ORDER BY id'),
    // The same for the states a partial index covers: a walk of that index, not a scan of every task
    // ever run. SQLite uses a partial index only when the query repeats the index's own WHERE term, and
    // (without statistics) prefers a rowid scan whenever there is an ORDER BY id, so these sort in
    // JavaScript: see tasksInState below. Ids first, then the rows: a whole task row costs far more to
    // read than the index walk, and most walks find none.
    idsOccupyingInState: p(`SELECT id FROM tasks WHERE ${OCCUPYING} AND state = ?`).pluck(),
    readyTasks: p(`SELECT * FROM tasks WHERE state = 'ready'`),
    countsByState: p('SELECT state, COUNT(*) AS n FROM tasks GROUP BY state'),
    liveCount: p(`SELECT value FROM counters WHERE name = 'live'`).pluck(),
    adjustLive: p(`UPDATE counters SET value = value + ? WHERE name = 'live'`),
    occupiedByTenant: p(`SELECT tenant, COUNT(*) AS n FROM tasks WHERE ${OCCUPYING} GROUP BY tenant`),
    holding: p(`SELECT id, tenant, state, generation, worker_id, lease_until FROM tasks WHERE ${OCCUPYING}`),
    newerVersionExists: p('SELECT 1 FROM tasks WHERE tenant = ? AND topic = ? AND version > ? LIMIT 1').pluck(),
    anyReady: p(`SELECT 1 FROM tasks WHERE state = 'ready' LIMIT 1`).pluck(),
    firstReadyTenant: p(`SELECT tenant FROM tasks WHERE state = 'ready' ORDER BY tenant LIMIT 1`).pluck(),
    nextReadyTenant: p(`SELECT tenant FROM tasks WHERE state = 'ready' AND tenant > ? ORDER BY tenant LIMIT 1`).pluck(),
    levelHead: p(LEVEL_HEAD_SQL),
    candidateById: p(`SELECT ${CANDIDATE_COLUMNS} FROM tasks WHERE id = ?`),
    overdueLeases: p(`SELECT id, tenant, state, generation, worker_id, lease_until FROM tasks
                      WHERE ${OCCUPYING} AND state = 'running' AND lease_until <= ? ORDER BY lease_until, id`),
    eventsForTask: p('SELECT id, task_id, seq, type, at, data, worker_id, generation FROM events WHERE task_id = ? ORDER BY seq'),
    allEvents: p('SELECT id, task_id, seq, type, at, data, worker_id, generation FROM events ORDER BY id'),
    rejections: p('SELECT tenant, topic, version, reason, at FROM rejections ORDER BY id'),
    tasksEnqueuedBetween: p(`SELECT * FROM tasks WHERE enqueued_at >= ? AND enqueued_at < ? AND context IS NOT NULL ORDER BY id`),
    latestVersionOfTopic: p('SELECT MAX(version) FROM tasks WHERE tenant = ? AND topic = ?').pluck(),

    // ---- enqueue (Q1-Q3)
    insertTask: p(`INSERT INTO tasks (tenant, topic, version, input_hash, priority, input, store, tier, deadline, context,
                     state, enqueued_at, not_before, event_seq, hold_credits, hold_state)
                   VALUES (:tenant, :topic, :version, :inputHash, :priority, :inputJson, :store, :tier, :deadline, :contextJson,
                     :state, :now, :now, 1, :holdCredits, 'held')
                   ON CONFLICT (tenant, topic, version) DO NOTHING
                   RETURNING id`).pluck(),
    supersedeOlderReady: p(`UPDATE tasks SET state = 'superseded', finished_at = :now, event_seq = event_seq + 1
                            -- Q2: only versions that never started; a started one waiting for a retry finishes stale_input.
                            WHERE tenant = :tenant AND topic = :topic AND version < :version AND state = 'ready' AND generation = 0
                            RETURNING id, event_seq`),
    insertRejection: p('INSERT INTO rejections (tenant, topic, version, reason, at) VALUES (?, ?, ?, ?, ?)'),

    // ---- claim (Q5-Q7)
    // No RETURNING on the hot writes: SQLite buffers RETURNING rows in an ephemeral table, which cost
    // more than the UPDATE. The caller read the row in this transaction and computes the new values.
    claimTask: p(`UPDATE tasks SET state = 'running', worker_id = :workerId, generation = :generation,
                    attempts = attempts + 1, deliveries = deliveries + 1, lease_until = :leaseUntil,
                    claimed_at = :now, first_claimed_at = COALESCE(first_claimed_at, :now),
                    queue_wait_ms = :now - enqueued_at, event_seq = :eventSeq
                  WHERE id = :id AND state = 'ready' AND generation = :previousGeneration`),

    // ---- fenced writes (Q8, Q9, Q13, Q16)
    heartbeat: p(`UPDATE tasks SET lease_until = :leaseUntil WHERE ${FENCE} RETURNING cancel_requested`),
    bumpEventSeqFenced: p(`UPDATE tasks SET event_seq = event_seq + 1 WHERE ${FENCE} RETURNING event_seq`),
    completingRow: p(`SELECT ${COMPLETING_COLUMNS} FROM tasks WHERE id = ?`),
    completeTask: p(`UPDATE tasks SET state = 'done', result = :result, finished_at = :now, run_ms = :now - claimed_at,
                       lease_until = NULL, event_seq = :eventSeq, outcome = :outcome,
                       -- R4: the settlement, in the same statement as the state change.
                       hold_state = :holdState, hold_charged_credits = :charged, hold_usage = :usage,
                       hold_reason = 'completed', hold_closed_at = :now
                     WHERE ${FENCE} AND hold_state = 'held'`),
    // R4: a run whose hold was released while it sat uncertain (holdTtlMs) ends without a settlement.
    completeTaskHoldClosed: p(`UPDATE tasks SET state = 'done', result = :result, finished_at = :now, run_ms = :now - claimed_at,
                                 lease_until = NULL, event_seq = :eventSeq, outcome = :outcome
                               WHERE ${FENCE} AND hold_state <> 'held'`),
    // A fenced write that moves a running task: the caller has checked the transition and the fence.
    leaveRunning: p(`UPDATE tasks SET state = :state, outcome = :outcome, error_class = :errorClass, error_message = :errorMessage,
                       not_before = :notBefore, finished_at = :finishedAt, run_ms = :now - claimed_at,
                       lease_until = NULL, event_seq = event_seq + 1
                     WHERE ${FENCE}
                     RETURNING event_seq`),

    // ---- transitions that are not the holder's (expiry, confirmation, cancel, claim-time checks)
    moveTask: p(`UPDATE tasks SET state = :state, outcome = COALESCE(:outcome, outcome), finished_at = :finishedAt,
                   lease_until = CASE WHEN :state = 'uncertain' THEN lease_until ELSE NULL END,
                   event_seq = event_seq + 1
                 WHERE id = :id AND state = :fromState AND generation = :generation
                 RETURNING event_seq`),
    requestCancel: p(`UPDATE tasks SET cancel_requested = 1, event_seq = event_seq + 1
                      WHERE id = ? AND state IN ('running', 'uncertain') AND cancel_requested = 0
                      RETURNING event_seq`),

    // ---- checkpoints (R1, R2)
    insertCheckpoint: p(`INSERT INTO checkpoints (task_id, seq, generation, kind, step, state, usage, at, event_seq, requeue_safe)
                         VALUES (:id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoints WHERE task_id = :id),
                                 :generation, :kind, :step, :state, :usage, :now, :eventSeq, :requeueSafe)
                         RETURNING seq`).pluck(),
    lastCheckpoint: p('SELECT * FROM checkpoints WHERE task_id = ? ORDER BY seq DESC LIMIT 1'),
    lastCheckpointFlags: p('SELECT kind, requeue_safe FROM checkpoints WHERE task_id = ? ORDER BY seq DESC LIMIT 1'),

    // ---- holds and settlement (R4)
    closeHold: p(`UPDATE tasks SET hold_state = :state, hold_charged_credits = :charged, hold_usage = :usage,
                    hold_reason = :reason, hold_closed_at = :now
                  WHERE id = :id AND hold_state = 'held'
                  RETURNING tenant`),
    insertCredit: p('INSERT INTO credit_ledger (task_id, tenant, kind, credits, at) VALUES (?, ?, ?, ?, ?)'),
    lastCheckpointUsage: p('SELECT usage FROM checkpoints WHERE task_id = ? ORDER BY seq DESC LIMIT 1').pluck(),
    holds: p(`SELECT id AS task_id, tenant, tier, hold_credits AS credits, hold_state AS state,
                hold_charged_credits AS charged_credits, hold_usage AS usage, hold_reason AS reason,
                enqueued_at AS held_at, hold_closed_at AS closed_at
              FROM tasks WHERE hold_state IS NOT NULL ORDER BY id`),
    // Every terminal transition closes its hold in the same transaction, so only uncertain tasks can
    // hold one with no live run; they are found through tasks_holding.
    staleHolds: p(`SELECT id AS task_id, state, lease_until FROM tasks
                   WHERE ${OCCUPYING} AND state = 'uncertain' AND hold_state = 'held' AND lease_until <= :cutoff`),

    // ---- the effect ledger (R3)
    effectByKey: p('SELECT * FROM effects WHERE request_key = ?'),
    insertEffect: p(`INSERT INTO effects (request_key, task_id, tenant, action, generation, result, at)
                     VALUES (:requestKey, :id, :tenant, :action, :generation, :result, :now)
                     ON CONFLICT (request_key) DO NOTHING`),
    effects: p('SELECT request_key, task_id, tenant, action, generation, at FROM effects ORDER BY at, request_key'),

    // ---- dead letters (R6)
    insertDeadLetter: p(`INSERT OR REPLACE INTO dead_letters (task_id, tenant, topic, version, reason, reasons, at)
                         SELECT id, tenant, topic, version, :reason, :reasons, :now FROM tasks WHERE id = :id`),
    trimDeadLetters: p(`DELETE FROM dead_letters WHERE task_id NOT IN
                          (SELECT task_id FROM dead_letters ORDER BY at DESC, task_id DESC LIMIT :keep)`),
    deadLetters: p('SELECT * FROM dead_letters ORDER BY at DESC, task_id DESC'),
    failureReasons: p(`SELECT type, data FROM events WHERE task_id = ?
                       AND type IN ('retry_scheduled', 'lease_expired', 'stop_confirmed', 'failed', 'expired') ORDER BY seq`),

    // ---- the event log (Q15)
    insertEvent: p('INSERT INTO events (task_id, seq, type, at, data, worker_id, generation) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    eventCursor: p('SELECT COALESCE(MAX(id), 0) FROM events').pluck(),
    eventsSince: p('SELECT id, task_id, seq, type, at, data, worker_id, generation FROM events WHERE id > ? ORDER BY id LIMIT ?'),
  };
}

export type Statements = ReturnType<typeof prepareStatements>;

/** Tasks in one state, by id, through the partial index that covers the state when there is one. */
export function tasksInState(statements: Statements, state: string): TaskRow[] {
  const byId = (a: TaskRow, b: TaskRow) => a.id - b.id;
  if (state === 'running' || state === 'uncertain') {
    const ids = (statements.idsOccupyingInState.all(state) as number[]).sort((a, b) => a - b);
    // Outside a transaction another connection may move a task between the two reads: keep only rows
    // still in the state asked for, so the answer never holds a task in another state.
    return ids.map((id) => statements.taskById.get(id) as TaskRow | undefined).filter((row): row is TaskRow => row?.state === state);
  }
  if (state === 'ready') return (statements.readyTasks.all() as TaskRow[]).sort(byId);
  return statements.tasksInState.all(state) as TaskRow[];
}
