/**
 * The store contract, tables `events` (Q15) and `rejections` (Q3, I4): eventAppend, eventListForTask,
 * eventList, eventCursor, eventListSince, taskFailureReasons, rejectionInsert and rejectionList, each against
 * every store kind (__test-helpers__/harness.ts).
 */
import { describe, expect, it } from 'vitest';
import { AT, STORE_KINDS, contractStore, readyTask } from './__test-helpers__/harness.ts';

describe.each(STORE_KINDS)('events on %s', (kind) => {
  const db = contractStore(kind);

  describe('eventAppend', () => {
    it('stores every column as given, NULL worker and generation included; ids follow insert order', async () => {
      const events = await db.scratch(function* (tx) {
        yield* tx.eventAppend(1, 1, 'enqueued', AT, '{"to":"ready"}', null, null);
        yield* tx.eventAppend(1, 2, 'claimed', AT + 1, '{"from":"ready","to":"running"}', 'w1', 1);
        return yield* tx.eventList();
      });
      expect(events).toEqual([
        { id: 1, task_id: 1, seq: 1, type: 'enqueued', at: AT, data: '{"to":"ready"}', worker_id: null, generation: null },
        { id: 2, task_id: 1, seq: 2, type: 'claimed', at: AT + 1, data: '{"from":"ready","to":"running"}', worker_id: 'w1', generation: 1 },
      ]);
    });

    it('keeps text byte for byte when written with other statements in one round trip (quotes, backslashes, non-ASCII, JSON escapes)', async () => {
      // On PostgreSQL eventAppend waits for the next statement and goes with it as EXECUTE ... with literals (pg-statements.ts batchText).
      const texts = [`{"q":"it's"}`, '{"b":"back\\\\slash \\n"}', '{"u":"é 😀 \\u0000"}', "'); DROP TABLE events; --", '\\', "E'x'", ''];
      const data = await db.scratch(function* (tx) {
        for (const [i, text] of texts.entries()) {
          yield* tx.eventAppend(1, i + 1, 'note', AT, text, i % 2 === 0 ? `w'${i}\\` : null, i);
          yield* tx.signalBump(`note:${text}`, 1);
        }
        return { events: (yield* tx.eventListForTask(1)).map((event) => [event.data, event.worker_id]), signals: (yield* tx.signalList()).map((row) => row.name) };
      });
      expect(data.events).toEqual(texts.map((text, i) => [text, i % 2 === 0 ? `w'${i}\\` : null]));
      expect([...data.signals].sort()).toEqual(texts.map((text) => `note:${text}`).sort());
    });

    it('refuses a value that is missing (never written as NULL): the transaction fails and nothing of it is kept', async () => {
      await expect(
        db.commit(function* (tx) {
          yield* tx.eventAppend(1, 1, 'enqueued', AT, '{}', null, null);
          yield* tx.eventAppend(1, 2, 'claimed', AT, '{}', undefined as never, 1);
          return yield* tx.eventList();
        }),
      ).rejects.toThrow(/eventInsert: no value for :worker_id/);
      expect(await db.read(function* (tx) { return yield* tx.eventList(); })).toEqual([]);
    });

    it('refuses a second event with the same (task, seq): the transaction fails', async () => {
      await expect(
        db.scratch(function* (tx) {
          yield* tx.eventAppend(1, 1, 'enqueued', AT, '{}', null, null);
          yield* tx.eventAppend(1, 1, 'enqueued', AT, '{}', null, null);
          return yield* tx.eventList();
        }),
      ).rejects.toThrow(/unique|duplicate/i);
    });
  });

  describe('eventListForTask', () => {
    it("lists one task's events in seq order whatever the insert order, and [] for a task with none", async () => {
      const [seqs, none] = await db.scratch(function* (tx) {
        yield* tx.eventAppend(1, 2, 'b', AT, '{}', null, null);
        yield* tx.eventAppend(2, 1, 'x', AT, '{}', null, null);
        yield* tx.eventAppend(1, 1, 'a', AT, '{}', null, null);
        yield* tx.eventAppend(1, 3, 'c', AT, '{}', null, null);
        return [(yield* tx.eventListForTask(1)).map((event) => [event.seq, event.type, event.id]), yield* tx.eventListForTask(9)] as const;
      });
      expect(seqs).toEqual([
        [1, 'a', 3],
        [2, 'b', 1],
        [3, 'c', 4],
      ]);
      expect(none).toEqual([]);
    });
  });

  describe('eventList', () => {
    it('is [] on an empty log and every event in id (commit) order', async () => {
      const [empty, all] = await db.scratch(function* (tx) {
        const empty = yield* tx.eventList();
        yield* tx.eventAppend(2, 1, 'x', AT, '{}', null, null);
        yield* tx.eventAppend(1, 1, 'y', AT, '{}', null, null);
        return [empty, (yield* tx.eventList()).map((event) => [event.id, event.task_id])] as const;
      });
      expect(empty).toEqual([]);
      expect(all).toEqual([
        [1, 2],
        [2, 1],
      ]);
    });
  });

  describe('eventCursor', () => {
    it('is 0 on an empty log and the newest event id after inserts', async () => {
      const answer = await db.scratch(function* (tx) {
        const empty = yield* tx.eventCursor();
        yield* tx.eventAppend(1, 1, 'a', AT, '{}', null, null);
        yield* tx.eventAppend(1, 2, 'b', AT, '{}', null, null);
        return [empty, yield* tx.eventCursor()];
      });
      expect(answer).toEqual([0, 2]);
    });
  });

  describe('eventListSince', () => {
    it('reads at most `limit` events after the cursor, in id order', async () => {
      const answer = await db.scratch(function* (tx) {
        for (let seq = 1; seq <= 5; seq++) yield* tx.eventAppend(1, seq, `e${seq}`, AT + seq, '{}', null, null);
        const ids = function* (cursor: number, limit: number) {
          return (yield* tx.eventListSince(cursor, limit)).map((event) => event.id);
        };
        return { first: yield* ids(0, 2), middle: yield* ids(2, 10), end: yield* ids(5, 10), full: (yield* tx.eventListSince(4, 1))[0] };
      });
      expect(answer).toEqual({
        first: [1, 2],
        middle: [3, 4, 5],
        end: [],
        full: { id: 5, task_id: 1, seq: 5, type: 'e5', at: AT + 5, data: '{}', worker_id: null, generation: null },
      });
    });
  });

  describe('taskFailureReasons', () => {
    it("lists a task's failure events (retry_scheduled, lease_expired, stop_confirmed, failed, expired) in seq order", async () => {
      const [reasons, none] = await db.scratch(function* (tx) {
        const types = ['enqueued', 'claimed', 'retry_scheduled', 'claimed', 'lease_expired', 'stop_confirmed', 'claimed', 'completed', 'failed', 'expired'];
        for (const [i, type] of types.entries()) yield* tx.eventAppend(1, i + 1, type, AT, `{"n":${i + 1}}`, null, null);
        yield* tx.eventAppend(2, 1, 'failed', AT, '{"other":true}', null, null);
        return [yield* tx.taskFailureReasons(1), yield* tx.taskFailureReasons(3)] as const;
      });
      expect(reasons).toEqual([
        { type: 'retry_scheduled', data: '{"n":3}' },
        { type: 'lease_expired', data: '{"n":5}' },
        { type: 'stop_confirmed', data: '{"n":6}' },
        { type: 'failed', data: '{"n":9}' },
        { type: 'expired', data: '{"n":10}' },
      ]);
      expect(none).toEqual([]);
    });
  });

  describe('rejectionInsert', () => {
    it('records a rejection and bumps its signal counter rejection:<reason> in the same transaction', async () => {
      const answer = await db.scratch(function* (tx) {
        yield* tx.rejectionInsert('acme', 't1', 1, 'capacity', AT);
        yield* tx.rejectionInsert('acme', 't2', 2, 'capacity', AT + 1);
        yield* tx.rejectionInsert('globex', 't1', 1, 'expired', AT + 2);
        return { rejections: yield* tx.rejectionList(), signals: yield* tx.signalList() };
      });
      expect(answer.signals).toEqual([
        { name: 'rejection:capacity', value: 2 },
        { name: 'rejection:expired', value: 1 },
      ]);
      expect(answer.rejections).toHaveLength(3);
    });
  });

  describe('rejectionList', () => {
    it('is [] when none, and the rejections in insert order with every column', async () => {
      const [empty, rows] = await db.scratch(function* (tx) {
        const empty = yield* tx.rejectionList();
        yield* readyTask(tx);
        yield* tx.rejectionInsert('b', 'x', 3, 'late', AT + 1);
        yield* tx.rejectionInsert('a', 'y', 1, 'capacity', AT);
        return [empty, yield* tx.rejectionList()] as const;
      });
      expect(empty).toEqual([]);
      expect(rows).toEqual([
        { tenant: 'b', topic: 'x', version: 3, reason: 'late', at: AT + 1 },
        { tenant: 'a', topic: 'y', version: 1, reason: 'capacity', at: AT },
      ]);
    });
  });
});
