import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/canonical-json.ts';
import { DEFAULT_CONFIG, resolveConfig } from '../../src/queue/config.ts';
import { compareCandidates, score } from '../../src/queue/scoring.ts';
import { EDGES, LIVE_STATES, OCCUPYING_STATES, STATES, TERMINAL_STATES, TRANSITIONS } from '../../src/queue/states.ts';
import { ADMISSION_REASONS, FATAL_ERROR_CLASSES, RETRYABLE_ERROR_CLASSES, type QueueConfig, type TaskState } from '../../src/queue/types.ts';
import { scopeKey } from '../../src/queue/budgets.ts';
import { requestKey } from '../../src/worker/fingerprint.ts';
import { listScenarios, catalogueScenario } from '../scenarios/registry.ts';
import { specOrder, specScore } from './spec-formulas.ts';
import {
  SPEC_ADMISSION_REASONS,
  SPEC_DEFAULTS,
  SPEC_INITIAL_STATES,
  SPEC_LIVE_STATES,
  SPEC_MOVES,
  SPEC_NEXT,
  SPEC_NON_RETRYABLE_ERROR_CLASSES,
  SPEC_OCCUPYING_STATES,
  SPEC_RETRYABLE_ERROR_CLASSES,
  SPEC_STATES,
  SPEC_TERMINAL_STATES,
  specAllowsMove,
  specBudgetScope,
  specCanonicalJson,
  specConfig,
  specIsTaskState,
  specIsTerminal,
  specRequestKey,
} from './spec-rules.ts';

/**
 * The judge's restatement of the SPEC (spec-rules.ts, spec-formulas.ts) against itself and against
 * src/. Not part of the judge, so it may import src/: its job is to make a drift between the two
 * visible. When src/ and this file disagree, decide from the SPEC which one is wrong; never make the
 * judge agree by copying src/.
 */

const sorted = (states: readonly string[]) => [...states].sort();

describe("the judge's SPEC, on its own", () => {
  it('names every task state once, in the SPEC order', () => {
    expect(SPEC_STATES).toEqual(['ready', 'running', 'uncertain', 'done', 'failed', 'superseded', 'cancelled', 'expired']);
    expect(SPEC_STATES.every(specIsTaskState)).toBe(true);
    expect(['interrupted', 'cancel_requested', 'Ready', '', undefined, 3].some(specIsTaskState)).toBe(false);
  });

  it('moves only between SPEC states, each move once and with its reason', () => {
    const seen = new Set<string>();
    for (const move of SPEC_MOVES) {
      expect(move.from === null || specIsTaskState(move.from), String(move.from)).toBe(true);
      expect(specIsTaskState(move.to), move.to).toBe(true);
      expect(move.from, 'no state moves to itself').not.toBe(move.to);
      expect(move.why).toMatch(/^[QRAI]\d+/);
      const key = `${move.from}->${move.to}`;
      expect(seen.has(key), key).toBe(false);
      seen.add(key);
    }
  });

  it('is live exactly where a task can still move (Q3), terminal exactly where it cannot (I11)', () => {
    expect(sorted(SPEC_STATES.filter((state) => SPEC_NEXT[state].length > 0))).toEqual(sorted(SPEC_LIVE_STATES));
    expect(sorted([...SPEC_LIVE_STATES, ...SPEC_TERMINAL_STATES])).toEqual(sorted(SPEC_STATES));
    expect(SPEC_TERMINAL_STATES).toEqual(['done', 'failed', 'superseded', 'cancelled', 'expired']);
    expect(SPEC_TERMINAL_STATES.every(specIsTerminal)).toBe(true);
    // Q6: only a live task holds a slot; Q10: running and uncertain do, ready does not.
    expect(SPEC_OCCUPYING_STATES.every((state) => (SPEC_LIVE_STATES as readonly string[]).includes(state))).toBe(true);
    expect(SPEC_INITIAL_STATES).toEqual(['ready', 'superseded']);
  });

  it('never leaves a terminal state and never starts a superseded task (Q2, I10)', () => {
    for (const state of SPEC_TERMINAL_STATES) for (const to of SPEC_STATES) expect(specAllowsMove(state, to), `${state}->${to}`).toBe(false);
    expect(specAllowsMove('ready', 'running')).toBe(true);
    expect(specAllowsMove('running', 'superseded')).toBe(false);
    // Q10: a lease that passed means uncertain, never straight back to ready.
    expect(specAllowsMove('running', 'uncertain')).toBe(true);
    expect(specAllowsMove('uncertain', 'running')).toBe(false);
  });

  it('keys an effect by runId:action:fingerprint, the same items in another order the same effect (R3)', () => {
    const payload = { order: 'o-1', items: [{ id: 'b', qty: 2 }, { id: 'a', qty: 1 }] };
    expect(specRequestKey(7, 'confirm_order', payload)).toMatch(/^7:confirm_order:[0-9a-f]{24}$/);
    expect(specRequestKey(7, 'confirm_order', { items: [...payload.items].reverse(), order: 'o-1' })).toBe(specRequestKey(7, 'confirm_order', payload));
    expect(specRequestKey(7, 'confirm_order', { ...payload, order: 'o-2' })).not.toBe(specRequestKey(7, 'confirm_order', payload));
    expect(specRequestKey(8, 'confirm_order', payload)).not.toBe(specRequestKey(7, 'confirm_order', payload));
    expect(specRequestKey(7, 'refund', payload)).not.toBe(specRequestKey(7, 'confirm_order', payload));
    expect(specCanonicalJson({ b: [1, { d: undefined, c: 'x' }], a: null })).toBe('{"a":null,"b":[1,{"c":"x"}]}');
    expect(() => specCanonicalJson({ a: Number.NaN })).toThrow(TypeError);
  });
});

