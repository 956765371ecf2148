import { afterEach, describe, expect, it } from 'vitest';
import { openWorkQueue } from '../work-queue.ts';
import { defaultAdmission, type AdmissionPolicy } from './admission.ts';
import { resolveConfig } from './config.ts';
import { ConfigError } from './errors.ts';
import type { BudgetSpec, QueueConfig, WorkQueue } from './types.ts';
import { checkAndCloseQueues, claimOk, enqueueOk, fingerprint, openTestQueue, request, testStoreName } from './__test-helpers__/test-kit.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

afterEach(checkAndCloseQueues);

const MINUTE = 60_000;
const USAGE = (tokens: number, modelCalls = 1) => ({ inputTokens: tokens, outputTokens: 0, modelCalls });

/** Seed 004's budgets, as SPEC's Admission API writes them. */
const SEED_004: Record<string, BudgetSpec> = {
  browser_sessions: { kind: 'concurrency', limit: 2, scope: 'global' },
  model_tokens_per_minute: { kind: 'rate', capacity: 120_000, refill: 120_000, periodMs: 60_000, scope: 'global' },
  outbound_messages_per_min: { kind: 'rate', capacity: 30, refill: 30, periodMs: 60_000, scope: 'tenant' },
  run_tokens: { kind: 'total', limit: 50_000, per: 'run' },
};

const WIDE = { capacity: 100, globalLimit: 10, perTenantLimit: 10 };

function queueWith(budgets: Record<string, BudgetSpec>, more: Partial<QueueConfig> = {}) {
  return openTestQueue({ config: { ...WIDE, budgets, ...more } });
}

async function levelOf(queue: WorkQueue, budget: string, scope = ''): Promise<number | undefined> {
  return (await queue.budgetLevels()).find((row) => row.budget === budget && row.scope === scope)?.level;
}

describe('A1 budgets: configuration', () => {
  it("accepts seed 004's budgets as the SPEC writes them", () => {
    expect(resolveConfig({ budgets: SEED_004 }).budgets).toEqual(SEED_004);
  });

  it.each([
    [{ x: { kind: 'semaphore', limit: 1 } }, 'budgets.x.kind'],
    [{ x: { kind: 'concurrency', limit: 0 } }, 'budgets.x.limit'],
    [{ x: { kind: 'concurrency', limit: 1.5 } }, 'budgets.x.limit'],
    [{ x: { kind: 'rate', capacity: 10, refill: -1, periodMs: 1000 } }, 'budgets.x.refill'],
    [{ x: { kind: 'rate', capacity: 10, refill: 1, periodMs: 0 } }, 'budgets.x.periodMs'],
    [{ x: { kind: 'rate', capacity: 2 ** 40, refill: 1, periodMs: 2 ** 20 } }, 'budgets.x.capacity'],
    [{ x: { kind: 'total', limit: 5, per: 'tenant' } }, 'budgets.x.per'],
    [{ x: { kind: 'concurrency', limit: 1, scope: 'session' } }, 'budgets.x.scope'],
    [{ x: { kind: 'concurrency', limit: 1, refill: 3 } }, 'budgets.x.refill'],
    [{ '1bad': { kind: 'concurrency', limit: 1 } }, 'budgets.1bad'],
    // Issue 31: names that are Object.prototype's own are refused or judged as plain strings.
    [JSON.parse('{ "__proto__": { "kind": "concurrency", "limit": 1 } }'), 'budgets.__proto__'],
    [{ x: { kind: 'constructor', limit: 1 } }, 'budgets.x.kind'],
    [{ x: { kind: 'toString', limit: 1 } }, 'budgets.x.kind'],
  ])('refuses %j naming %s', (budgets, field) => {
    let thrown: unknown;
    try {
      resolveConfig({ budgets: budgets as never });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).field).toBe(field);
  });
});

