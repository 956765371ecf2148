import { afterEach, describe, expect, it } from 'vitest';
import { checkAndCloseQueues, claimOk, enqueueOk, openTestQueue } from '../queue/__test-helpers__/test-kit.ts';

afterEach(checkAndCloseQueues);

const MINUTE = 60_000;

/** A task whose first run went uncertain and sat there, with no live worker, past holdTtlMs. */
async function holdReleasedWhileUncertain(config: { holdTtlMs?: number } = {}) {
  const harness = openTestQueue({ config });
  const { queue, clock } = harness;
  const id = await enqueueOk(queue);
  await claimOk(queue, 'w1');
  clock.advance(30_000);
  await queue.expireLeases();
  expect((await queue.get(id))?.state).toBe('uncertain');
  return { ...harness, id };
}

describe('R4 a hold with no live run for holdTtlMs is released', () => {
  it('keeps the hold while the run has been uncertain for less than holdTtlMs', async () => {
    const { queue, clock, id } = await holdReleasedWhileUncertain();
    clock.advance(15 * MINUTE - 1);
    expect((await queue.reconcile()).releasedHolds).toBe(0);
    expect((await queue.holds()).find((hold) => hold.taskId === id)?.state).toBe('held');
  });

  it('releases it once the lease has been gone for holdTtlMs (default 15 min), once', async () => {
    const { queue, clock, id } = await holdReleasedWhileUncertain();
    clock.advance(15 * MINUTE);
    expect((await queue.reconcile()).releasedHolds).toBe(1);
    expect((await queue.holds()).find((hold) => hold.taskId === id)).toMatchObject({ state: 'released', chargedCredits: 0, reason: 'hold_ttl', closedAt: clock.t });
    clock.advance(15 * MINUTE);
    expect((await queue.reconcile()).releasedHolds).toBe(0);
  });

  it('uses a configured holdTtlMs', async () => {
    const { queue, clock } = await holdReleasedWhileUncertain({ holdTtlMs: MINUTE });
    clock.advance(MINUTE - 1);
    expect((await queue.reconcile()).releasedHolds).toBe(0);
    clock.advance(1);
    expect((await queue.reconcile()).releasedHolds).toBe(1);
  });

  it('lets the next run of a task whose hold was released complete: the settlement finds it already closed', async () => {
    const { queue, clock, id } = await holdReleasedWhileUncertain();
    clock.advance(20 * MINUTE);
    await queue.reconcile();
    expect(await queue.confirmStopped(id, 1, 'supervisor')).toMatchObject({ ok: true, next: 'ready' });
    const rerun = await claimOk(queue, 'w2');
    expect(rerun.id).toBe(id);
    expect(await queue.complete(id, 'w2', rerun.generation, { outcome: 'resolved' })).toMatchObject({ ok: true, outcome: 'done' });
    expect(await queue.get(id)).toMatchObject({ state: 'done', result: { outcome: 'resolved' } });
    // One release, no second settlement (R4: zero rows affected means already settled).
    expect((await queue.holds()).find((hold) => hold.taskId === id)).toMatchObject({ state: 'released', reason: 'hold_ttl' });
    expect((await queue.events(id)).at(-1)).toMatchObject({ type: 'completed', data: { settlement: 'already_closed' } });
  });

  it('lets that next run fail or be cancelled without closing the hold a second time', async () => {
    const { queue, clock, id } = await holdReleasedWhileUncertain({ holdTtlMs: MINUTE });
    clock.advance(2 * MINUTE);
    await queue.reconcile();
    await queue.confirmStopped(id, 1, 'supervisor');
    const rerun = await claimOk(queue, 'w2');
    expect(await queue.fail(id, 'w2', rerun.generation, { errorClass: 'business_error', message: 'order not found' })).toMatchObject({ ok: true });
    expect((await queue.get(id))?.state).toBe('failed');
    expect((await queue.holds()).find((hold) => hold.taskId === id)).toMatchObject({ state: 'released', reason: 'hold_ttl' });
  });
});
