import { afterEach, describe, expect, it } from 'vitest';
import { checkAndCloseQueues, claimOk, enqueueOk, fingerprint, openTestQueue } from '../queue/__test-helpers__/test-kit.ts';

afterEach(checkAndCloseQueues);

const USAGE = { inputTokens: 100, outputTokens: 20, modelCalls: 1 };

describe('R8 interrupt: a draining worker hands back a run it will not finish', () => {
  it('moves the task back to ready with an interrupted event; the next claim resumes from its checkpoint', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue);
    const first = await claimOk(queue, 'w1');
    expect((await queue.checkpoint(id, 'w1', first.generation, { kind: 'B', step: 1, state: { done: ['search'] }, usage: USAGE })).ok).toBe(true);
    clock.advance(1_000);

    expect(await queue.interrupt(id, 'w1', first.generation, 'shutdown')).toEqual({ ok: true, next: 'ready' });
    expect(await queue.get(id)).toMatchObject({ state: 'ready' });
    const event = (await queue.events(id)).at(-1);
    expect(event).toMatchObject({ type: 'interrupted', at: clock.t, data: { from: 'running', to: 'ready', reason: 'shutdown', workerId: 'w1', generation: first.generation } });
    // Handed back, not ended: the hold is still held and the slot is free again.
    expect((await queue.holds()).find((hold) => hold.taskId === id)?.state).toBe('held');
    expect((await queue.snapshot()).occupied.global).toBe(0);

    const second = await claimOk(queue, 'w2');
    expect(second).toMatchObject({ id, generation: first.generation + 1 });
    expect(await queue.lastCheckpoint(id)).toMatchObject({ kind: 'B', step: 1, state: { done: ['search'] }, generation: first.generation });
  });

  it('is fenced: a stale holder is refused and nothing changes', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue);
    const first = await claimOk(queue, 'w1');
    const before = await fingerprint(queue);
    expect(await queue.interrupt(id, 'w1', first.generation + 1, 'shutdown')).toMatchObject({ ok: false, error: 'stale_lease' });
    expect(await queue.interrupt(id, 'w2', first.generation, 'shutdown')).toMatchObject({ ok: false, error: 'stale_lease' });
    expect(await fingerprint(queue)).toEqual(before);
    clock.advance(30_000); // the lease (30 s) has run out
    const expired = await fingerprint(queue);
    expect(await queue.interrupt(id, 'w1', first.generation, 'shutdown')).toMatchObject({ ok: false, error: 'stale_lease' });
    expect(await fingerprint(queue)).toEqual(expired);
  });

  it('Q13: a run with a pending cancel is not handed back to ready; it ends cancelled, its hold closed once', async () => {
    const { queue } = openTestQueue();
    const id = await enqueueOk(queue);
    const claimed = await claimOk(queue, 'w1');
    expect(await queue.cancel(id)).toEqual({ ok: true, state: 'cancel_requested' });

    expect(await queue.interrupt(id, 'w1', claimed.generation, 'shutdown')).toEqual({ ok: true, next: 'cancelled' });
    expect(await queue.get(id)).toMatchObject({ state: 'cancelled', outcome: 'cancelled' });
    expect((await queue.events(id)).map((event) => event.type)).toEqual(['enqueued', 'claimed', 'cancel_requested', 'cancelled']);
    expect((await queue.events(id)).at(-1)?.data).toMatchObject({ from: 'running', to: 'cancelled', source: 'interrupt', reason: 'shutdown' });
    expect((await queue.holds()).find((hold) => hold.taskId === id)?.state).not.toBe('held');
    expect(await queue.claim('w2')).toMatchObject({ ok: false, reason: 'empty' });
  });
});
