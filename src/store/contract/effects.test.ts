/**
 * The store contract, table `effects` (R3): effectInsert, effectByKey and effectList, each against every
 * store kind (__test-helpers__/harness.ts).
 */
import { describe, expect, it } from 'vitest';
import type { NewEffect } from '../store.ts';
import { AT, STORE_KINDS, contractStore } from './__test-helpers__/harness.ts';

function effect(overrides: Partial<NewEffect> = {}): NewEffect {
  return { requestKey: 'k1', id: 1, tenant: 'acme', action: 'send_email', generation: 1, result: '{"sent":true}', now: AT, ...overrides };
}

describe.each(STORE_KINDS)('effects on %s', (kind) => {
  const db = contractStore(kind);

  describe('effectInsert', () => {
    it('records an effect once per request key: true the first time, false (the first kept) after', async () => {
      const answer = await db.scratch(function* (tx) {
        const first = yield* tx.effectInsert(effect());
        const again = yield* tx.effectInsert(effect({ result: '{"sent":"twice"}', generation: 2 }));
        return { first, again, stored: yield* tx.effectByKey('k1') };
      });
      expect(answer).toEqual({ first: true, again: false, stored: { request_key: 'k1', task_id: 1, tenant: 'acme', action: 'send_email', generation: 1, result: '{"sent":true}', at: AT } });
    });
  });

  describe('effectByKey', () => {
    it('is undefined for a key never recorded', async () => {
      expect(await db.scratch((tx) => tx.effectByKey('nope'))).toBeUndefined();
    });
  });

  describe('effectList', () => {
    it('lists every effect without its result, by (at, request_key)', async () => {
      const [empty, rows] = await db.scratch(function* (tx) {
        const empty = yield* tx.effectList();
        yield* tx.effectInsert(effect({ requestKey: 'b', now: AT }));
        yield* tx.effectInsert(effect({ requestKey: 'a', now: AT + 1 }));
        yield* tx.effectInsert(effect({ requestKey: 'a0', now: AT }));
        return [empty, yield* tx.effectList()] as const;
      });
      expect(empty).toEqual([]);
      expect(rows).toEqual([
        { request_key: 'a0', task_id: 1, tenant: 'acme', action: 'send_email', generation: 1, at: AT },
        { request_key: 'b', task_id: 1, tenant: 'acme', action: 'send_email', generation: 1, at: AT },
        { request_key: 'a', task_id: 1, tenant: 'acme', action: 'send_email', generation: 1, at: AT + 1 },
      ]);
    });
  });
});
