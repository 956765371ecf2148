/**
 * The store contract, table `tasks` (issue 36 item 4): the reads of task rows, the insert (Q1, Q2) and
 * the live counter (Q3), each against every store kind (__test-helpers__/harness.ts). taskWriteState has a file of its own
 * (state-writes.test.ts).
 */
import { describe, expect, it } from 'vitest';
import type { TaskRow } from '../store.ts';
import { AT, STORE_KINDS, claim, contractStore, failedTask, makeUncertain, newTask, readyTask } from './__test-helpers__/harness.ts';

/** The row taskCreate stores for newTask(overrides) with id `id`: every column, NULLs where nothing was written. */
function insertedRow(id: number, task: ReturnType<typeof newTask>): TaskRow {
  return {
    id,
    tenant: task.tenant,
    topic: task.topic,
    version: task.version,
    input_hash: task.inputHash,
    priority: task.priority,
    input: task.inputJson,
    store: task.store,
    tier: task.tier,
    deadline: task.deadline,
    context: task.contextJson,
    state: task.state,
    generation: 0,
    attempts: 0,
    deliveries: 0,
    worker_id: null,
    lease_until: null,
    enqueued_at: task.now,
    not_before: task.now,
    first_claimed_at: null,
    claimed_at: null,
    finished_at: null,
    queue_wait_ms: null,
    run_ms: null,
    cancel_requested: 0,
    outcome: null,
    result: null,
    error_class: null,
    error_message: null,
    event_seq: 1,
    hold_state: 'held',
    needs: task.needsJson,
    critical: task.critical,
    deferred: null,
  };
}

/** The columns of TaskRow, for rows that carry more (the hold's own columns, service_charged). */
function asTaskRow(row: TaskRow | undefined): TaskRow | undefined {
  if (row === undefined) return undefined;
  const keys = Object.keys(insertedRow(0, newTask())) as (keyof TaskRow)[];
  return Object.fromEntries(keys.map((key) => [key, row[key]])) as unknown as TaskRow;
}

