/**
 * The claim's reads (Q4-Q6, Q10, A6): the slots held, the ready tenants and their level heads, a
 * level's next task, the candidate's row, a session's holders, and the leases overdue for the sweep.
 * PostgreSQL reads several of them ahead of their call (PgStatements.readsFirst, and its runner's reads
 * sent with claimHolding); each is still answered under its name here.
 */
import { PRIORITY_RANGE } from '../../queue/scoring.ts';
import { OCCUPYING_SQL } from '../../queue/states.ts';
import type { TaskState } from '../../queue/types.ts';
import type { CandidateRow, HoldingRow, LevelHeadRow } from '../store.ts';
import { HOLDING_ORDER } from './common.ts';
import type { Operations } from './runner.ts';
import { read } from './statement.ts';

const OCCUPYING = OCCUPYING_SQL;

/**
 * Hot statements name their columns: better-sqlite3 builds one JavaScript object per row, and with all
 * forty columns of a task that costs more than the SQL itself.
 */
export const CANDIDATE_COLUMNS =
  'id, tenant, topic, version, state, generation, attempts, priority, input, tier, enqueued_at, deadline, first_claimed_at, cancel_requested, event_seq, hold_state, needs, critical, deferred';
/** The holding index (migration 4) covers these, so the claim's read of occupied slots needs no task rows. */
export const HOLDING_COLUMNS = 'id, tenant, state, generation, worker_id, lease_until, hold_state';

/** Whether another task of a session holds a slot (the candidate's own row aside): PostgreSQL reads it with a candidate. */
export const SESSION_BUSY_OF = (task: string) =>
  `EXISTS (SELECT 1 FROM tasks AS s WHERE s.tenant = ${task}.tenant AND s.topic = ${task}.topic AND s.${OCCUPYING} AND s.id <> ${task}.id)`;

/** The slots held (Q6), in the holding index's own order (a covering walk of it on SQLite, no sort). */
export const claimHolding = read('claimHolding').rows<HoldingRow>(`SELECT ${HOLDING_COLUMNS} FROM tasks WHERE ${OCCUPYING} ORDER BY ${HOLDING_ORDER}`);

/** Q10: the running tasks whose lease has lapsed by :at, oldest lease first. */
export const claimOverdueLeases = read('claimOverdueLeases', ['at']).rows<HoldingRow>(
  `SELECT ${HOLDING_COLUMNS} FROM tasks
                      WHERE ${OCCUPYING} AND state = 'running' AND lease_until <= :at ORDER BY lease_until, id`,
);

export const claimAnyReady = read('claimAnyReady').pluck<number>(`SELECT 1 FROM tasks WHERE state = 'ready' LIMIT 1`);

export const claimFirstReadyTenant = read('claimFirstReadyTenant').pluck<string>(`SELECT tenant FROM tasks WHERE state = 'ready' ORDER BY tenant LIMIT 1`);

export const claimNextReadyTenant = read('claimNextReadyTenant', ['after']).pluck<string>(
  `SELECT tenant FROM tasks WHERE state = 'ready' AND tenant > :after ORDER BY tenant LIMIT 1`,
);

/**
 * Q4/Q5: the head of the highest eligible priority level of one tenant, within [minPriority,
 * maxPriority]: the earliest-enqueued ready task of that level whose backoff has passed. One index
 * seek on tasks_ready, whose order (tenant, priority DESC, enqueued_at, id) is exactly this ORDER BY.
 * It reads only columns of that index (a covering seek, no table row); the winner's row is read once,
 * by id, after the walk.
 */
export const claimLevelHead = read('claimLevelHead', ['tenant', 'maxPriority', 'minPriority', 'now']).one<LevelHeadRow>(`
  SELECT id, priority, enqueued_at FROM tasks
  WHERE state = 'ready' AND tenant = :tenant AND priority <= :maxPriority AND priority >= :minPriority AND not_before <= :now
  ORDER BY priority DESC, enqueued_at, id
  LIMIT 1`);

