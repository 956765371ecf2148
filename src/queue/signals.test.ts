import { afterEach, describe, expect, it } from 'vitest';
import { summarise } from './signals.ts';
import { checkAndCloseQueues, claimOk, enqueueOk, openTestQueue } from './__test-helpers__/test-kit.ts';

afterEach(checkAndCloseQueues);

const MINUTE = 60_000;

describe('A5 signals', () => {
  it('reports depth, leases, decisions, retries, rejections, latencies and the oldest waiting task', async () => {
    const { queue, clock } = openTestQueue({ config: { capacity: 3, globalLimit: 2, perTenantLimit: 1, criticalHeadroom: 0 } });
    const first = await enqueueOk(queue, { tenant: 'a', priority: 1 });
    clock.advance(10);
    await enqueueOk(queue, { tenant: 'a', priority: 0 });
    await enqueueOk(queue, { tenant: 'b', priority: 0 });
    expect((await queue.enqueue({ tenant: 'b', topic: 'full', version: 1, priority: 0, input: {} })).ok).toBe(false);
    clock.advance(100);
    const claimed = await claimOk(queue, 'w1');
    expect(claimed.id).toBe(first);
    clock.advance(50);
    expect((await queue.fail(claimed.id, 'w1', claimed.generation, { errorClass: 'rate_limited', message: 'slow down' })).ok).toBe(true);
    await queue.pauseTenant('b', 'maintenance');
    const signals = await queue.signals();
    expect(signals.at).toBe(clock.t);
    expect(signals.depth).toEqual([
      { tenant: 'a', priority: 1, n: 1 },
      { tenant: 'a', priority: 0, n: 1 },
      { tenant: 'b', priority: 0, n: 1 },
    ]);
    expect(signals.leases).toEqual([]);
    expect(signals.awaitingReconciliation).toBe(0);
    expect(signals.retries).toEqual([{ errorClass: 'rate_limited', n: 1 }]);
    expect(signals.rejections).toEqual([{ reason: 'queue_full', n: 1 }]);
    expect(signals.decisions).toEqual([
      { action: 'PAUSE', reason: 'maintenance', n: 1 },
      { action: 'REJECT', reason: 'queue_full', n: 1 },
      { action: 'RUN', reason: 'admitted', n: 1 },
    ]);
    expect(signals.waitMs).toEqual({ count: 1, p50: 110, p95: 110, max: 110 });
    expect(signals.runMs).toEqual({ count: 0, p50: null, p95: null, max: null });
    expect(signals.oldestWaiting.map((row) => [row.tenant, row.taskId])).toEqual([
      ['a', first],
      ['b', first + 2],
    ]);
    expect(signals.alerts.stuckWhileCapacityNormal).toBe(false);
  });

  it('shows an active lease with its age, and an uncertain task awaiting reconciliation', async () => {
    const { queue, clock } = openTestQueue({ config: { globalLimit: 2, perTenantLimit: 2, leaseMs: 30_000, heartbeatMs: 10_000 } });
    await enqueueOk(queue, { tenant: 'a' });
    await enqueueOk(queue, { tenant: 'a' });
    const one = await claimOk(queue, 'w1');
    clock.advance(40_000);
    await queue.expireLeases();
    const two = await claimOk(queue, 'w2');
    clock.advance(1_000);
    const signals = await queue.signals();
    expect(signals.leases).toEqual([{ taskId: two.id, tenant: 'a', workerId: 'w2', generation: two.generation, ageMs: 1_000, expiresInMs: 29_000 }]);
    expect(signals.awaitingReconciliation).toBe(1);
    expect(one.id).not.toBe(two.id);
  });

  it('fires stuckWhileCapacityNormal when the oldest eligible task waited stuckAfterMs with slots free, not for a paused tenant', async () => {
    const budgets = { starved: { kind: 'rate' as const, capacity: 1, refill: 0, periodMs: MINUTE } };
    const { queue, clock } = openTestQueue({ config: { globalLimit: 2, perTenantLimit: 1, budgets, stuckAfterMs: 10 * MINUTE } });
    await enqueueOk(queue, { tenant: 'a', needs: { starved: 1 } });
    await enqueueOk(queue, { tenant: 'a', needs: { starved: 1 } });
    const ran = await claimOk(queue, 'w1');
    expect((await queue.complete(ran.id, 'w1', ran.generation, { ok: true })).ok).toBe(true);
    expect((await queue.claim('w1')).ok).toBe(false); // the bucket is empty and never refills
    clock.advance(10 * MINUTE - 1);
    expect((await queue.signals()).alerts.stuckWhileCapacityNormal).toBe(false);
    clock.advance(1);
    expect((await queue.signals()).alerts.stuckWhileCapacityNormal).toBe(true);
    await queue.pauseTenant('a', 'investigating');
    expect((await queue.signals()).alerts.stuckWhileCapacityNormal).toBe(false);
    await queue.resumeTenant('a');
    expect((await queue.signals()).alerts.stuckWhileCapacityNormal).toBe(true);
  });

  it("does not report stuck a tenant at its own limit whose name is an Object.prototype member's (issue 31)", async () => {
    for (const tenant of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const { queue, clock } = openTestQueue({ config: { globalLimit: 2, perTenantLimit: 1, stuckAfterMs: 10 * MINUTE } });
      await enqueueOk(queue, { tenant });
      await enqueueOk(queue, { tenant });
      await claimOk(queue, 'w1');
      clock.advance(10 * MINUTE);
      // A5: the waiting task is held by its tenant's limit (1 running of 1), not stuck with capacity normal.
      expect((await queue.signals()).alerts.stuckWhileCapacityNormal, tenant).toBe(false);
    }
    // A limit configured for such a name is its own: 2 leaves room, so the same wait is stuck.
    const { queue, clock } = openTestQueue({ config: { globalLimit: 3, perTenantLimit: 1, tenantLimits: JSON.parse('{"__proto__": 2}') as Record<string, number>, stuckAfterMs: 10 * MINUTE } });
    await enqueueOk(queue, { tenant: '__proto__' });
    await enqueueOk(queue, { tenant: '__proto__' });
    await claimOk(queue, 'w1');
    clock.advance(10 * MINUTE);
    expect((await queue.signals()).alerts.stuckWhileCapacityNormal).toBe(true);
  });

  it('summarises with nearest-rank percentiles', () => {
    expect(summarise([5, 1, 3, 2, 4])).toEqual({ count: 5, p50: 3, p95: 5, max: 5 });
    expect(summarise(Array.from({ length: 100 }, (_, i) => i + 1))).toEqual({ count: 100, p50: 50, p95: 95, max: 100 });
  });
});
