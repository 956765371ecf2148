/**
 * The event log (Q15): table `events`, each task's events in a contiguous sequence, the id one global
 * order (the event cursor); and table `rejections`, one row per refused enqueue, each counted in its
 * signal (A5) in the same transaction.
 */
import type { EventRow, RejectionRow } from '../store.ts';
import { NOTHING, type Operations } from './runner.ts';
import { signalBump } from './signals.ts';
import { read, write } from './statement.ts';

const EVENT_COLUMNS = 'id, task_id, seq, type, at, data, worker_id, generation';

/** An event; its id is the next one (one more than the largest), which the runner reports. */
export const eventInsert = write('eventInsert', ['task_id', 'seq', 'type', 'at', 'data', 'worker_id', 'generation']).inserted({
  sqlite: `INSERT INTO events (task_id, seq, type, at, data, worker_id, generation)
           VALUES (:task_id, :seq, :type, :at, :data, :worker_id, :generation)`,
  postgres: `INSERT INTO events (id, task_id, seq, type, at, data, worker_id, generation)
             VALUES ((SELECT COALESCE(MAX(id), 0) + 1 FROM events), :task_id, :seq, :type, :at, :data, :worker_id, :generation)
             RETURNING id`,
  necessity:
    "Differs by necessity: PostgreSQL's table has no rowid, so its text takes the id (one more than the largest: a sequence would burn ids on a rollback) and RETURNs it; SQLite's rowid is that same id, which better-sqlite3 reports without a RETURNING clause. On this, the hottest insert of the store, SQLite's RETURNING and the MAX subquery would double its cost (2 µs against 4-6 µs an insert, measured).",
});

export const eventListForTask = read('eventListForTask', ['task_id']).rows<EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE task_id = :task_id ORDER BY seq`);

export const eventList = read('eventList').rows<EventRow>(`SELECT ${EVENT_COLUMNS} FROM events ORDER BY id`);

/** The id of the newest event, 0 when there is none. */
export const eventCursor = read('eventCursor').pluck<number>('SELECT COALESCE(MAX(id), 0) AS v FROM events');

export const eventListSince = read('eventListSince', ['cursor', 'limit']).rows<EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE id > :cursor ORDER BY id LIMIT :limit`);

/** A refused enqueue; its id is the next one, as SQLite's rowid takes it (PostgreSQL's table has no rowid). */
export const rejectionInsert = write('rejectionInsert', ['tenant', 'topic', 'version', 'reason', 'at']).changes(
  `INSERT INTO rejections (id, tenant, topic, version, reason, at)
   VALUES ((SELECT COALESCE(MAX(id), 0) + 1 FROM rejections), :tenant, :topic, :version, :reason, :at)`,
);

export const rejectionList = read('rejectionList').rows<RejectionRow>('SELECT tenant, topic, version, reason, at FROM rejections ORDER BY id');

export const eventOperations = {
  eventAppend(taskId, seq, type, at, dataJson, workerId, generation) {
    const params = { task_id: taskId, seq, type, at, data: dataJson, worker_id: workerId, generation };
    this.send(eventInsert, params, (id) => {
      if (id !== undefined) this.lastEventId = id;
    });
    return NOTHING;
  },
  eventListForTask(id) {
    return this.run(eventListForTask, { task_id: id });
  },
  eventList() {
    return this.run(eventList, {});
  },
  eventCursor() {
    return this.run(eventCursor, {}, (cursor) => cursor as number);
  },
  eventListSince(cursor, limit) {
    return this.run(eventListSince, { cursor, limit });
  },
  rejectionInsert(tenant, topic, version, reason, at) {
    this.send(rejectionInsert, { tenant, topic, version, reason, at });
    this.send(signalBump, { name: `rejection:${reason}`, delta: 1 });
    return NOTHING;
  },
  rejectionList() {
    return this.run(rejectionList, {});
  },
} satisfies Operations<'eventAppend' | 'eventListForTask' | 'eventList' | 'eventCursor' | 'eventListSince' | 'rejectionInsert' | 'rejectionList'>;