/** A ready tenant with its head at a time (claimReadyHeads): the head's columns are null when none is eligible. */
export interface ReadyHeadRow {
  tenant: string;
  id: number | null;
  priority: number | null;
  enqueued_at: number | null;
}

/**
 * Every tenant with a ready task, in tenant order, each with its claimLevelHead over the whole priority
 * range at :now (null columns when none is eligible yet): a skip scan over tasks_ready, one seek a step.
 */
export const claimReadyHeads = read('claimReadyHeads', ['now']).rows<ReadyHeadRow>({
  sqlite: `WITH RECURSIVE tenants(tenant) AS (
                 SELECT (SELECT tenant FROM tasks WHERE state = 'ready' ORDER BY tenant LIMIT 1)
                 UNION ALL
                 SELECT (SELECT t.tenant FROM tasks AS t WHERE t.state = 'ready' AND t.tenant > tenants.tenant ORDER BY t.tenant LIMIT 1)
                 FROM tenants WHERE tenants.tenant IS NOT NULL)
               SELECT tenants.tenant, head.id, head.priority, head.enqueued_at
               FROM tenants LEFT JOIN tasks AS head ON head.id = (
                 SELECT h.id FROM tasks AS h
                 WHERE h.state = 'ready' AND h.tenant = tenants.tenant AND h.priority <= ${PRIORITY_RANGE.max} AND h.priority >= ${PRIORITY_RANGE.min} AND h.not_before <= :now
                 ORDER BY h.priority DESC, h.enqueued_at, h.id LIMIT 1)
               WHERE tenants.tenant IS NOT NULL`,
  postgres: `WITH RECURSIVE tenants(tenant) AS (
                 (SELECT tenant FROM tasks WHERE state = 'ready' ORDER BY tenant LIMIT 1)
                 UNION ALL
                 SELECT (SELECT t.tenant FROM tasks t WHERE t.state = 'ready' AND t.tenant > tenants.tenant ORDER BY t.tenant LIMIT 1)
                 FROM tenants WHERE tenants.tenant IS NOT NULL)
               SELECT tenants.tenant, head.id, head.priority, head.enqueued_at
               FROM tenants LEFT JOIN LATERAL (
                 SELECT id, priority, enqueued_at FROM tasks
                 WHERE state = 'ready' AND tenant = tenants.tenant AND priority <= ${PRIORITY_RANGE.max} AND priority >= ${PRIORITY_RANGE.min} AND not_before <= :now
                 ORDER BY priority DESC, enqueued_at, id LIMIT 1) AS head ON true
               WHERE tenants.tenant IS NOT NULL
               ORDER BY tenants.tenant`,
  necessity:
    'Differs by necessity: SQLite has no LATERAL join, so its head is the row whose id the level seek finds (a covering seek, then the row by its rowid), and its recursive walk yields the tenants in order with no sort; PostgreSQL joins the seek LATERALly, reading the head from the index.',
});

/** A6: the task after a skipped one in the same level, by the same index order. */
export const claimLevelNext = read('claimLevelNext', ['tenant', 'priority', 'enqueuedAt', 'id', 'now']).one<LevelHeadRow>(
  `SELECT id, priority, enqueued_at FROM tasks
                  WHERE state = 'ready' AND tenant = :tenant AND priority = :priority AND not_before <= :now
                    AND (enqueued_at > :enqueuedAt OR (enqueued_at = :enqueuedAt AND id > :id))
                  ORDER BY enqueued_at, id
                  LIMIT 1`,
);

/** A6: a session's older versions that hold a slot (the enqueue of a newer one cancels them). */
export const sessionOlderHolders = read('sessionOlderHolders', ['tenant', 'topic', 'version']).rows<{ id: number; state: TaskState }>(
  `SELECT id, state FROM tasks WHERE tenant = :tenant AND topic = :topic AND version < :version AND ${OCCUPYING} ORDER BY id`,
);