describe.each(STORE_KINDS)('tasks on %s', (kind) => {
  const db = contractStore(kind);

  describe('taskCreate', () => {
    it('stores every column given and the defaults of the rest; taskById reads it back as written', async () => {
      const task = newTask({ tenant: 'acme', priority: 7, store: 's1', deadline: AT + 60_000, contextJson: '{"brand":"x"}', needsJson: '{"tokens":3}', critical: 1, holdCredits: 25 });
      const [id, row] = await db.scratch(function* (tx) {
        const id = yield* tx.taskCreate(task);
        return [id, yield* tx.taskById(id!)] as const;
      });
      expect(id).toBe(1);
      expect(asTaskRow(row)).toEqual(insertedRow(1, task));
    });

    it('keeps NULLs as null (store, deadline, context, needs)', async () => {
      const task = newTask();
      const row = await db.scratch(function* (tx) {
        return yield* tx.taskById((yield* tx.taskCreate(task))!);
      });
      expect(row).toMatchObject({ store: null, deadline: null, context: null, needs: null, worker_id: null, lease_until: null, result: null });
    });

    it('numbers ids from 1 upwards in insert order', async () => {
      const ids = await db.scratch(function* (tx) {
        return [yield* readyTask(tx), yield* readyTask(tx), yield* readyTask(tx)];
      });
      expect(ids).toEqual([1, 2, 3]);
    });

    it('refuses a taken (tenant, topic, version) key with undefined and leaves the first row alone (Q1)', async () => {
      const first = newTask({ topic: 'order-1', inputHash: 'first' });
      const [a, b, rows] = await db.scratch(function* (tx) {
        const a = yield* tx.taskCreate(first);
        const b = yield* tx.taskCreate({ ...first, inputHash: 'second', inputJson: '{"other":true}' });
        return [a, b, yield* tx.taskList()] as const;
      });
      expect(a).toBe(1);
      expect(b).toBeUndefined();
      expect(rows.map((row) => [row.id, row.input_hash])).toEqual([[1, 'first']]);
    });

    it('keys by tenant and version too: the same topic in another tenant or version is a new row', async () => {
      const ids = await db.scratch(function* (tx) {
        const a = yield* tx.taskCreate(newTask({ tenant: 'acme', topic: 'same' }));
        const b = yield* tx.taskCreate(newTask({ tenant: 'globex', topic: 'same' }));
        const c = yield* tx.taskCreate(newTask({ tenant: 'acme', topic: 'same', version: 2 }));
        return [a, b, c];
      });
      expect(ids).toEqual([1, 2, 3]);
    });

    it('stores a task created ended (a late version) with its hold closed and finished_at set (Q2)', async () => {
      const task = newTask({ state: 'superseded', hold: { state: 'released', charged: 0, usage: null, reason: 'superseded' } });
      const [row, holds] = await db.scratch(function* (tx) {
        const id = yield* tx.taskCreate(task);
        return [yield* tx.taskById(id!), yield* tx.holdList()] as const;
      });
      expect(row).toMatchObject({ id: 1, state: 'superseded', finished_at: AT, hold_state: 'released', event_seq: 1 });
      expect(holds).toEqual([{ task_id: 1, tenant: 'acme', tier: 'standard', credits: 10, state: 'released', charged_credits: 0, usage: null, reason: 'superseded', held_at: AT, closed_at: AT }]);
    });

    it('refuses a taken key for a task created ended too', async () => {
      const task = newTask({ topic: 'late' });
      const refused = await db.scratch(function* (tx) {
        yield* tx.taskCreate(task);
        return yield* tx.taskCreate({ ...task, state: 'superseded', hold: { state: 'released', charged: 0, usage: null, reason: 'superseded' } });
      });
      expect(refused).toBeUndefined();
    });
  });

  describe('taskById', () => {
    it('is undefined for an id never used', async () => {
      expect(await db.scratch((tx) => tx.taskById(42))).toBeUndefined();
    });
  });

  describe('taskByKey', () => {
    it('finds a task by (tenant, topic, version), and nothing when any part differs', async () => {
      const found = await db.scratch(function* (tx) {
        const id = yield* readyTask(tx, { tenant: 'acme', topic: 'key', version: 3 });
        return {
          id,
          hit: (yield* tx.taskByKey('acme', 'key', 3))?.id,
          tenant: yield* tx.taskByKey('globex', 'key', 3),
          topic: yield* tx.taskByKey('acme', 'other', 3),
          version: yield* tx.taskByKey('acme', 'key', 2),
        };
      });
      expect(found).toEqual({ id: 1, hit: 1, tenant: undefined, topic: undefined, version: undefined });
    });
  });

  describe('taskListForTenant', () => {
    it("lists one tenant's tasks in id order, and [] for a tenant with none", async () => {
      const [acme, none] = await db.scratch(function* (tx) {
        yield* readyTask(tx, { tenant: 'acme' });
        yield* readyTask(tx, { tenant: 'globex' });
        yield* readyTask(tx, { tenant: 'acme' });
        return [yield* tx.taskListForTenant('acme'), yield* tx.taskListForTenant('nobody')] as const;
      });
      expect(acme.map((row) => row.id)).toEqual([1, 3]);
      expect(none).toEqual([]);
    });
  });

  describe('taskList', () => {
    it('is [] on an empty database and every task in id order after inserts', async () => {
      const [empty, all] = await db.scratch(function* (tx) {
        const empty = yield* tx.taskList();
        yield* readyTask(tx, { tenant: 'b' });
        yield* readyTask(tx, { tenant: 'a' });
        return [empty, yield* tx.taskList()] as const;
      });
      expect(empty).toEqual([]);
      expect(all.map((row) => [row.id, row.tenant])).toEqual([
        [1, 'b'],
        [2, 'a'],
      ]);
    });
  });

  describe('taskListInState', () => {
    it('lists the tasks of one state in id order, for indexed (ready, running, uncertain) and other states', async () => {
      const answer = await db.scratch(function* (tx) {
        const ids = [yield* readyTask(tx), yield* readyTask(tx), yield* readyTask(tx), yield* readyTask(tx), yield* readyTask(tx)];
        yield* claim(tx, ids[3]!, { workerId: 'w4' });
        yield* claim(tx, ids[1]!, { workerId: 'w2' });
        yield* claim(tx, ids[4]!, { workerId: 'w5' });
        yield* makeUncertain(tx, ids[4]!);
        const failed = yield* failedTask(tx);
        const ofState = function* (state: 'ready' | 'running' | 'uncertain' | 'failed' | 'done') {
          return (yield* tx.taskListInState(state)).map((row) => [row.id, row.state]);
        };
        return { ready: yield* ofState('ready'), running: yield* ofState('running'), uncertain: yield* ofState('uncertain'), failed: yield* ofState('failed'), done: yield* ofState('done'), failedId: failed };
      });
      expect(answer).toEqual({
        ready: [
          [1, 'ready'],
          [3, 'ready'],
        ],
        running: [
          [2, 'running'],
          [4, 'running'],
        ],
        uncertain: [[5, 'uncertain']],
        failed: [[6, 'failed']],
        done: [],
        failedId: 6,
      });
    });
  });

  describe('taskCountsByState', () => {
    it('counts the tasks of each state present (no row for an absent state)', async () => {
      const counts = await db.scratch(function* (tx) {
        const empty = yield* tx.taskCountsByState();
        const a = yield* readyTask(tx);
        yield* readyTask(tx);
        yield* claim(tx, a);
        yield* failedTask(tx);
        return { empty, counts: yield* tx.taskCountsByState() };
      });
      expect(counts.empty).toEqual([]);
      // The order is not part of the interface (SQLite's GROUP BY order is its own): compared as a set.
      expect(Object.fromEntries(counts.counts.map((row) => [row.state, row.n]))).toEqual({ ready: 1, running: 1, failed: 1 });
      expect(counts.counts).toHaveLength(3);
    });
  });

  describe('taskOccupiedByTenant', () => {
    it('counts running and uncertain tasks per tenant; ready and ended ones take no slot', async () => {
      const rows = await db.scratch(function* (tx) {
        const a1 = yield* readyTask(tx, { tenant: 'a' });
        const a2 = yield* readyTask(tx, { tenant: 'a' });
        const b1 = yield* readyTask(tx, { tenant: 'b' });
        yield* readyTask(tx, { tenant: 'c' });
        yield* claim(tx, a1, { workerId: 'w1' });
        yield* claim(tx, a2, { workerId: 'w2' });
        yield* makeUncertain(tx, a2);
        yield* claim(tx, b1, { workerId: 'w3' });
        yield* failedTask(tx, { tenant: 'd' });
        return yield* tx.taskOccupiedByTenant();
      });
      expect(Object.fromEntries(rows.map((row) => [row.tenant, row.n]))).toEqual({ a: 2, b: 1 });
      expect(rows).toHaveLength(2);
    });
  });

  describe('taskListEnqueuedBetween', () => {
    it('lists tasks with a context enqueued in [from, to), in id order', async () => {
      const ids = await db.scratch(function* (tx) {
        yield* readyTask(tx, { now: 100, contextJson: '{}' });
        yield* readyTask(tx, { now: 200, contextJson: '{}' });
        yield* readyTask(tx, { now: 250, contextJson: null });
        yield* readyTask(tx, { now: 299, contextJson: '{"a":1}' });
        yield* readyTask(tx, { now: 300, contextJson: '{}' });
        return {
          window: (yield* tx.taskListEnqueuedBetween(200, 300)).map((row) => row.id),
          empty: yield* tx.taskListEnqueuedBetween(300, 300),
        };
      });
      expect(ids).toEqual({ window: [2, 4], empty: [] });
    });
  });

  describe('taskLatestVersion', () => {
    it('is the highest version of a (tenant, topic), and null when it has none', async () => {
      const answer = await db.scratch(function* (tx) {
        yield* readyTask(tx, { topic: 'chat', version: 2 });
        yield* readyTask(tx, { topic: 'chat', version: 5 });
        yield* readyTask(tx, { topic: 'chat', version: 3 });
        yield* readyTask(tx, { tenant: 'other', topic: 'chat', version: 9 });
        return [yield* tx.taskLatestVersion('acme', 'chat'), yield* tx.taskLatestVersion('acme', 'none')];
      });
      expect(answer).toEqual([5, null]);
    });
  });

  describe('taskNewerVersionExists', () => {
    it('is true only when a strictly higher version of the same tenant and topic exists', async () => {
      const answer = await db.scratch(function* (tx) {
        yield* readyTask(tx, { topic: 'chat', version: 2 });
        yield* readyTask(tx, { tenant: 'other', topic: 'chat', version: 9 });
        return [yield* tx.taskNewerVersionExists('acme', 'chat', 1), yield* tx.taskNewerVersionExists('acme', 'chat', 2), yield* tx.taskNewerVersionExists('acme', 'chat', 3), yield* tx.taskNewerVersionExists('acme', 'none', 0)];
      });
      expect(answer).toEqual([true, false, false, false]);
    });
  });

  describe('taskOlderUnstarted', () => {
    it('lists older versions still ready and never claimed, in id order, as movable rows', async () => {
      const rows = await db.scratch(function* (tx) {
        yield* readyTask(tx, { topic: 'chat', version: 3 });
        yield* readyTask(tx, { topic: 'chat', version: 1 });
        const started = yield* readyTask(tx, { topic: 'chat', version: 2 });
        yield* claim(tx, started);
        yield* readyTask(tx, { topic: 'chat', version: 5 });
        yield* readyTask(tx, { tenant: 'other', topic: 'chat', version: 1 });
        return [yield* tx.taskOlderUnstarted('acme', 'chat', 5), yield* tx.taskOlderUnstarted('acme', 'chat', 1)] as const;
      });
      expect(rows[0]).toEqual([
        { id: 1, tenant: 'acme', state: 'ready', generation: 0, hold_state: 'held' },
        { id: 2, tenant: 'acme', state: 'ready', generation: 0, hold_state: 'held' },
      ]);
      expect(rows[1]).toEqual([]);
    });
  });

  describe('counterLive', () => {
    it('is 0 on a fresh database', async () => {
      expect(await db.scratch((tx) => tx.counterLive())).toBe(0);
    });
  });

  describe('counterLiveAdjust', () => {
    it('adds a delta (negative too) to the live count, read back in the same transaction', async () => {
      const counts = await db.scratch(function* (tx) {
        yield* tx.counterLiveAdjust(3);
        const up = yield* tx.counterLive();
        yield* tx.counterLiveAdjust(-2);
        return [up, yield* tx.counterLive()];
      });
      expect(counts).toEqual([3, 1]);
    });

    it('commits: a later transaction reads the count', async () => {
      const before = await db.read((tx) => tx.counterLive());
      await db.commit(function* (tx) {
        yield* tx.counterLiveAdjust(2);
      });
      const after = await db.read((tx) => tx.counterLive());
      await db.commit(function* (tx) {
        yield* tx.counterLiveAdjust(-2);
      });
      expect(after - before).toBe(2);
      expect(await db.read((tx) => tx.counterLive())).toBe(before);
    });
  });
});