describe('src/ agrees with the judge today', () => {
  it('on the states', () => {
    expect(STATES).toEqual(SPEC_STATES);
    expect(sorted(LIVE_STATES)).toEqual(sorted(SPEC_LIVE_STATES));
    expect(sorted(OCCUPYING_STATES)).toEqual(sorted(SPEC_OCCUPYING_STATES));
    expect(sorted(TERMINAL_STATES)).toEqual(sorted(SPEC_TERMINAL_STATES));
  });

  it('on every move: the transition table, and the states a task is created in', () => {
    for (const state of SPEC_STATES) expect(sorted(TRANSITIONS[state]), state).toEqual(sorted(SPEC_NEXT[state]));
    const created = EDGES.filter((edge) => edge.from === null).map((edge) => edge.to);
    expect(sorted([...new Set(created)])).toEqual(sorted(SPEC_INITIAL_STATES));
  });

  it('on the retryable and non-retryable error classes (Q16)', () => {
    expect(sorted(RETRYABLE_ERROR_CLASSES)).toEqual(sorted(SPEC_RETRYABLE_ERROR_CLASSES));
    expect(sorted(FATAL_ERROR_CLASSES)).toEqual(sorted(SPEC_NON_RETRYABLE_ERROR_CLASSES));
  });

  it('on the admission reasons (A2) and the scope of a budget (A1)', () => {
    expect(sorted(ADMISSION_REASONS)).toEqual(sorted(SPEC_ADMISSION_REASONS));
    const specs: QueueConfig['budgets'][string][] = [
      { kind: 'concurrency', limit: 1 },
      { kind: 'concurrency', limit: 1, scope: 'global' },
      { kind: 'concurrency', limit: 1, scope: 'tenant' },
      { kind: 'rate', capacity: 1, refill: 1, periodMs: 1, scope: 'tenant' },
      { kind: 'rate', capacity: 1, refill: 1, periodMs: 1 },
      { kind: 'total', limit: 1, per: 'run' },
      { kind: 'total', limit: 1, per: 'session' },
    ];
    const task = { id: 7, tenant: 'acme', topic: 'chat' };
    for (const spec of specs) expect(specBudgetScope(spec, task)).toBe(scopeKey(spec, task));
    expect(specs.map((spec) => specBudgetScope(spec, task))).toEqual(['', '', 'tenant:acme', 'tenant:acme', '', 'run:7', 'session:acme\u001fchat']);
  });

  it('on the defaults, and on how a configuration is applied over them', () => {
    const fields = Object.keys(SPEC_DEFAULTS) as (keyof typeof SPEC_DEFAULTS)[];
    const picked = (config: QueueConfig) => Object.fromEntries(fields.map((field) => [field, config[field]]));
    expect(picked(DEFAULT_CONFIG)).toEqual(SPEC_DEFAULTS);
    const overrides: Partial<QueueConfig>[] = [
      {},
      { globalLimit: 3, perTenantLimit: 1, tenantLimits: { acme: 2, paused: 0 } },
      { tierHolds: { long: 90 } as QueueConfig['tierHolds'] },
      { maxAttempts: 5, maxDeliveries: 4, reconciliation: 'auto', graceMs: 1_000 },
      { agingPeriodMs: 1_000, agingCap: 5, baseDelayMs: 10, maxDelayMs: 100, maxRetryAgeMs: 5_000, tokensPerCredit: 10 },
      { capacity: 3, leaseMs: 9_000, heartbeatMs: 3_000, perTenantLimit: undefined },
      ...listScenarios().map(({ name }) => catalogueScenario(name).queue),
    ];
    for (const override of overrides) expect(specConfig(override), JSON.stringify(override)).toEqual(picked(resolveConfig(override)));
  });

  it('on the score and the claim order (Q4)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 30 }), fc.nat(10_000_000), fc.nat(10_000_000), fc.integer({ min: 1, max: 120_000 }), fc.nat(60), (base, enqueuedAt, now, agingPeriodMs, agingCap) => {
        const config = { agingPeriodMs, agingCap };
        expect(specScore(base, enqueuedAt, now, config)).toBe(score(base, enqueuedAt, now, config));
      }),
    );
    const candidate = fc.record({ score: fc.nat(4), enqueuedAt: fc.nat(4), id: fc.nat(4) });
    fc.assert(
      fc.property(candidate, candidate, (a, b) => {
        expect(Math.sign(specOrder(a, b))).toBe(Math.sign(compareCandidates(a, b)));
      }),
    );
  });

  const payloads: unknown[] = [
    { order: 'o-1', items: [{ id: 'item-a', qty: 1 }] },
    { ref: 'acme/t1/s0', n: 1 },
    { items: [{ id: 10, qty: 1 }, { id: 2, qty: 3 }, { id: 'x' }] },
    { items: [{ id: 'b' }, { sku: 'no id' }, { id: 'a' }] },
    { nested: { items: [{ id: 'z', tags: [{ id: 2 }, { id: 1 }] }, { id: 'y' }] } },
    { items: [{ id: 'same', n: 2 }, { id: 'same', n: 1 }] },
    { 'é': 1, e: 2, E: 3, '': [], skipped: undefined },
    [],
    null,
    'text',
    -0,
  ];

  it.each(payloads)('on the request key of %j (R3)', (payload) => {
    expect(specRequestKey(42, 'confirm_order', payload)).toBe(requestKey(42, 'confirm_order', payload));
  });

  it('on the request key and the canonical form of any JSON payload (R3, Q1)', () => {
    const item = fc.record({ id: fc.oneof(fc.string({ maxLength: 4 }), fc.integer({ min: -20, max: 20 })), qty: fc.nat(9) }, { requiredKeys: ['id'] });
    const payload = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.record({ items: fc.array(item, { maxLength: 6 }), note: fc.jsonValue({ maxDepth: 2 }) }));
    fc.assert(
      fc.property(fc.nat(1_000), fc.constantFrom('confirm_order', 'refund', 'send_card'), payload, (runId, action, value) => {
        expect(specRequestKey(runId, action, value)).toBe(requestKey(runId, action, value));
        expect(specCanonicalJson(value)).toBe(canonicalJson(value));
      }),
      { numRuns: 300 },
    );
  });

  it('on the state type: TaskState has exactly the SPEC states (the record below type-checks only then)', () => {
    const all: Record<TaskState, true> = { ready: true, running: true, uncertain: true, done: true, failed: true, superseded: true, cancelled: true, expired: true };
    expect(sorted(Object.keys(all))).toEqual(sorted(SPEC_STATES));
  });
});
