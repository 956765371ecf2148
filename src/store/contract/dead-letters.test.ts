/**
 * The store contract, table `dead_letters` (R6, O1): deadLetterInsert, deadLetterList, deadLetterTask and
 * taskResetForRedrive, each against every store kind (__test-helpers__/harness.ts).
 */
import { describe, expect, it } from 'vitest';
import { AT, STORE_KINDS, contractStore, failedTask, readyTask } from './__test-helpers__/harness.ts';

describe.each(STORE_KINDS)('dead letters on %s', (kind) => {
  const db = contractStore(kind);

  describe('deadLetterInsert', () => {
    it("copies the task's key into a dead letter with the reason and reasons given", async () => {
      const letters = await db.scratch(function* (tx) {
        const id = yield* failedTask(tx, { tenant: 't', topic: 'p', version: 4 });
        yield* tx.deadLetterInsert(id, 'exhausted', '[{"type":"failed"}]', AT + 3, 10);
        return yield* tx.deadLetterList();
      });
      expect(letters).toEqual([{ task_id: 1, tenant: 't', topic: 'p', version: 4, reason: 'exhausted', reasons: '[{"type":"failed"}]', at: AT + 3 }]);
    });

    it('replaces the dead letter of a task that has one (one per task)', async () => {
      const letters = await db.scratch(function* (tx) {
        const id = yield* failedTask(tx);
        yield* tx.deadLetterInsert(id, 'first', '[]', AT, 10);
        yield* tx.deadLetterInsert(id, 'second', '[1]', AT + 1, 10);
        return yield* tx.deadLetterList();
      });
      expect(letters.map((letter) => [letter.task_id, letter.reason, letter.reasons, letter.at])).toEqual([[1, 'second', '[1]', AT + 1]]);
    });

    it('writes nothing for a task that does not exist', async () => {
      const letters = await db.scratch(function* (tx) {
        yield* tx.deadLetterInsert(42, 'ghost', '[]', AT, 10);
        return yield* tx.deadLetterList();
      });
      expect(letters).toEqual([]);
    });

    it('keeps only the `keep` newest by (at, task_id)', async () => {
      const letters = await db.scratch(function* (tx) {
        const ids = [yield* failedTask(tx), yield* failedTask(tx), yield* failedTask(tx), yield* failedTask(tx)];
        yield* tx.deadLetterInsert(ids[0]!, 'r', '[]', AT + 5, 3);
        yield* tx.deadLetterInsert(ids[1]!, 'r', '[]', AT + 1, 3);
        yield* tx.deadLetterInsert(ids[2]!, 'r', '[]', AT + 5, 3);
        yield* tx.deadLetterInsert(ids[3]!, 'r', '[]', AT + 2, 3);
        return (yield* tx.deadLetterList()).map((letter) => letter.task_id);
      });
      expect(letters).toEqual([3, 1, 4]);
    });
  });

  describe('deadLetterList', () => {
    it('is [] when none, and newest first by (at DESC, task_id DESC)', async () => {
      const [empty, ids] = await db.scratch(function* (tx) {
        const empty = yield* tx.deadLetterList();
        const a = yield* failedTask(tx);
        const b = yield* failedTask(tx);
        const c = yield* failedTask(tx);
        yield* tx.deadLetterInsert(a, 'r', '[]', AT + 1, 10);
        yield* tx.deadLetterInsert(b, 'r', '[]', AT, 10);
        yield* tx.deadLetterInsert(c, 'r', '[]', AT + 1, 10);
        return [empty, (yield* tx.deadLetterList()).map((letter) => letter.task_id)] as const;
      });
      expect(empty).toEqual([]);
      expect(ids).toEqual([3, 1, 2]);
    });
  });

  describe('deadLetterTask', () => {
    it('reads a failed task with its dead letter; undefined without a dead letter or when the task is not failed', async () => {
      const answer = await db.scratch(function* (tx) {
        const letter = yield* failedTask(tx, { tenant: 't', topic: 'p' });
        const without = yield* failedTask(tx);
        const ready = yield* readyTask(tx);
        yield* tx.deadLetterInsert(letter, 'exhausted', '["a","b"]', AT, 10);
        yield* tx.deadLetterInsert(ready, 'odd', '[]', AT, 10);
        return { letter: yield* tx.deadLetterTask(letter), without: yield* tx.deadLetterTask(without), ready: yield* tx.deadLetterTask(ready), missing: yield* tx.deadLetterTask(77) };
      });
      expect(answer).toEqual({
        letter: { id: 1, tenant: 't', topic: 'p', version: 1, state: 'failed', generation: 1, hold_state: 'released', attempts: 1, deliveries: 1, reason: 'exhausted', reasons: '["a","b"]' },
        without: undefined,
        ready: undefined,
        missing: undefined,
      });
    });
  });

  describe('taskResetForRedrive', () => {
    it('resets attempts, deliveries, the first claim and the last error, sets not_before, and removes the dead letter', async () => {
      const answer = await db.scratch(function* (tx) {
        const id = yield* failedTask(tx);
        const other = yield* failedTask(tx);
        yield* tx.deadLetterInsert(id, 'exhausted', '[]', AT, 10);
        yield* tx.deadLetterInsert(other, 'exhausted', '[]', AT, 10);
        const before = yield* tx.taskById(id);
        yield* tx.taskResetForRedrive(id, AT + 500);
        return { before, after: yield* tx.taskById(id), letters: (yield* tx.deadLetterList()).map((letter) => letter.task_id) };
      });
      expect(answer.before).toMatchObject({ attempts: 1, deliveries: 1, first_claimed_at: AT, error_class: 'boom', error_message: 'it broke' });
      expect(answer.after).toMatchObject({ state: 'failed', attempts: 0, deliveries: 0, first_claimed_at: null, not_before: AT + 500, error_class: null, error_message: null, generation: 1 });
      expect(answer.letters).toEqual([2]);
    });
  });
});