describe('A1 needs at enqueue', () => {
  it('refuses a need no budget could ever grant (exceeds_budget), recording the rejection and nothing else', async () => {
    const { queue } = queueWith(SEED_004);
    const before = await fingerprint(queue);
    const result = await queue.enqueue(request({ needs: { browser_sessions: 3 } }));
    expect(result).toMatchObject({ ok: false, error: 'exceeds_budget', budget: 'browser_sessions' });
    const after = (await fingerprint(queue)) as { snapshot: { tasks: unknown[] }; rejections: { reason: string }[] };
    expect(after.snapshot.tasks).toEqual((before as typeof after).snapshot.tasks);
    expect(after.rejections.map((row) => row.reason)).toEqual(['exceeds_budget']);
    expect((await queue.admissionDecisions()).map((row) => [row.action, row.reason, row.budget])).toEqual([['REJECT', 'exceeds_budget', 'browser_sessions']]);
  });

  it('refuses needs that name no configured budget, or are not whole units, as invalid_input naming the field', async () => {
    const { queue } = queueWith(SEED_004);
    expect(await queue.enqueue(request({ needs: { gpu: 1 } }))).toMatchObject({ ok: false, error: 'invalid_input', field: 'needs.gpu' });
    expect(await queue.enqueue(request({ needs: { browser_sessions: 0.5 } }))).toMatchObject({ ok: false, error: 'invalid_input', field: 'needs.browser_sessions' });
    expect(await queue.enqueue(request({ needs: [1] as never }))).toMatchObject({ ok: false, error: 'invalid_input', field: 'needs' });
    expect(await queue.enqueue(request({ critical: 'yes' as never }))).toMatchObject({ ok: false, error: 'invalid_input', field: 'critical' });
    expect((await queue.snapshot()).tasks).toEqual([]);
  });

  it('makes needs and critical part of the idempotency hash only when given (Q1)', async () => {
    const { queue } = queueWith(SEED_004);
    const plain = request({ topic: 'same' });
    const first = await queue.enqueue(plain);
    expect(await queue.enqueue(plain)).toMatchObject({ ok: true, status: 'duplicate' });
    expect(await queue.enqueue({ ...plain, needs: { browser_sessions: 1 } })).toMatchObject({ ok: false, error: 'idempotency_conflict', taskId: first.ok ? first.taskId : -1 });
  });
});

describe('A1 concurrency budgets (semaphores)', () => {
  it('holds at most limit units across running and uncertain tasks; a completion gives them back once', async () => {
    const { queue, clock } = queueWith(SEED_004);
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await enqueueOk(queue, { tenant: `t${i}`, needs: { browser_sessions: 1 } }));
    const a = await claimOk(queue, 'w1');
    const b = await claimOk(queue, 'w2');
    expect(a.needs).toEqual({ browser_sessions: 1 });
    const third = await queue.claim('w3');
    expect(third).toMatchObject({ ok: false, reason: 'quota', admission: { action: 'DEFER', reason: 'budget', budget: 'browser_sessions', taskId: ids[2] } });
    expect(await levelOf(queue, 'browser_sessions')).toBe(2);
    // Q10 with A1: the lease of a passes; uncertain keeps its units.
    clock.advance(31_000);
    await queue.heartbeat(b.id, 'w2', b.generation);
    expect(await queue.expireLeases()).toBeGreaterThanOrEqual(1);
    expect((await queue.get(a.id))?.state).toBe('uncertain');
    expect(await queue.claim('w3')).toMatchObject({ ok: false, admission: { reason: 'budget' } });
    expect(await queue.confirmStopped(a.id, a.generation, 'supervisor')).toMatchObject({ ok: true, next: 'ready' });
    expect(await levelOf(queue, 'browser_sessions')).toBe(1);
    const c = await claimOk(queue, 'w3');
    expect([ids[0], ids[2]]).toContain(c.id);
    const rows = await queue.reservations();
    const released = rows.filter((row) => row.released !== null);
    expect(released).toHaveLength(1);
    expect(released[0]).toMatchObject({ taskId: a.id, reserved: 1, consumed: 0, released: 1 });
  });

  it('gives back the units of budgets named constructor and toString as numbers (issue 31)', async () => {
    const { queue } = queueWith({ constructor: { kind: 'concurrency', limit: 1 }, toString: { kind: 'concurrency', limit: 2 } } as Record<string, BudgetSpec>);
    const id = await enqueueOk(queue, { needs: { constructor: 1, toString: 2 } });
    const task = await claimOk(queue, 'w1');
    expect(await levelOf(queue, 'constructor')).toBe(1);
    await queue.complete(id, 'w1', task.generation, 'ok');
    const ended = (await queue.events(id)).find((event) => event.data.released !== undefined);
    expect(ended?.data.released).toEqual({ constructor: 1, toString: 2 });
    expect(await levelOf(queue, 'constructor')).toBe(0);
    expect(await levelOf(queue, 'toString')).toBe(0);
  });

  it('counts a per-tenant budget per tenant, never against another tenant', async () => {
    const { queue } = queueWith({ seats: { kind: 'concurrency', limit: 1, scope: 'tenant' } });
    await enqueueOk(queue, { tenant: 'a', needs: { seats: 1 } });
    await enqueueOk(queue, { tenant: 'a', needs: { seats: 1 } });
    await enqueueOk(queue, { tenant: 'b', needs: { seats: 1 } });
    const first = await claimOk(queue, 'w1');
    const second = await claimOk(queue, 'w2');
    expect(new Set([first.tenant, second.tenant])).toEqual(new Set(['a', 'b']));
    expect(await queue.claim('w3')).toMatchObject({ ok: false, admission: { reason: 'budget', budget: 'seats' } });
    expect(await levelOf(queue, 'seats', 'tenant:a')).toBe(1);
    expect(await levelOf(queue, 'seats', 'tenant:b')).toBe(1);
  });
});

