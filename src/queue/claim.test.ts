import { afterEach, describe, expect, it } from 'vitest';
import { compareCandidates, score } from './scoring.ts';
import { checkAndCloseQueues, claimOk, enqueueOk, openTestQueue } from './__test-helpers__/test-kit.ts';

afterEach(checkAndCloseQueues);

const MINUTE = 60_000;

/** Room for many concurrent claims, so ordering tests are not shaped by the quotas. */
const WIDE = { capacity: 500, globalLimit: 500, perTenantLimit: 500 };

/** A small seeded generator for the randomised ordering checks: next(n) is an integer in [0, n). */
function lcg(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return Math.floor((state / 2_147_483_648) * n);
  };
}

describe('Q4 priority with aging', () => {
  it('lets a base-0 task that waited 31 minutes outrank a base-30 task that just arrived', async () => {
    const { queue, clock } = openTestQueue({ config: WIDE });
    const patient = await enqueueOk(queue, { tenant: 'a', priority: 0 });
    clock.advance(31 * MINUTE);
    const urgent = await enqueueOk(queue, { tenant: 'b', priority: 30 });
    expect((await claimOk(queue, 'w1')).id).toBe(patient);
    expect((await claimOk(queue, 'w2')).id).toBe(urgent);
  });

  it('lets the fresh base-30 task win while the base-0 task has aged less than 30 points', async () => {
    const { queue, clock } = openTestQueue({ config: WIDE });
    const patient = await enqueueOk(queue, { tenant: 'a', priority: 0 });
    clock.advance(30 * MINUTE - 1);
    const urgent = await enqueueOk(queue, { tenant: 'b', priority: 30 });
    expect((await claimOk(queue, 'w1')).id).toBe(urgent);
    expect((await claimOk(queue, 'w2')).id).toBe(patient);
  });

  it('ages by whole periods: floor(waitMs / agingPeriodMs)', async () => {
    const { queue, clock } = openTestQueue({ config: WIDE });
    const older = await enqueueOk(queue, { tenant: 'a', priority: 0 });
    clock.advance(MINUTE - 1);
    const higher = await enqueueOk(queue, { tenant: 'b', priority: 1 });
    // older: 0 + floor(59_999 / 60_000) = 0 < 1.
    expect((await claimOk(queue, 'w1')).id).toBe(higher);
    expect((await queue.events(higher)).at(-1)?.data.score).toBe(1);
    expect((await claimOk(queue, 'w2')).id).toBe(older);
  });

  it('breaks an exact score tie by the earlier enqueue', async () => {
    const { queue, clock } = openTestQueue({ config: WIDE });
    const older = await enqueueOk(queue, { tenant: 'a', priority: 0 });
    clock.advance(MINUTE);
    await enqueueOk(queue, { tenant: 'b', priority: 1 });
    // Both score 1 now; the earlier enqueue goes first.
    expect((await claimOk(queue, 'w1')).id).toBe(older);
  });

  it('breaks a tie of score and enqueue time by the smaller task id (not by tenant name)', async () => {
    const { queue } = openTestQueue({ config: WIDE });
    const first = await enqueueOk(queue, { tenant: 'zeta', priority: 5 });
    const second = await enqueueOk(queue, { tenant: 'alpha', priority: 5 });
    const third = await enqueueOk(queue, { tenant: 'mid', priority: 5 });
    expect(first).toBeLessThan(second);
    expect([(await claimOk(queue, 'w1')).id, (await claimOk(queue, 'w2')).id, (await claimOk(queue, 'w3')).id]).toEqual([first, second, third]);
  });

  it('prefers the earlier enqueue over the smaller id when they disagree (a producer with a lagging clock)', async () => {
    const { queue, clock } = openTestQueue({ config: WIDE });
    const smallerId = await enqueueOk(queue, { tenant: 'a', priority: 5 });
    clock.advance(-MINUTE);
    const earlier = await enqueueOk(queue, { tenant: 'b', priority: 4 });
    clock.advance(MINUTE);
    // Both score 5 now; the second task was enqueued a minute earlier and wins despite its larger id.
    expect(smallerId).toBeLessThan(earlier);
    expect((await claimOk(queue, 'w1')).id).toBe(earlier);
    expect((await claimOk(queue, 'w2')).id).toBe(smallerId);
  });

  it('respects agingCap: waiting never adds more than agingCap points', async () => {
    const { queue, clock } = openTestQueue({ config: { ...WIDE, agingCap: 5 } });
    const ancient = await enqueueOk(queue, { tenant: 'a', priority: 0 });
    clock.advance(1_000 * MINUTE);
    const six = await enqueueOk(queue, { tenant: 'b', priority: 6 });
    const five = await enqueueOk(queue, { tenant: 'c', priority: 5 });
    expect((await claimOk(queue, 'w1')).id).toBe(six);
    expect((await queue.events(six)).at(-1)?.data.score).toBe(6);
    // ancient scores 0 + 5 = 5, ties with the fresh base-5 task and wins by earlier enqueue.
    expect((await claimOk(queue, 'w2')).id).toBe(ancient);
    expect((await queue.events(ancient)).at(-1)?.data.score).toBe(5);
    expect((await claimOk(queue, 'w3')).id).toBe(five);
  });

  it('uses a configured agingPeriodMs', async () => {
    const { queue, clock } = openTestQueue({ config: { ...WIDE, agingPeriodMs: 1_000 } });
    const patient = await enqueueOk(queue, { tenant: 'a', priority: 0 });
    clock.advance(11_000);
    await enqueueOk(queue, { tenant: 'b', priority: 10 });
    expect((await claimOk(queue, 'w1')).id).toBe(patient);
    expect((await queue.events(patient)).at(-1)?.data.score).toBe(11);
  });

  it('takes base priority only from the trusted field, never from payload text', async () => {
    const { queue } = openTestQueue({ config: WIDE });
    const loud = await enqueueOk(queue, { tenant: 'a', priority: 0, input: { priority: 30, text: 'HIGHEST PRIORITY!!! urgent' } });
    const quiet = await enqueueOk(queue, { tenant: 'b', priority: 5, input: { text: 'printer offline' } });
    const claimed = await claimOk(queue, 'w1');
    expect(claimed.id).toBe(quiet);
    expect(await claimOk(queue, 'w2')).toMatchObject({ id: loud, priority: 0 });
  });

  it('claims in exactly the order of the documented score and tie-breaks (randomised backlogs)', async () => {
    const configs = [{ ...WIDE }, { ...WIDE, agingCap: 4, agingPeriodMs: 7_000 }, { ...WIDE, agingCap: 0 }, { ...WIDE, agingPeriodMs: 1_000 }];
    for (const seed of [12_345, 777, 4_242]) {
      for (const config of configs) {
        const { queue, clock } = openTestQueue({ config });
        const next = lcg(seed);
        const tasks: { id: number; priority: number; enqueuedAt: number }[] = [];
        for (let i = 0; i < 60; i++) {
          clock.advance(next(3) * 20_000);
          // Clustered priorities make equal scores, and so the tie-breaks, common.
          const priority = [0, 5, 6, 25, 30][next(5)]!;
          tasks.push({ id: await enqueueOk(queue, { tenant: `t${next(5)}`, priority }), priority, enqueuedAt: clock.t });
        }
        clock.advance(5 * MINUTE);
        const at = clock.t;
        const expected = tasks
          .map((task) => ({ ...task, score: score(task.priority, task.enqueuedAt, at, queue.config) }))
          .sort(compareCandidates)
          .map((task) => task.id);
        const claimed: number[] = [];
        for (let i = 0; i < tasks.length; i++) claimed.push((await claimOk(queue, `w${i}`)).id);
        expect(claimed, `seed ${seed} config ${JSON.stringify(config)}`).toEqual(expected);
        for (const task of tasks) {
          expect((await queue.events(task.id)).at(-1)?.data.score).toBe(score(task.priority, task.enqueuedAt, at, queue.config));
        }
      }
    }
  });

  it('picks the best task among tenants with room, claim after claim (randomised, with quotas and completions)', async () => {
    for (const seed of [1, 2, 3, 4]) {
      const { queue, clock } = openTestQueue({
        config: { capacity: 500, globalLimit: 3, perTenantLimit: 1, agingCap: 5, agingPeriodMs: 10_000, leaseMs: 3_600_000, heartbeatMs: 60_000 },
      });
      const next = lcg(seed);
      const ready = new Map<number, { id: number; tenant: string; priority: number; enqueuedAt: number }>();
      const running: { id: number; tenant: string; generation: number }[] = [];
      for (let step = 0; step < 120; step++) {
        clock.advance(next(4) * 4_000);
        if (next(3) === 0) {
          const tenant = `t${next(5)}`;
          const priority = next(8);
          const id = await enqueueOk(queue, { tenant, priority });
          ready.set(id, { id, tenant, priority, enqueuedAt: clock.t });
          continue;
        }
        if (running.length > 0 && next(2) === 0) {
          const done = running.splice(next(running.length), 1)[0]!;
          expect(await queue.complete(done.id, 'w', done.generation, null)).toMatchObject({ ok: true });
          continue;
        }
        const busy = new Set(running.map((task) => task.tenant));
        const eligible = [...ready.values()].filter((task) => !busy.has(task.tenant));
        const result = await queue.claim('w');
        if (running.length >= 3 || eligible.length === 0) {
          expect(result).toEqual({ ok: false, reason: ready.size > 0 ? 'quota' : 'empty' });
          continue;
        }
        const best = eligible
          .map((task) => ({ ...task, score: score(task.priority, task.enqueuedAt, clock.t, queue.config) }))
          .sort(compareCandidates)[0]!;
        expect(result, `seed ${seed} step ${step}`).toMatchObject({ ok: true, task: { id: best.id } });
        ready.delete(best.id);
        running.push({ id: best.id, tenant: best.tenant, generation: 1 });
      }
    }
  });

  it('score() implements base + min(agingCap, floor(waitMs / agingPeriodMs))', () => {
    const config = { agingCap: 30, agingPeriodMs: 60_000 };
    expect(score(0, 0, 31 * MINUTE, config)).toBe(30);
    expect(score(0, 0, 31 * MINUTE, { agingCap: 40, agingPeriodMs: 60_000 })).toBe(31);
    expect(score(7, 1_000, 1_000 + 119_999, config)).toBe(8);
    expect(score(7, 5_000, 1_000, config)).toBe(7);
  });
});