/** A6: whether another task of the session holds a slot; the unique key's index (tenant, topic, version) finds the session's tasks. */
export const sessionBusy = read('sessionBusy', ['tenant', 'topic', 'except_id']).pluck<number>(
  `SELECT 1 FROM tasks WHERE tenant = :tenant AND topic = :topic AND ${OCCUPYING} AND id <> :except_id LIMIT 1`,
);

/** The column PostgreSQL's claimCandidate adds: the candidate's sessionBusy. */
interface SessionAhead {
  ahead_session_busy: boolean;
}

/** The winner's row, read once by id after the walk. */
export const claimCandidate = read('claimCandidate', ['task_id']).one<CandidateRow | (CandidateRow & SessionAhead)>({
  sqlite: `SELECT ${CANDIDATE_COLUMNS} FROM tasks WHERE id = :task_id`,
  postgres: `SELECT ${CANDIDATE_COLUMNS},
                         ${SESSION_BUSY_OF('tasks')} AS ahead_session_busy
                       FROM tasks WHERE id = :task_id`,
  necessity:
    "Differs by necessity: PostgreSQL pays a round trip for each statement, so it reads with the candidate what the claim asks next (whether its session is busy) and answers that read from it; SQLite pays no round trip, and the subquery on every claim's candidate would buy it nothing.",
});

function headsOf(rows: readonly ReadyHeadRow[]): { tenant: string; head: LevelHeadRow | null }[] {
  return rows.map((row) => ({
    tenant: row.tenant,
    head: row.id === null ? null : ({ id: row.id, priority: row.priority!, enqueued_at: row.enqueued_at! } as LevelHeadRow),
  }));
}

export const claimOperations = {
  claimHolding() {
    return this.run(claimHolding, {});
  },
  claimOverdueLeases(at) {
    return this.run(claimOverdueLeases, { at });
  },
  claimAnyReady() {
    return this.run(claimAnyReady, {}, (found) => found !== undefined);
  },
  claimFirstReadyTenant() {
    return this.run(claimFirstReadyTenant, {});
  },
  claimNextReadyTenant(after) {
    return this.run(claimNextReadyTenant, { after });
  },
  claimLevelHead(query) {
    return this.run(claimLevelHead, query);
  },
  claimReadyHeads(now) {
    return this.run(claimReadyHeads, { now }, headsOf);
  },
  claimLevelNext(query) {
    return this.run(claimLevelNext, query);
  },
  sessionOlderHolders(tenant, topic, version) {
    return this.run(sessionOlderHolders, { tenant, topic, version });
  },
  sessionBusy(tenant, topic, exceptId) {
    return this.run(sessionBusy, { tenant, topic, except_id: exceptId }, (found) => found !== undefined);
  },
  /** The candidate; on PostgreSQL its session's sessionBusy is answered ahead from it (a claim asks for it next). */
  claimCandidate(id) {
    return this.run(claimCandidate, { task_id: id }, (row) => {
      if (row === undefined || !('ahead_session_busy' in row)) return row;
      const { ahead_session_busy: busy, ...candidate } = row;
      // In the statement's own answer: its pluck is 1, or undefined for none.
      this.answeredAhead(sessionBusy, { tenant: candidate.tenant, topic: candidate.topic, except_id: candidate.id }, busy ? 1 : undefined);
      return candidate as CandidateRow;
    });
  },
} satisfies Operations<
  | 'claimHolding'
  | 'claimOverdueLeases'
  | 'claimAnyReady'
  | 'claimFirstReadyTenant'
  | 'claimNextReadyTenant'
  | 'claimLevelHead'
  | 'claimReadyHeads'
  | 'claimLevelNext'
  | 'sessionOlderHolders'
  | 'sessionBusy'
  | 'claimCandidate'
>;