describe('A1 rate budgets (token buckets in integers)', () => {
  const BUCKET = { tokens: { kind: 'rate', capacity: 100, refill: 100, periodMs: MINUTE, meter: 'tokens' } } as const;

  it('defers a need the bucket cannot cover with the exact retryAt, and grants it at that instant, not a millisecond before', async () => {
    const { queue, clock } = queueWith(BUCKET);
    await enqueueOk(queue, { tenant: 'a', needs: { tokens: 60 } });
    const second = await enqueueOk(queue, { tenant: 'b', needs: { tokens: 60 } });
    await claimOk(queue, 'w1');
    const start = clock.t;
    // 40 left; 20 more take 20 x 60000 / 100 = 12000 ms.
    const deferred = await queue.claim('w2');
    expect(deferred).toMatchObject({ ok: false, reason: 'quota', admission: { action: 'DEFER', reason: 'rate_limited', taskId: second, retryAt: start + 12_000 } });
    clock.advance(11_999);
    expect(await queue.claim('w2')).toMatchObject({ ok: false, admission: { reason: 'rate_limited', retryAt: start + 12_000 } });
    clock.advance(1);
    expect((await claimOk(queue, 'w2')).id).toBe(second);
    expect(await levelOf(queue, 'tokens')).toBe(0);
  });

  it('records a DEFER once per change of task and reason: an idle poll that meets it again writes nothing', async () => {
    const { queue, clock } = queueWith(BUCKET);
    await enqueueOk(queue, { tenant: 'a', needs: { tokens: 100 } });
    const waiting = await enqueueOk(queue, { tenant: 'b', needs: { tokens: 100 } });
    await claimOk(queue, 'w1');
    await queue.claim('w2');
    const written = async () => ({ tasks: (await queue.snapshot()).tasks, events: await queue.allEvents(), levels: await queue.reservations() });
    const once = await written();
    const decisions = await queue.admissionDecisions();
    for (let i = 0; i < 5; i++) {
      clock.advance(1_000);
      expect(await queue.claim('w2')).toMatchObject({ ok: false, admission: { reason: 'rate_limited' } });
    }
    expect(await written()).toEqual(once);
    expect(await queue.admissionDecisions()).toEqual(decisions);
    expect((await queue.events(waiting)).filter((event) => event.type === 'deferred')).toHaveLength(1);
  });

  it('grants nothing for a clock that went backwards, and refills only past the latest instant it was written at', async () => {
    const { queue, clock } = queueWith(BUCKET);
    await enqueueOk(queue, { tenant: 'a', needs: { tokens: 100 } });
    await claimOk(queue, 'w1');
    clock.advance(30_000); // 50 refilled, not yet written
    expect(await levelOf(queue, 'tokens')).toBe(50);
    clock.t = clock.t - 60_000; // a jump back: before the grant
    expect(await levelOf(queue, 'tokens')).toBe(0);
    const next = await enqueueOk(queue, { tenant: 'b', needs: { tokens: 1 } });
    expect(await queue.claim('w2')).toMatchObject({ ok: false, admission: { reason: 'rate_limited', taskId: next } });
    expect(await queue.claim('w2')).toMatchObject({ ok: false, admission: { retryAt: clock.t + 30_600 } });
    clock.advance(30_000 + 600); // back where the grant was, plus 600 ms: one unit
    expect((await claimOk(queue, 'w2')).id).toBe(next);
    expect(await levelOf(queue, 'tokens')).toBe(0);
  });

  // A restart of a database file: run on the file store only, and reported skipped on the others.
  it.runIf(testStoreName() === 'sqlite-file')('keeps its level across a restart: a reopened database refills by the time that really passed, no more', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'leasehold-bucket-'));
    try {
      const file = join(directory, 'queue.sqlite');
      const first = openTestQueue({ db: file, config: { ...WIDE, budgets: BUCKET } });
      await enqueueOk(first.queue, { tenant: 'a', needs: { tokens: 90 } });
      await claimOk(first.queue, 'w1');
      await first.queue.close();
      first.clock.advance(6_000); // 10 units of refill
      const second = openTestQueue({ db: file, clock: first.clock, config: { ...WIDE, budgets: BUCKET } });
      expect(await levelOf(second.queue, 'tokens')).toBe(20);
      await second.queue.close();
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('returns what a run did not consume (from its checkpoints) at its end, and charges what it used beyond the reservation', async () => {
    const { queue, clock } = queueWith(BUCKET);
    const id = await enqueueOk(queue, { tenant: 'a', needs: { tokens: 60 } });
    const task = await claimOk(queue, 'w1');
    await queue.checkpoint(id, 'w1', task.generation, { kind: 'A', step: 0, state: {}, usage: USAGE(25) });
    expect(await levelOf(queue, 'tokens')).toBe(40);
    await queue.complete(id, 'w1', task.generation, { answer: 'ok' });
    expect(await levelOf(queue, 'tokens')).toBe(75);
    const [row] = await queue.reservations();
    expect(row).toMatchObject({ reserved: 60, consumed: 25, released: 35 });
    const end = (await queue.events(id)).at(-1)!;
    expect(end.data).toMatchObject({ released: { tokens: 35 }, consumed: { tokens: 25 } });
    // A model call that used more than reserved is charged: the reservation grows to what was used.
    const other = await enqueueOk(queue, { tenant: 'b', needs: { tokens: 10 } });
    const held = await claimOk(queue, 'w2');
    clock.advance(0);
    await queue.checkpoint(other, 'w2', held.generation, { kind: 'A', step: 0, state: {}, usage: USAGE(30) });
    expect(await levelOf(queue, 'tokens')).toBe(45);
    expect((await queue.reservations()).find((r) => r.taskId === other)).toMatchObject({ reserved: 30, consumed: 30 });
  });

  it('does not let smaller needs behind a waiting head take the bucket it waits for', async () => {
    const { queue } = queueWith(BUCKET);
    await enqueueOk(queue, { tenant: 'z', needs: { tokens: 50 } });
    await claimOk(queue, 'w0'); // 50 left
    const head = await enqueueOk(queue, { tenant: 'a', priority: 20, needs: { tokens: 80 } });
    await enqueueOk(queue, { tenant: 'a', priority: 10, needs: { tokens: 10 } });
    await enqueueOk(queue, { tenant: 'b', priority: 5, needs: { tokens: 10 } });
    const free = await enqueueOk(queue, { tenant: 'c', priority: 0 });
    const claimed = await queue.claim('w1');
    // The head waits; both small needs would fit but wait behind it; work that needs no tokens runs.
    expect(claimed).toMatchObject({ ok: true, task: { id: free } });
    expect(await queue.claim('w2')).toMatchObject({ ok: false, admission: { reason: 'rate_limited', taskId: head } });
    expect(await levelOf(queue, 'tokens')).toBe(50);
  });
});