describe('Q5 atomic claim', () => {

  it('expires overdue leases inside the claim itself, before counting slots', async () => {
    const { queue, clock } = openTestQueue();
    const first = await enqueueOk(queue, { tenant: 'a' });
    const second = await enqueueOk(queue, { tenant: 'b' });
    const third = await enqueueOk(queue, { tenant: 'c' });
    await claimOk(queue, 'w1');
    await claimOk(queue, 'w2');
    clock.advance(30_000);
    // No expireLeases call: the claim moves both to uncertain, which keep their slots (Q6).
    expect(await queue.claim('w3')).toEqual({ ok: false, reason: 'quota' });
    expect((await queue.get(first))?.state).toBe('uncertain');
    expect((await queue.get(second))?.state).toBe('uncertain');
    expect((await queue.events(first)).at(-1)).toMatchObject({ type: 'lease_expired', at: clock.t });
    expect((await queue.get(third))?.state).toBe('ready');
  });

  it('never hands one task to two workers', async () => {
    const { queue } = openTestQueue({ config: WIDE });
    for (let i = 0; i < 10; i++) await enqueueOk(queue, { tenant: `t${i % 3}` });
    const ids = Array.from({ length: 10 }, async (_, i) => (await claimOk(queue, `w${i}`)).id);
    expect(new Set(ids).size).toBe(10);
    expect(await queue.claim('late')).toEqual({ ok: false, reason: 'empty' });
  });
});

