/**
 * The store contract, table `checkpoints` (R1, R2, R5): checkpointInsert, checkpointLast,
 * checkpointLastFlags and checkpointLastUsage, each against every store kind (__test-helpers__/harness.ts).
 */
import { describe, expect, it } from 'vitest';
import type { NewCheckpoint } from '../store.ts';
import { AT, STORE_KINDS, contractStore } from './__test-helpers__/harness.ts';

function checkpoint(overrides: Partial<NewCheckpoint> = {}): NewCheckpoint {
  return { id: 1, generation: 1, kind: 'A', step: 1, state: '{"s":1}', usage: '{"tokens":1}', now: AT, eventSeq: 3, requeueSafe: 0, ...overrides };
}

describe.each(STORE_KINDS)('checkpoints on %s', (kind) => {
  const db = contractStore(kind);

  describe('checkpointInsert', () => {
    it("numbers a task's checkpoints 1, 2, ... (each task its own sequence) and answers the seq", async () => {
      const seqs = await db.scratch(function* (tx) {
        return [
          yield* tx.checkpointInsert(checkpoint({ id: 1 })),
          yield* tx.checkpointInsert(checkpoint({ id: 1, step: 2 })),
          yield* tx.checkpointInsert(checkpoint({ id: 2 })),
          yield* tx.checkpointInsert(checkpoint({ id: 1, step: 3 })),
        ];
      });
      expect(seqs).toEqual([1, 2, 1, 3]);
    });
  });

  describe('checkpointLast', () => {
    it("reads a task's highest-seq checkpoint with every column, and undefined when it has none", async () => {
      const [last, none] = await db.scratch(function* (tx) {
        yield* tx.checkpointInsert(checkpoint({ step: 1 }));
        yield* tx.checkpointInsert(checkpoint({ generation: 2, kind: 'B', step: 7, state: '{"s":7}', usage: '{"tokens":9}', now: AT + 5, eventSeq: 8, requeueSafe: 1 }));
        yield* tx.checkpointInsert(checkpoint({ id: 2, step: 99 }));
        return [yield* tx.checkpointLast(1), yield* tx.checkpointLast(3)] as const;
      });
      expect(last).toEqual({ task_id: 1, seq: 2, generation: 2, kind: 'B', step: 7, state: '{"s":7}', usage: '{"tokens":9}', at: AT + 5, event_seq: 8, requeue_safe: 1 });
      expect(none).toBeUndefined();
    });
  });

  describe('checkpointLastFlags', () => {
    it('reads the kind and requeue_safe of the last checkpoint, and undefined when none', async () => {
      const answer = await db.scratch(function* (tx) {
        const none = yield* tx.checkpointLastFlags(1);
        yield* tx.checkpointInsert(checkpoint({ kind: 'B', requeueSafe: 1 }));
        const first = yield* tx.checkpointLastFlags(1);
        yield* tx.checkpointInsert(checkpoint({ kind: 'A', requeueSafe: 0 }));
        return { none, first, second: yield* tx.checkpointLastFlags(1) };
      });
      expect(answer).toEqual({ none: undefined, first: { kind: 'B', requeue_safe: 1 }, second: { kind: 'A', requeue_safe: 0 } });
    });
  });

  describe('checkpointLastUsage', () => {
    it('reads the usage of the last checkpoint as stored, and undefined when none', async () => {
      const answer = await db.scratch(function* (tx) {
        const none = yield* tx.checkpointLastUsage(1);
        yield* tx.checkpointInsert(checkpoint({ usage: '{"tokens":1}' }));
        yield* tx.checkpointInsert(checkpoint({ usage: '{"tokens":12,"usd":0.5}' }));
        return { none, last: yield* tx.checkpointLastUsage(1) };
      });
      expect(answer).toEqual({ none: undefined, last: '{"tokens":12,"usd":0.5}' });
    });
  });
});