describe('A1 totals and the fenced reserve', () => {
  it('reserves more for a further model call, fenced; a zombie takes nothing', async () => {
    const { queue, clock } = queueWith({ tokens: { kind: 'rate', capacity: 100, refill: 0, periodMs: MINUTE, meter: 'tokens' } });
    const id = await enqueueOk(queue, { needs: { tokens: 40 } });
    const task = await claimOk(queue, 'w1');
    expect(await queue.reserve(id, 'w1', task.generation)).toEqual({ ok: true, reserved: { tokens: 40 } });
    expect(await levelOf(queue, 'tokens')).toBe(20);
    expect(await queue.reserve(id, 'w1', task.generation)).toMatchObject({ ok: false, error: 'rate_limited', budget: 'tokens' });
    expect(await queue.reserve(id, 'other', task.generation)).toMatchObject({ ok: false, error: 'stale_lease' });
    expect(await queue.reserve(id, 'w1', task.generation, { tokens: 20 })).toEqual({ ok: true, reserved: { tokens: 20 } });
    expect(await queue.reserve(id, 'w1', task.generation, { nope: 1 })).toMatchObject({ ok: false, error: 'invalid_input', field: 'needs.nope' });
    clock.advance(31_000);
    expect(await queue.reserve(id, 'w1', task.generation, { tokens: 1 })).toMatchObject({ ok: false, error: 'stale_lease' });
    expect(await levelOf(queue, 'tokens')).toBe(0);
  });

  it('ends a run whose per-run total cannot grant its next call, failed budget_exhausted, with every unit accounted for', async () => {
    const { queue } = queueWith({ run_tokens: { kind: 'total', limit: 100, per: 'run', meter: 'tokens' } });
    const id = await enqueueOk(queue, { needs: { run_tokens: 60 } });
    const task = await claimOk(queue, 'w1');
    await queue.checkpoint(id, 'w1', task.generation, { kind: 'A', step: 0, state: {}, usage: USAGE(55) });
    expect(await queue.reserve(id, 'w1', task.generation)).toMatchObject({ ok: false, error: 'budget', budget: 'run_tokens' });
    const view = await queue.get(id);
    expect(view?.state).toBe('failed');
    const failed = (await queue.events(id)).at(-1)!;
    expect(failed.data).toMatchObject({ reason: 'budget_exhausted', budget: 'run_tokens', released: { run_tokens: 5 }, consumed: { run_tokens: 55 } });
    expect(await levelOf(queue, 'run_tokens', `run:${id}`)).toBe(55);
  });

  it('lets a retry reserve from the same budgets, and ends a run whose total a retry cannot get', async () => {
    const { queue, clock } = queueWith({ run_calls: { kind: 'total', limit: 3, per: 'run' }, seats: { kind: 'concurrency', limit: 1 } }, { baseDelayMs: 1_000, maxAttempts: 5, maxDeliveries: 5 });
    const id = await enqueueOk(queue, { needs: { run_calls: 2, seats: 1 } });
    const first = await claimOk(queue, 'w1');
    expect(await queue.fail(id, 'w1', first.generation, { errorClass: 'rate_limited', message: 'slow down' })).toMatchObject({ ok: true, next: 'retry' });
    // The retry gave the seat back; run_calls, unmetered, keeps what was reserved (2 of 3).
    expect(await levelOf(queue, 'seats')).toBe(0);
    expect(await levelOf(queue, 'run_calls', `run:${id}`)).toBe(2);
    clock.advance(10_000);
    expect(await queue.claim('w1')).toEqual({ ok: false, reason: 'empty' });
    expect((await queue.get(id))?.state).toBe('failed');
    expect((await queue.events(id)).at(-1)?.data).toMatchObject({ reason: 'budget_exhausted', budget: 'run_calls' });
  });

  it('counts a session total across the runs of one (tenant, topic)', async () => {
    const { queue } = queueWith({ convo: { kind: 'total', limit: 3, per: 'session' } });
    const one = await enqueueOk(queue, { tenant: 'a', topic: 'chat', version: 1, needs: { convo: 2 } });
    const run = await claimOk(queue, 'w1');
    await queue.complete(one, 'w1', run.generation, 'ok');
    const two = await enqueueOk(queue, { tenant: 'a', topic: 'chat', version: 2, needs: { convo: 2 } });
    const elsewhere = await enqueueOk(queue, { tenant: 'a', topic: 'other', version: 1, needs: { convo: 2 } });
    expect((await claimOk(queue, 'w1')).id).toBe(elsewhere);
    expect(await queue.claim('w1')).toMatchObject({ ok: false });
    expect((await queue.get(two))?.state).toBe('failed');
  });
});

