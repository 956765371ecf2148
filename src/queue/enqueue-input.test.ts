import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, sha256Hex } from '../canonical-json.ts';
import { resolveConfig } from './config.ts';
import { hashedText, validateEnqueue } from './enqueue-input.ts';

/** The object the input hash has always been taken over (Q1), serialised whole by canonicalJson. */
function hashedObject(payload: unknown, store: string | null, priority: number, tier: string, deadline: number | null, needs: Record<string, number> | null, critical: boolean): string {
  const hashed: Record<string, unknown> = { store, priority, payload, tier, deadline };
  if (needs !== null) hashed.needs = needs;
  if (critical) hashed.critical = true;
  return canonicalJson(hashed);
}

describe('the input hash (Q1)', () => {
  it('is taken over the same text as canonicalJson of the whole hashed object', () => {
    fc.assert(
      fc.property(
        fc.jsonValue(),
        fc.option(fc.string(), { nil: null }),
        fc.integer({ min: 0, max: 30 }),
        fc.constantFrom('standard', 'long'),
        fc.option(fc.maxSafeInteger(), { nil: null }),
        fc.option(fc.dictionary(fc.string(), fc.nat()), { nil: null }),
        fc.boolean(),
        (payload, store, priority, tier, deadline, needs, critical) => {
          const text = hashedText(canonicalJson(payload), store, priority, tier, deadline, needs === null ? null : canonicalJson(needs), critical);
          expect(text).toBe(hashedObject(payload, store, priority, tier, deadline, needs, critical));
        },
      ),
    );
  });

  // Databases in the field hold these hashes: a resend of a task they store must still be a duplicate.
  // Both were computed with canonicalJson of the whole object, as every release before this one hashed.
  it('is unchanged for a stored task', () => {
    const config = resolveConfig({ budgets: { tokens: { kind: 'concurrency', limit: 5000 }, browser: { kind: 'concurrency', limit: 2 } } });
    const full = validateEnqueue(
      {
        tenant: 'acme',
        topic: 'refund-7',
        version: 1,
        priority: 7,
        input: { b: [1, 'two', { z: null, a: true }], a: 'é\u2028', n: -0.5 },
        store: 'orders',
        tier: 'long',
        deadline: 1_700_000_000_000,
        needs: { tokens: 1200, browser: 1 },
        critical: true,
      },
      config,
    );
    expect(full.ok && full.value.inputHash).toBe('505384bb7d97bcde5ceef86e29cdb5800b57baf6034ee3450cd512d6bef9b01c');
    const bare = validateEnqueue({ tenant: 'acme', topic: 'note', version: 1, priority: 0, input: null }, config);
    expect(bare.ok && bare.value.inputHash).toBe('466d05bdd179b747aabce8a2069a85ff291efccbdf6e0a602262010141c0c929');
    expect(sha256Hex(hashedObject(null, null, 0, 'standard', null, null, false))).toBe('466d05bdd179b747aabce8a2069a85ff291efccbdf6e0a602262010141c0c929');
  });

  it('accepts an input as deep as canonicalJson allows (the hash no longer nests it one level deeper)', () => {
    let input: unknown = 1;
    for (let depth = 0; depth < 64; depth++) input = [input];
    const checked = validateEnqueue({ tenant: 'acme', topic: 'deep', version: 1, priority: 0, input }, resolveConfig({}));
    expect(checked.ok).toBe(true);
  });
});
