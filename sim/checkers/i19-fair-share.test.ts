import { describe, expect, it } from 'vitest';
import type { WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { buildWithBudgets, budgetRun, enqueueWith, judgedUnder, withEvents } from './__test-helpers__/budget-run.ts';
import type { RealRun } from './__test-helpers__/real-run.ts';
import { i19FairShare } from './i19-fair-share.ts';

/** Two slots per tenant, served one run at a time: a tenant is never held at its limit. */
const FAIR = {
  globalLimit: 2,
  perTenantLimit: 2,
  fairness: 'fair_share',
  budgets: { tokens: { kind: 'rate', capacity: 100_000_000, refill: 100_000_000, periodMs: 60_000, meter: 'tokens' } },
} as const;

/** Claims the next task (whichever the queue picks), checkpoints `tokens` of use, and completes it. */
async function serveNext(run: RealRun, tokensOf: (tenant: string) => number): Promise<string> {
  const task = await run.claim('w0#1');
  await run.checkpoint('w0#1', task.id, 'B', 1, { inputTokens: tokensOf(task.tenant), outputTokens: 0 });
  await run.complete('w0#1', task.id);
  return task.tenant;
}

/** A tenant of big tasks (1,000 tokens) and one of small ones (100), both backlogged, served by the queue's fair share. */
async function bigAndSmall(serves: number): Promise<{ world: WorldResult; order: string[] }> {
  const run = budgetRun(FAIR);
  for (let i = 0; i < 6; i++) await enqueueWith(run, { tenant: 'big', needs: { tokens: 1_000 } });
  for (let i = 0; i < 40; i++) await enqueueWith(run, { tenant: 'small', needs: { tokens: 100 } });
  const order: string[] = [];
  for (let i = 0; i < serves; i++) order.push(await serveNext(run, (tenant) => (tenant === 'big' ? 1_000 : 100)));
  return { world: await buildWithBudgets(run), order };
}

/**
 * Issue 31: 'away' is served once and goes idle; 'steady' is served one task at a time (forty done, the
 * next running) and has nothing ready when 'away' comes back with 30 tasks; then 'steady' enqueues 30
 * more and `serves` claims follow.
 */
async function backWhileServed(fairness: 'fair_share' | 'priority', serves: number): Promise<{ world: WorldResult; order: string[] }> {
  const run = budgetRun({ ...FAIR, fairness });
  await enqueueWith(run, { tenant: 'away', needs: { tokens: 100 } });
  await serveNext(run, () => 100);
  for (let i = 0; i < 40; i++) {
    await enqueueWith(run, { tenant: 'steady', needs: { tokens: 100 } });
    await serveNext(run, () => 100);
  }
  await enqueueWith(run, { tenant: 'steady', needs: { tokens: 100 } });
  const running = await run.claim('w1#1');
  for (let i = 0; i < 30; i++) await enqueueWith(run, { tenant: 'away', needs: { tokens: 100 } });
  for (let i = 0; i < 30; i++) await enqueueWith(run, { tenant: 'steady', needs: { tokens: 100 } });
  await run.checkpoint('w1#1', running.id, 'B', 1, { inputTokens: 100, outputTokens: 0 });
  await run.complete('w1#1', running.id);
  const order: string[] = [];
  for (let i = 0; i < serves; i++) order.push(await serveNext(run, () => 100));
  return { world: await buildWithBudgets(run), order };
}

describe('I19 fair share', () => {
  it('passes the queue serving by consumed tokens: about ten small tasks per big one', async () => {
    const { world, order } = await bigAndSmall(24);
    expect(order.filter((tenant) => tenant === 'big').length).toBeLessThanOrEqual(3);
    expectClean(i19FairShare, world);
  });

  it("holds the tenant_service rows to the judge's books", async () => {
    const { world } = await bigAndSmall(6);
    expectClean(i19FairShare, world);
    const rows = (world.tenantServices ?? []).map((row) => (row.tenant === 'big' ? { ...row, service: row.service + 1 } : row));
    expectViolation(i19FairShare, { ...world, tenantServices: rows }, /tenant big's service row says \d+, the books \d+/);
    expectViolation(i19FairShare, { ...world, tenantServices: [...(world.tenantServices ?? []), { tenant: 'ghost', service: 5 }] }, /tenant ghost has a service row \(5\) but the books never charged it/);
  });

  it('judges nothing under the priority policy', async () => {
    const { world } = await bigAndSmall(4);
    expectClean(i19FairShare, judgedUnder(world, { fairness: 'priority' }));
  });

  it('fails when the tenants were served by task count (the books say tokens)', async () => {
    const run = budgetRun({ ...FAIR, fairness: 'priority' });
    // Alternating big and small by enqueue order, the priority policy serves them one for one.
    for (let i = 0; i < 12; i++) {
      await enqueueWith(run, { tenant: 'big', needs: { tokens: 1_000 } });
      await enqueueWith(run, { tenant: 'small', needs: { tokens: 100 } });
    }
    for (let i = 0; i < 20; i++) await serveNext(run, (tenant) => (tenant === 'big' ? 1_000 : 100));
    const world = judgedUnder(await buildWithBudgets(run), { fairness: 'fair_share' });
    expectViolation(i19FairShare, world, /tenants big and small, both with work waiting, both eligible, differ by \d+ in weighted service/);
  });

  it('gives no idle credit: a tenant back from idle judged from the floor, not from zero', async () => {
    const run = budgetRun(FAIR);
    for (let i = 0; i < 12; i++) await enqueueWith(run, { tenant: 'busy', needs: { tokens: 1_000 } });
    for (let i = 0; i < 6; i++) await serveNext(run, () => 1_000);
    for (let i = 0; i < 30; i++) await enqueueWith(run, { tenant: 'back', needs: { tokens: 1_000 } });
    for (let i = 0; i < 10; i++) await serveNext(run, () => 1_000);
    const world = await buildWithBudgets(run);
    expectClean(i19FairShare, world);
    // The bad history: the queue did not raise 'back' and served it alone (its claims all came first).
    const claims = world.events.filter((event) => event.type === 'claimed');
    expect(claims.some((event) => world.final.tasks.find((task) => task.id === event.taskId)?.tenant === 'busy')).toBe(true);
    const unclamped = withEvents(world, (events) => {
      // Rewrite the last ten claims' tasks to be 'back's own, as an unclamped queue would have served them.
      const backIds = world.final.tasks.filter((task) => task.tenant === 'back').map((task) => task.id);
      const lastTen = events.filter((event) => event.type === 'claimed').slice(-10).map((event) => event.taskId);
      const swap = new Map(lastTen.map((id, index) => [id, backIds[index] ?? id]));
      const reverse = new Map([...swap].map(([from, to]) => [to, from]));
      return events.map((event) => ({ ...event, taskId: swap.get(event.taskId) ?? reverse.get(event.taskId) ?? event.taskId }));
    });
    expectViolation(i19FairShare, unclamped, /tenants back and busy, both with work waiting, both eligible, differ by/);
  });

  it('raises a tenant back from idle to one being served with nothing ready at that instant, as the queue does (issue 31)', async () => {
    const { world, order } = await backWhileServed('fair_share', 20);
    expect(order.filter((tenant) => tenant === 'away')).toHaveLength(10);
    // The queue raised away to steady's 4,100; books that compare only with tenants with work waiting
    // would say 100 plus what it was charged since, and the rows would disagree with them.
    expectClean(i19FairShare, world);
  });

  it('fails a queue that gave that tenant credit for its absence: its 30 claims in a row (issue 31)', async () => {
    // The priority policy serves away's 30 earlier tasks first, as a queue that left away at its old
    // service did; judged under fair share, without rows (the priority queue keeps none).
    const { world, order } = await backWhileServed('priority', 30);
    expect(order).toEqual(Array.from({ length: 30 }, () => 'away'));
    const unclamped = { ...judgedUnder(world, { fairness: 'fair_share' }), tenantServices: undefined };
    expectViolation(i19FairShare, unclamped, /tenants away and steady, both with work waiting, both eligible, differ by -?\d+ in weighted service/);
  });
});