describe('A2 admission', () => {
  it('refuses ordinary work at a full in-flight budget and defers critical work into its headroom, which then runs', async () => {
    const { queue } = openTestQueue({ config: { capacity: 2, globalLimit: 2, perTenantLimit: 2, criticalHeadroom: 1 } });
    const a = await enqueueOk(queue, { tenant: 'a' });
    await enqueueOk(queue, { tenant: 'a' });
    expect(await queue.enqueue(request({ tenant: 'b' }))).toMatchObject({ ok: false, error: 'queue_full' });
    const critical = await queue.enqueue(request({ tenant: 'b', critical: true }));
    expect(critical).toMatchObject({ ok: true, status: 'enqueued' });
    expect(await queue.enqueue(request({ tenant: 'b', critical: true }))).toMatchObject({ ok: false, error: 'queue_full' });
    const decisions = (await queue.admissionDecisions()).map((row) => [row.action, row.reason]);
    expect(decisions).toEqual([
      ['REJECT', 'queue_full'],
      ['DEFER', 'capacity'],
      ['REJECT', 'queue_full'],
    ]);
    const id = critical.ok ? critical.taskId : 0;
    expect((await queue.events(id))[0]?.data).toMatchObject({ critical: true, admission: { action: 'DEFER', reason: 'capacity' } });
    const first = await claimOk(queue, 'w1');
    const second = await claimOk(queue, 'w2');
    expect(first.id).toBe(a);
    await queue.complete(first.id, 'w1', first.generation, 'ok');
    await queue.complete(second.id, 'w2', second.generation, 'ok');
    const ran = await claimOk(queue, 'w1');
    expect(ran).toMatchObject({ id, critical: true });
  });

  it('pauses a tenant: persisted, one record per change, no new lease while running leases go on, and back on resume', async () => {
    const { queue } = openTestQueue({ config: WIDE });
    const running = await enqueueOk(queue, { tenant: 'a' });
    const held = await claimOk(queue, 'w1');
    const waiting = await enqueueOk(queue, { tenant: 'a' });
    expect(await queue.pauseTenant('a', 'billing review')).toEqual({ ok: true, changed: true });
    expect(await queue.pauseTenant('a', 'again')).toEqual({ ok: true, changed: false });
    expect(await queue.pausedTenants()).toEqual([{ tenant: 'a', reason: 'billing review', at: expect.any(Number) }]);
    const other = await enqueueOk(queue, { tenant: 'b' });
    expect((await claimOk(queue, 'w2')).id).toBe(other);
    expect(await queue.claim('w3')).toMatchObject({ ok: false, reason: 'quota', admission: { action: 'DEFER', reason: 'tenant_paused', taskId: waiting } });
    expect(await queue.heartbeat(running, 'w1', held.generation)).toMatchObject({ ok: true });
    expect(await queue.complete(running, 'w1', held.generation, 'ok')).toMatchObject({ ok: true });
    const late = await queue.enqueue(request({ tenant: 'a' }));
    expect((await queue.events(late.ok ? late.taskId : 0))[0]?.data).toMatchObject({ admission: { action: 'DEFER', reason: 'tenant_paused' } });
    expect(await queue.resumeTenant('a')).toEqual({ ok: true, changed: true });
    expect(await queue.resumeTenant('a')).toEqual({ ok: true, changed: false });
    expect((await claimOk(queue, 'w3')).id).toBe(waiting);
    const actions = (await queue.admissionDecisions()).map((row) => [row.action, row.reason, row.tenant]);
    expect(actions).toEqual([
      ['PAUSE', 'billing review', 'a'],
      ['DEFER', 'tenant_paused', 'a'],
      ['DEFER', 'tenant_paused', 'a'],
      ['RESUME', 'resumed', 'a'],
    ]);
  });

  // A restart of a database file: run on the file store only, and reported skipped on the others.
  it.runIf(testStoreName() === 'sqlite-file')('keeps a pause across a restart', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'leasehold-pause-'));
    try {
      const file = join(directory, 'queue.sqlite');
      const first = openTestQueue({ db: file, config: WIDE });
      await enqueueOk(first.queue, { tenant: 'a' });
      await first.queue.pauseTenant('a', 'incident');
      await first.queue.close();
      const second = openTestQueue({ db: file, clock: first.clock, config: WIDE });
      expect(await second.queue.claim('w1')).toMatchObject({ ok: false, admission: { reason: 'tenant_paused' } });
      await second.queue.resumeTenant('a');
      expect(await second.queue.claim('w1')).toMatchObject({ ok: true });
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('refuses a pause without a tenant or a reason, changing nothing', async () => {
    const { queue } = openTestQueue();
    expect(await queue.pauseTenant('', 'x')).toMatchObject({ ok: false, error: 'invalid_input', field: 'tenant' });
    expect(await queue.pauseTenant('a', '')).toMatchObject({ ok: false, error: 'invalid_input', field: 'reason' });
    expect(await queue.resumeTenant(7 as never)).toMatchObject({ ok: false, error: 'invalid_input', field: 'tenant' });
    expect(await queue.pausedTenants()).toEqual([]);
    expect(await queue.admissionDecisions()).toEqual([]);
  });

  it('runs a replaced policy, and refuses one that answers without a known reason', async () => {
    const holdB: AdmissionPolicy = (req) => (req.stage === 'claim' && req.task.tenant === 'b' ? { action: 'DEFER', reason: 'budget' } : defaultAdmission(req));
    const queue = openWorkQueue({ db: ':memory:', clock: { now: () => 1_000 }, config: WIDE, admission: holdB });
    try {
      await queue.enqueue(request({ tenant: 'b' }));
      expect(await queue.claim('w1')).toMatchObject({ ok: false, reason: 'quota', admission: { action: 'DEFER', reason: 'budget' } });
      await queue.enqueue(request({ tenant: 'a' }));
      expect(await queue.claim('w1')).toMatchObject({ ok: true, task: { tenant: 'a' } });
    } finally {
      await queue.close();
    }
    const broken = openWorkQueue({ db: ':memory:', clock: { now: () => 1_000 }, admission: () => ({ action: 'REJECT' }) as never });
    try {
      await expect(broken.enqueue(request())).rejects.toThrow(/without a known reason/);
      expect((await broken.snapshot()).tasks).toEqual([]);
    } finally {
      await broken.close();
    }
    expect(() => openWorkQueue({ db: ':memory:', clock: { now: () => 1 }, admission: 'strict' as never })).toThrow(ConfigError);
  });

  it('writes nothing of budgets for a queue without them: the claim event carries no reservation', async () => {
    const { queue } = openTestQueue({ config: WIDE });
    const id = await enqueueOk(queue);
    const task = await claimOk(queue, 'w1');
    expect(task.needs).toBeUndefined();
    await queue.complete(id, 'w1', task.generation, 'ok');
    for (const event of await queue.events(id)) {
      expect(event.data).not.toHaveProperty('reserved');
      expect(event.data).not.toHaveProperty('released');
    }
    expect(await queue.budgetLevels()).toEqual([]);
    expect(await queue.reservations()).toEqual([]);
  });
});

