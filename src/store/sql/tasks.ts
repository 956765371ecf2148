/**
 * Task reads (Q1-Q3): a task by its id or its key, a tenant's or every task, tasks in a state, the
 * counts by state and of occupied slots by tenant, and a topic's versions; and the live counter (I7).
 * The claim's reads are in claim.ts, a task's insert and its state writes in task-writes.ts.
 */
import type { TaskState } from '../../queue/types.ts';
import { OCCUPYING_SQL } from '../../queue/states.ts';
import type { MovableRow, Step, TaskRow } from '../store.ts';
import { NOTHING, type Operations } from './runner.ts';
import { read, write } from './statement.ts';

const OCCUPYING = OCCUPYING_SQL;

export const taskById = read('taskById', ['task_id']).one<TaskRow>('SELECT * FROM tasks WHERE id = :task_id');

export const taskByKey = read('taskByKey', ['tenant', 'topic', 'version']).one<TaskRow>('SELECT * FROM tasks WHERE tenant = :tenant AND topic = :topic AND version = :version');

export const taskListForTenant = read('taskListForTenant', ['tenant']).rows<TaskRow>('SELECT * FROM tasks WHERE tenant = :tenant ORDER BY id');

export const taskList = read('taskList').rows<TaskRow>('SELECT * FROM tasks ORDER BY id');

export const taskListInState = read('taskListInState', ['state']).rows<TaskRow>('SELECT * FROM tasks WHERE state = :state ORDER BY id');

/**
 * The same for the states a partial index covers: a walk of that index, not a scan of every task ever
 * run. SQLite uses a partial index only when the query repeats the index's own WHERE term, and (without
 * statistics) prefers a rowid scan whenever there is an ORDER BY id, so these two have none: their
 * rows are put in id order by taskListInState below, on both dialects. The holding index holds the state,
 * so the walk reads a task's row only when its state is the one asked for.
 */
export const taskListOccupyingInState = read('taskListOccupyingInState', ['state']).rows<TaskRow>(`SELECT * FROM tasks WHERE ${OCCUPYING} AND state = :state`);

export const taskListReady = read('taskListReady').rows<TaskRow>(`SELECT * FROM tasks WHERE state = 'ready'`);

export const taskCountsByState = read('taskCountsByState').rows<{ state: TaskState; n: number }>('SELECT state, COUNT(*) AS n FROM tasks GROUP BY state ORDER BY state');

/** Occupied slots by tenant: a walk of the holding index, which is in tenant order (so the ORDER BY costs SQLite no sort). */
export const taskOccupiedByTenant = read('taskOccupiedByTenant').rows<{ tenant: string; n: number }>(
  `SELECT tenant, COUNT(*) AS n FROM tasks WHERE ${OCCUPYING} GROUP BY tenant ORDER BY tenant`,
);

export const taskListEnqueuedBetween = read('taskListEnqueuedBetween', ['from', 'to']).rows<TaskRow>(
  'SELECT * FROM tasks WHERE enqueued_at >= :from AND enqueued_at < :to AND context IS NOT NULL ORDER BY id',
);

export const taskLatestVersion = read('taskLatestVersion', ['tenant', 'topic']).pluck<number | null>('SELECT MAX(version) AS v FROM tasks WHERE tenant = :tenant AND topic = :topic');

export const taskNewerVersion = read('taskNewerVersion', ['tenant', 'topic', 'version']).pluck<number>('SELECT 1 FROM tasks WHERE tenant = :tenant AND topic = :topic AND version > :version LIMIT 1');

/** Q2: only versions that never started; a started one waiting for a retry finishes stale_input. */
export const taskOlderUnstarted = read('taskOlderUnstarted', ['tenant', 'topic', 'version']).rows<MovableRow>({
  sqlite: `SELECT id, tenant, state, generation, hold_state FROM tasks
           WHERE tenant = :tenant AND topic = :topic AND version < :version AND state = 'ready' AND generation = 0 ORDER BY id`,
  postgres: `SELECT id, tenant, state, generation, hold_state FROM (
               SELECT id, tenant, state, generation, hold_state FROM tasks
               WHERE tenant = :tenant AND topic = :topic AND version < :version OFFSET 0) AS versions
             WHERE state = 'ready' AND generation = 0 ORDER BY id`,
  necessity:
    "Differs by necessity: PostgreSQL's inner query names only the (tenant, topic, version) key, and OFFSET 0 keeps its planner from folding the outer filter in: without statistics (a server whose autovacuum is off) it would take the tasks_ready partial index instead and filter the tenant's whole ready backlog on every enqueue. SQLite takes no OFFSET without a LIMIT, and finds the versions by the key as the query stands.",
});

/**
 * I7: how many tasks are live (not finished), kept in one counter row that every enqueue and every
 * finish adjusts, so admission reads one row instead of counting tasks. PgStatements answers it (and
 * counts the adjustments) from an enqueue's first round trip, under the queue lock.
 */
export const counterLive = read('counterLive').pluck<number>(`SELECT value FROM counters WHERE name = 'live'`);

export const counterLiveAdjust = write('counterLiveAdjust', ['delta']).changes(`UPDATE counters SET value = value + :delta WHERE name = 'live'`);

const byId = (rows: TaskRow[]): TaskRow[] => rows.sort((a, b) => a.id - b.id);

export const taskOperations = {
  taskById(id) {
    return this.run(taskById, { task_id: id });
  },
  taskByKey(tenant, topic, version) {
    return this.run(taskByKey, { tenant, topic, version });
  },
  taskListForTenant(tenant) {
    return this.run(taskListForTenant, { tenant });
  },
  taskList() {
    return this.run(taskList, {});
  },
  /** Tasks in one state, by id, through the partial index that covers the state when there is one. */
  taskListInState(state) {
    if (state === 'running' || state === 'uncertain') return this.run(taskListOccupyingInState, { state }, byId);
    if (state === 'ready') return this.run(taskListReady, {}, byId);
    return this.run(taskListInState, { state });
  },
  taskCountsByState() {
    return this.run(taskCountsByState, {});
  },
  taskOccupiedByTenant() {
    return this.run(taskOccupiedByTenant, {});
  },
  taskListEnqueuedBetween(from, to) {
    return this.run(taskListEnqueuedBetween, { from, to });
  },
  taskLatestVersion(tenant, topic) {
    return this.run(taskLatestVersion, { tenant, topic }, (latest) => latest ?? null);
  },
  taskNewerVersionExists(tenant, topic, version) {
    return this.run(taskNewerVersion, { tenant, topic, version }, (found) => found !== undefined);
  },
  taskOlderUnstarted(tenant, topic, version) {
    return this.run(taskOlderUnstarted, { tenant, topic, version });
  },
  counterLive() {
    return this.run(counterLive, {}) as Step<number>;
  },
  counterLiveAdjust(delta) {
    this.send(counterLiveAdjust, { delta });
    return NOTHING;
  },
} satisfies Operations<
  | 'taskById'
  | 'taskByKey'
  | 'taskListForTenant'
  | 'taskList'
  | 'taskListInState'
  | 'taskCountsByState'
  | 'taskOccupiedByTenant'
  | 'taskListEnqueuedBetween'
  | 'taskLatestVersion'
  | 'taskNewerVersionExists'
  | 'taskOlderUnstarted'
  | 'counterLive'
  | 'counterLiveAdjust'
>;