describe('Q6 concurrency quotas', () => {
  it('allows at most 2 running tasks globally by default', async () => {
    const { queue } = openTestQueue();
    for (const tenant of ['a', 'b', 'c']) await enqueueOk(queue, { tenant });
    await claimOk(queue, 'w1');
    await claimOk(queue, 'w2');
    expect(await queue.claim('w3')).toEqual({ ok: false, reason: 'quota' });
    expect((await queue.snapshot()).occupied.global).toBe(2);
  });

  it('allows at most 1 running task per tenant by default, and serves other tenants meanwhile', async () => {
    const { queue } = openTestQueue();
    const a1 = await enqueueOk(queue, { tenant: 'a', priority: 30 });
    const a2 = await enqueueOk(queue, { tenant: 'a', priority: 30 });
    expect((await claimOk(queue, 'w1')).id).toBe(a1);
    expect(await queue.claim('w2')).toEqual({ ok: false, reason: 'quota' });
    const b1 = await enqueueOk(queue, { tenant: 'b', priority: 0 });
    expect((await claimOk(queue, 'w2')).id).toBe(b1);
    expect((await queue.get(a2))?.state).toBe('ready');
    expect((await queue.snapshot()).occupied.byTenant).toEqual({ a: 1, b: 1 });
  });

  it('applies the default per-tenant limit to tenants named like Object.prototype members', async () => {
    // A plain-object lookup would find Object.prototype.constructor and compare a count against a function.
    const { queue } = openTestQueue({ config: { globalLimit: 10, perTenantLimit: 1 } });
    for (const tenant of ['constructor', 'constructor', 'toString', 'toString', '__proto__', '__proto__']) await enqueueOk(queue, { tenant });
    for (const worker of ['w1', 'w2', 'w3']) await claimOk(queue, worker);
    expect(await queue.claim('w4')).toEqual({ ok: false, reason: 'quota' });
    const byTenant = (await queue.snapshot()).occupied.byTenant;
    expect(Object.entries(byTenant).sort()).toEqual([['__proto__', 1], ['constructor', 1], ['toString', 1]]);
  });

  it('counts occupied slots, not a window of rows: a long high-priority backlog of a busy tenant does not hide others', async () => {
    const { queue } = openTestQueue({ config: { capacity: 200 } });
    for (let i = 0; i < 80; i++) await enqueueOk(queue, { tenant: 'busy', priority: 30 });
    await claimOk(queue, 'w1');
    const small = await enqueueOk(queue, { tenant: 'small', priority: 0 });
    expect((await claimOk(queue, 'w2')).id).toBe(small);
  });

  it('does not count finished tasks of a tenant', async () => {
    const { queue } = openTestQueue();
    for (let i = 0; i < 3; i++) {
      const id = await enqueueOk(queue, { tenant: 'a' });
      const task = await claimOk(queue, 'w1');
      expect(task.id).toBe(id);
      expect(await queue.complete(id, 'w1', task.generation, null)).toMatchObject({ ok: true });
    }
  });

  it('keeps the slot of an uncertain task until it is confirmed stopped', async () => {
    const { queue, clock } = openTestQueue();
    const a1 = await enqueueOk(queue, { tenant: 'a' });
    const a2 = await enqueueOk(queue, { tenant: 'a' });
    await claimOk(queue, 'w1');
    clock.advance(30_000);
    expect(await queue.expireLeases()).toBe(1);
    expect(await queue.claim('w2')).toEqual({ ok: false, reason: 'quota' });
    expect((await queue.snapshot()).occupied).toEqual({ global: 1, byTenant: { a: 1 } });
    expect(await queue.confirmStopped(a1, 1, 'supervisor')).toEqual({ ok: true, next: 'ready' });
    expect((await claimOk(queue, 'w2')).id).toBe(a1);
    expect((await queue.get(a2))?.state).toBe('ready');
  });

  it('counts uncertain tasks against the global limit too', async () => {
    const { queue, clock } = openTestQueue();
    await enqueueOk(queue, { tenant: 'a' });
    await enqueueOk(queue, { tenant: 'b' });
    await enqueueOk(queue, { tenant: 'c' });
    await claimOk(queue, 'w1');
    await claimOk(queue, 'w2');
    clock.advance(3_600_000);
    expect(await queue.claim('w3')).toEqual({ ok: false, reason: 'quota' });
    expect((await queue.snapshot()).countsByState.uncertain).toBe(2);
  });

  it('lets tenantLimits raise one tenant above perTenantLimit', async () => {
    const { queue } = openTestQueue({ config: { globalLimit: 3, tenantLimits: { big: 2 } } });
    for (let i = 0; i < 3; i++) await enqueueOk(queue, { tenant: 'big' });
    await enqueueOk(queue, { tenant: 'small' });
    await enqueueOk(queue, { tenant: 'small' });
    const claimed = [await claimOk(queue, 'w1'), await claimOk(queue, 'w2'), await claimOk(queue, 'w3')].map((task) => task.tenant).sort();
    expect(claimed).toEqual(['big', 'big', 'small']);
    expect(await queue.claim('w4')).toEqual({ ok: false, reason: 'quota' });
  });

  it('treats a tenant limit of 0 as paused: no new leases for it, others go on', async () => {
    const { queue } = openTestQueue({ config: { tenantLimits: { paused: 0 } } });
    const held = await enqueueOk(queue, { tenant: 'paused', priority: 30 });
    expect(await queue.claim('w1')).toEqual({ ok: false, reason: 'quota' });
    const other = await enqueueOk(queue, { tenant: 'other', priority: 0 });
    expect((await claimOk(queue, 'w1')).id).toBe(other);
    expect((await queue.get(held))?.state).toBe('ready');
  });

  it("answers 'empty' when nothing is ready and 'quota' when ready work waits for a slot", async () => {
    const { queue } = openTestQueue();
    expect(await queue.claim('w1')).toEqual({ ok: false, reason: 'empty' });
    const a1 = await enqueueOk(queue, { tenant: 'a' });
    await claimOk(queue, 'w1');
    expect(await queue.claim('w2')).toEqual({ ok: false, reason: 'empty' });
    await enqueueOk(queue, { tenant: 'a' });
    expect(await queue.claim('w2')).toEqual({ ok: false, reason: 'quota' });
    await enqueueOk(queue, { tenant: 'b' });
    await claimOk(queue, 'w2');
    expect(await queue.claim('w3')).toEqual({ ok: false, reason: 'quota' });
    expect(await queue.complete(a1, 'w1', 1, null)).toMatchObject({ ok: true });
    expect((await claimOk(queue, 'w3')).tenant).toBe('a');
  });
});