describe('A1 a bucket in debt', () => {
  it('refills from below zero to full when left idle long enough (an overdraft is paid back, not kept)', async () => {
    const { queue, clock } = openTestQueue({ config: { ...WIDE, budgets: { tokens: { kind: 'rate', capacity: 10, refill: 10, periodMs: 1_000, meter: 'tokens' } } } });
    const id = await enqueueOk(queue, { needs: { tokens: 10 } });
    const task = await claimOk(queue, 'w1');
    await queue.checkpoint(id, 'w1', task.generation, { kind: 'A', step: 0, state: {}, usage: USAGE(15) });
    expect(await levelOf(queue, 'tokens')).toBe(-5);
    await queue.complete(id, 'w1', task.generation, 'ok');
    clock.advance(1_000_000);
    expect(await levelOf(queue, 'tokens')).toBe(10);
    const next = await enqueueOk(queue, { needs: { tokens: 10 } });
    expect((await claimOk(queue, 'w1')).id).toBe(next);
  });
});

describe('A6 session serialisation', () => {
  const SESSIONS = { capacity: 100, globalLimit: 10, perTenantLimit: 10 };

  it('serial (the default): a newer version waits session_busy while the older runs or is uncertain; other sessions of the tenant run', async () => {
    const { queue, clock } = openTestQueue({ config: SESSIONS });
    expect(queue.config.sessionPolicy).toBe('serial');
    const v1 = await enqueueOk(queue, { topic: 'chat', version: 1 });
    const run = await claimOk(queue, 'w1');
    const v2 = await enqueueOk(queue, { topic: 'chat', version: 2, priority: 30 });
    const other = await enqueueOk(queue, { topic: 'other', version: 1 });
    expect((await claimOk(queue, 'w2')).id).toBe(other);
    expect(await queue.claim('w3')).toMatchObject({ ok: false, reason: 'quota', admission: { action: 'DEFER', reason: 'session_busy', taskId: v2 } });
    // Uncertain still holds the session: its worker may be running.
    clock.advance(31_000);
    await queue.expireLeases();
    expect((await queue.get(v1))?.state).toBe('uncertain');
    expect(await queue.claim('w3')).toMatchObject({ ok: false, admission: { reason: 'session_busy' } });
    await queue.confirmStopped(v1, run.generation, 'supervisor');
    // v1 is ready again for a retry: v2 may run now (v1's run started first), then v1 waits for v2.
    const next = await claimOk(queue, 'w3');
    expect([v1, v2]).toContain(next.id);
    expect(await queue.claim('w4')).toMatchObject({ ok: false, admission: { reason: 'session_busy' } });
    expect((await queue.events(v2)).filter((event) => event.type === 'deferred')).toHaveLength(1);
  });

  it('versioned: the versions of a session run at once, and only the newest result counts', async () => {
    const { queue } = openTestQueue({ config: { ...SESSIONS, sessionPolicy: 'versioned' } });
    const v1 = await enqueueOk(queue, { topic: 'chat', version: 1 });
    const first = await claimOk(queue, 'w1');
    await enqueueOk(queue, { topic: 'chat', version: 2 });
    const second = await claimOk(queue, 'w2');
    expect(second.version).toBe(2);
    expect(await queue.complete(v1, 'w1', first.generation, 'old')).toMatchObject({ ok: true, outcome: 'stale_input' });
  });

  it('cancel_in_progress: a newer version persists a cancel of the running one and runs once it ended', async () => {
    const { queue } = openTestQueue({ config: { ...SESSIONS, sessionPolicy: 'cancel_in_progress' } });
    const v1 = await enqueueOk(queue, { topic: 'chat', version: 1 });
    const run = await claimOk(queue, 'w1');
    const v2 = await enqueueOk(queue, { topic: 'chat', version: 2 });
    expect((await queue.get(v1))?.cancelRequested).toBe(true);
    expect((await queue.events(v1)).at(-1)).toMatchObject({ type: 'cancel_requested', data: { source: 'newer_version', byTaskId: v2 } });
    expect(await queue.claim('w2')).toMatchObject({ ok: false, admission: { reason: 'session_busy', taskId: v2 } });
    expect(await queue.heartbeat(v1, 'w1', run.generation)).toMatchObject({ ok: true, cancelRequested: true });
    await queue.acknowledgeCancel(v1, 'w1', run.generation);
    expect((await claimOk(queue, 'w2')).id).toBe(v2);
  });

  it('refuses an unknown policy, naming the field', () => {
    expect(() => resolveConfig({ sessionPolicy: 'parallel' as never })).toThrow(/sessionPolicy/);
  });
});

