import { afterEach, describe, expect, it } from 'vitest';
import { InputError } from './errors.ts';
import { canReopen, canTransition, REOPENING_EDGES, TERMINAL_STATES, edgeFor } from './states.ts';
import { checkAndCloseQueues, claimOk, enqueueOk, fingerprint, openTestQueue, request } from './__test-helpers__/test-kit.ts';
import type { WorkQueue } from './types.ts';
import type { ManualClock } from './__test-helpers__/test-kit.ts';

afterEach(checkAndCloseQueues);

/** Claims the task, lets its lease lapse and confirms it stopped: with maxAttempts 1 that dead-letters it (R6). */
async function deadLetter(queue: WorkQueue, clock: ManualClock, id: number, worker = 'w1'): Promise<number> {
  const task = await claimOk(queue, worker);
  expect(task.id).toBe(id);
  clock.advance(queue.config.leaseMs);
  await queue.expireLeases();
  expect(await queue.confirmStopped(id, task.generation, 'supervisor')).toEqual({ ok: true, next: 'failed' });
  return task.generation;
}

describe('O1 redrive: a dead letter back to ready', () => {
  it('is an operator edge out of failed that leaves failed terminal for everything else', () => {
    expect(REOPENING_EDGES).toEqual([{ event: 'redrive', from: 'failed', to: 'ready', records: 'redriven' }]);
    expect(TERMINAL_STATES).toContain('failed');
    expect(canTransition('failed', 'ready')).toBe(false);
    expect(canReopen('failed', 'ready')).toBe(true);
    expect(canReopen('done', 'ready')).toBe(false);
    expect(edgeFor(1, 'redrive', 'failed', 'ready')).toMatchObject({ records: 'redriven' });
  });

  it('sends the task back with fresh attempts and deliveries, its generation kept, its dead letter moved into the event', async () => {
    const { queue, clock } = openTestQueue({ config: { maxAttempts: 1 } });
    const id = await enqueueOk(queue, { tenant: 'acme', topic: 'order-1' });
    const generation = await deadLetter(queue, clock, id);
    const [letter] = await queue.deadLetters();
    expect(letter).toMatchObject({ taskId: id, reason: 'attempts_exhausted' });
    const live = await queue.liveCount();

    clock.advance(5_000);
    expect(await queue.redrive(id)).toEqual({ ok: true, state: 'ready' });
    expect(await queue.get(id)).toMatchObject({ state: 'ready', attempts: 0, deliveries: 0, generation, notBefore: clock.t });
    expect((await queue.get(id))?.errorClass).toBeUndefined();
    expect(await queue.deadLetters()).toEqual([]);
    expect(await queue.liveCount()).toBe(live + 1);
    expect((await queue.events(id)).at(-1)).toMatchObject({
      type: 'redriven',
      at: clock.t,
      data: { from: 'failed', to: 'ready', source: 'operator', reason: 'attempts_exhausted', reasons: letter!.reasons, attempts: 1, deliveries: 1 },
    });

    // It runs again under a new generation; the first run's lease stays fenced off.
    const again = await claimOk(queue, 'w2');
    expect(again).toMatchObject({ id, generation: generation + 1, attempt: 1 });
    expect((await queue.heartbeat(id, 'w1', generation)).ok).toBe(false);
    expect(await queue.complete(id, 'w2', again.generation, { answer: 'ok' })).toEqual({ ok: true, outcome: 'done' });
    expect((await queue.get(id))?.state).toBe('done');
  });

  it('keeps the reason history: dead-lettered again, the letter lists the earlier deliveries too', async () => {
    const { queue, clock } = openTestQueue({ config: { maxAttempts: 1 } });
    const id = await enqueueOk(queue);
    await deadLetter(queue, clock, id);
    const first = (await queue.deadLetters())[0]!.reasons;
    expect(await queue.redrive(id)).toEqual({ ok: true, state: 'ready' });
    await deadLetter(queue, clock, id, 'w2');
    const [letter] = await queue.deadLetters();
    expect(letter?.reasons.slice(0, first.length)).toEqual(first);
    expect(letter!.reasons.length).toBeGreaterThan(first.length);
  });

  it('restarts the retry age at the next claim, so a redrive long after the first claim still runs', async () => {
    const { queue, clock } = openTestQueue({ config: { maxAttempts: 1, maxRetryAgeMs: 60_000 } });
    const id = await enqueueOk(queue);
    await deadLetter(queue, clock, id);
    clock.advance(3_600_000);
    expect(await queue.redrive(id)).toEqual({ ok: true, state: 'ready' });
    expect(await claimOk(queue, 'w2')).toMatchObject({ id, attempt: 1 });
  });

  it('refuses what is not a dead letter, a superseded topic and a full queue, changing nothing', async () => {
    const { queue, clock } = openTestQueue({ config: { maxAttempts: 1, capacity: 2, criticalHeadroom: 0 } });
    const letter = await enqueueOk(queue, { tenant: 'acme', topic: 'dead' });
    await deadLetter(queue, clock, letter);
    // A task that failed on purpose (a fatal error class) is not a dead letter.
    const fatal = await enqueueOk(queue, { topic: 'fatal' });
    const held = await claimOk(queue, 'w1');
    expect(await queue.fail(fatal, 'w1', held.generation, { errorClass: 'business_error', message: 'no' })).toMatchObject({ ok: true, next: 'failed' });
    const ready = await enqueueOk(queue, { topic: 'waiting' });

    const before = await fingerprint(queue);
    for (const id of [999, ready, fatal]) expect(await queue.redrive(id)).toMatchObject({ ok: false, error: 'not_dead_lettered' });
    await enqueueOk(queue, { topic: 'filler' });
    const full = await fingerprint(queue);
    expect(await queue.redrive(letter)).toMatchObject({ ok: false, error: 'queue_full' });
    expect(await fingerprint(queue)).toEqual(full);
    expect(before).not.toEqual(full);

    await queue.cancel(ready);
    expect((await queue.enqueue(request({ tenant: 'acme', topic: 'dead', version: 2 }))).ok).toBe(true);
    const newer = await fingerprint(queue);
    expect(await queue.redrive(letter)).toMatchObject({ ok: false, error: 'superseded', message: expect.stringContaining('newer version') });
    expect(await fingerprint(queue)).toEqual(newer);
    expect((await queue.deadLetters()).map(({ taskId }) => taskId)).toEqual([letter]);
  });

  it.each([0, -1, 1.5, Number.NaN, '7'])('rejects the task id %s with an InputError', async (id) => {
    const { queue } = openTestQueue();
    await expect(queue.redrive(id as number)).rejects.toBeInstanceOf(InputError);
  });
});