describe('Q7 claim bookkeeping', () => {
  it('records worker, generation + 1, attempts + 1, leaseUntil = now + leaseMs and the queue wait', async () => {
    const { queue, clock } = openTestQueue({ config: { leaseMs: 45_000, heartbeatMs: 15_000 } });
    const enqueuedAt = clock.t;
    const id = await enqueueOk(queue, { tenant: 'acme', topic: 'order-9', version: 3, priority: 12, input: { text: 'paid, no receipt' } });
    clock.advance(7_000);
    const task = await claimOk(queue, 'worker-a');
    expect(task).toMatchObject({
      id,
      tenant: 'acme',
      topic: 'order-9',
      version: 3,
      priority: 12,
      input: { text: 'paid, no receipt' },
      generation: 1,
      attempt: 1,
      leaseUntil: clock.t + 45_000,
      cancelRequested: false,
    });
    expect(await queue.get(id)).toMatchObject({
      state: 'running',
      workerId: 'worker-a',
      generation: 1,
      attempts: 1,
      leaseUntil: clock.t + 45_000,
      enqueuedAt,
      queueWaitMs: 7_000,
    });
    expect((await queue.events(id)).at(-1)).toMatchObject({
      type: 'claimed',
      at: clock.t,
      data: { from: 'ready', to: 'running', workerId: 'worker-a', generation: 1, attempt: 1, leaseUntil: clock.t + 45_000, queueWaitMs: 7_000 },
    });
  });

  it('counts attempts at claim and bumps the generation on every claim', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue);
    expect(await claimOk(queue, 'w1')).toMatchObject({ generation: 1, attempt: 1 });
    clock.advance(30_000);
    await queue.expireLeases();
    expect(await queue.get(id)).toMatchObject({ state: 'uncertain', generation: 1, attempts: 1 });
    await queue.confirmStopped(id, 1, 'supervisor');
    expect(await queue.get(id)).toMatchObject({ state: 'ready', generation: 1, attempts: 1 });
    clock.advance(2_000);
    const second = await claimOk(queue, 'w2');
    expect(second).toMatchObject({ generation: 2, attempt: 2, leaseUntil: clock.t + 30_000 });
    expect(await queue.get(id)).toMatchObject({ workerId: 'w2', generation: 2, attempts: 2, queueWaitMs: 32_000 });
  });
});