describe('A3 weighted fair share by consumed service', () => {
  const TOKENS = { tokens: { kind: 'rate', capacity: 1_000_000, refill: 1_000_000, periodMs: 60_000, meter: 'tokens' } } as const;
  const FAIR = { capacity: 100, globalLimit: 10, perTenantLimit: 10, fairness: 'fair_share', budgets: TOKENS } as const;

  /** Claims and completes `count` tasks, each using the tokens it reserved (checkpointed, R1). */
  async function drain(queue: WorkQueue, count: number): Promise<string[]> {
    const order: string[] = [];
    for (let i = 0; i < count; i++) {
      const task = await claimOk(queue, 'w1');
      order.push(task.tenant);
      await queue.checkpoint(task.id, 'w1', task.generation, { kind: 'B', step: 1, state: {}, usage: USAGE(task.needs?.tokens ?? 0) });
      await queue.complete(task.id, 'w1', task.generation, 'ok');
    }
    return order;
  }

  it('serves the tenant with the least consumed tokens, not the one with the fewest tasks', async () => {
    const { queue } = openTestQueue({ config: FAIR });
    for (let i = 0; i < 3; i++) await enqueueOk(queue, { tenant: 'long', needs: { tokens: 600 } });
    for (let i = 0; i < 12; i++) await enqueueOk(queue, { tenant: 'short', needs: { tokens: 100 } });
    // Each run uses what it reserved: long 600 tokens a task, short 100.
    const order = await drain(queue, 15);
    expect(order.slice(0, 8)).toEqual(['long', 'short', 'short', 'short', 'short', 'short', 'short', 'long']);
  });

  it('weighs tenants: weight 2 gets twice the service', async () => {
    const { queue } = openTestQueue({ config: { ...FAIR, tenantWeights: { gold: 2 } } });
    for (let i = 0; i < 6; i++) await enqueueOk(queue, { tenant: 'gold', needs: { tokens: 100 } });
    for (let i = 0; i < 6; i++) await enqueueOk(queue, { tenant: 'plain', needs: { tokens: 100 } });
    const order = await drain(queue, 6);
    expect(order.filter((tenant) => tenant === 'gold')).toHaveLength(4);
  });

  it('corrects the charge to the checkpointed tokens when the slot is freed', async () => {
    const { queue } = openTestQueue({ config: FAIR });
    const id = await enqueueOk(queue, { tenant: 'a', needs: { tokens: 500 } });
    const task = await claimOk(queue, 'w1');
    expect((await queue.events(id)).find((event) => event.type === 'claimed')?.data.service).toBe(500);
    await queue.checkpoint(id, 'w1', task.generation, { kind: 'A', step: 0, state: {}, usage: USAGE(120) });
    await queue.complete(id, 'w1', task.generation, 'ok');
    expect((await queue.events(id)).at(-1)?.data.serviceDelta).toBe(-380);
  });

  it('gives a tenant back from idle no credit for its absence', async () => {
    const { queue } = openTestQueue({ config: FAIR });
    for (let i = 0; i < 4; i++) await enqueueOk(queue, { tenant: 'busy', needs: { tokens: 100 } });
    await drain(queue, 2);
    // busy has used 200; away comes back with nothing used: it is raised to busy's 200.
    const back = await enqueueOk(queue, { tenant: 'away', needs: { tokens: 100 } });
    expect((await queue.events(back))[0]?.data.serviceClamp).toEqual({ from: 0, to: 200 });
  });

  it('gives no idle credit against a tenant being served with nothing ready at that moment (issue 31)', async () => {
    const { queue } = openTestQueue({ config: FAIR });
    // away is served once (100 tokens), then goes idle.
    await enqueueOk(queue, { tenant: 'away', needs: { tokens: 100 } });
    await drain(queue, 1);
    // steady is served one task at a time: forty finished (4,000 tokens), the next one running (charged
    // 100 at its claim), and nothing of it ready when away comes back.
    for (let i = 0; i < 40; i++) {
      await enqueueOk(queue, { tenant: 'steady', needs: { tokens: 100 } });
      await drain(queue, 1);
    }
    await enqueueOk(queue, { tenant: 'steady', needs: { tokens: 100 } });
    const running = await claimOk(queue, 'w2');
    const returned: number[] = [];
    for (let i = 0; i < 30; i++) returned.push(await enqueueOk(queue, { tenant: 'away', needs: { tokens: 100 } }));
    // A3: steady is active (being served), so away is raised to its 4,100, not left at its old 100.
    expect((await queue.events(returned[0]!))[0]?.data.serviceClamp).toEqual({ from: 100, to: 4_100 });
    for (let i = 0; i < 30; i++) await enqueueOk(queue, { tenant: 'steady', needs: { tokens: 100 } });
    await queue.checkpoint(running.id, 'w2', running.generation, { kind: 'B', step: 1, state: {}, usage: USAGE(100) });
    await queue.complete(running.id, 'w2', running.generation, 'ok');
    // Equal service from here: the two alternate, instead of away taking all of the next 30 claims.
    const order = await drain(queue, 30);
    expect(order.filter((tenant) => tenant === 'away')).toHaveLength(15);
  });

  it('lets critical work bypass fair share', async () => {
    const { queue } = openTestQueue({ config: FAIR });
    await enqueueOk(queue, { tenant: 'heavy', needs: { tokens: 900 } });
    await drain(queue, 1);
    await enqueueOk(queue, { tenant: 'light', needs: { tokens: 1 } });
    const urgent = await enqueueOk(queue, { tenant: 'heavy', priority: 30, critical: true, needs: { tokens: 1 } });
    expect((await claimOk(queue, 'w1')).id).toBe(urgent);
  });
});
