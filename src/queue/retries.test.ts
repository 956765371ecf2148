import { afterEach, describe, expect, it } from 'vitest';
import { retryBackoffMs } from './scoring.ts';
import { SequenceRandom, checkAndCloseQueues, claimOk, enqueueOk, fingerprint, openTestQueue } from './__test-helpers__/test-kit.ts';
import { FATAL_ERROR_CLASSES, RETRYABLE_ERROR_CLASSES, type ErrorClass } from './types.ts';

afterEach(checkAndCloseQueues);

describe('Q16 retries', () => {
  it.each(RETRYABLE_ERROR_CLASSES)('sends a %s failure back to ready after a backoff, recording the reason', async (errorClass) => {
    const { queue, clock } = openTestQueue({ random: new SequenceRandom([0.5]) });
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    clock.advance(1_000);
    const failedAt = clock.t;
    // attempts = 1: min(1_000 * 2^1, 60_000) * (0.8 + 0.4 * 0.5) = 2_000.
    expect(await queue.fail(id, 'w1', 1, { errorClass, message: `${errorClass} happened` })).toEqual({
      ok: true,
      next: 'retry',
      notBefore: failedAt + 2_000,
    });
    expect(await queue.get(id)).toMatchObject({
      state: 'ready',
      notBefore: failedAt + 2_000,
      errorClass,
      errorMessage: `${errorClass} happened`,
      attempts: 1,
      generation: 1,
    });
    expect((await queue.get(id))?.leaseUntil).toBeUndefined();
    expect((await queue.events(id)).at(-1)).toMatchObject({
      type: 'retry_scheduled',
      at: failedAt,
      data: { from: 'running', to: 'ready', errorClass, message: `${errorClass} happened`, backoffMs: 2_000, attempt: 1 },
    });
  });

  it('draws the jitter from the injected Random: factor 0.8 at 0 and 1.2 just below 1', async () => {
    const low = openTestQueue({ random: new SequenceRandom([0]) });
    const high = openTestQueue({ random: new SequenceRandom([0.999_999]) });
    for (const { queue, clock, random } of [low, high]) {
      const id = await enqueueOk(queue);
      await claimOk(queue, 'w1');
      const result = await queue.fail(id, 'w1', 1, { errorClass: 'rate_limited', message: '429' });
      const expected = random === low.random ? 1_600 : 2_400;
      expect(result).toEqual({ ok: true, next: 'retry', notBefore: clock.t + expected });
      expect(random.calls).toBeGreaterThan(0);
    }
  });

  it('keeps every backoff within [0.8, 1.2] of the exponential step', () => {
    for (const unit of [0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999_999]) {
      for (const attempts of [1, 2, 3, 5, 10]) {
        const exponential = Math.min(1_000 * 2 ** attempts, 60_000);
        const backoff = retryBackoffMs(attempts, unit, { baseDelayMs: 1_000, maxDelayMs: 60_000 });
        expect(backoff).toBeGreaterThanOrEqual(Math.floor(exponential * 0.8));
        expect(backoff).toBeLessThanOrEqual(Math.ceil(exponential * 1.2));
      }
    }
  });

  it('doubles the backoff per attempt and caps it at maxDelayMs', async () => {
    const { queue, clock } = openTestQueue({
      config: { maxAttempts: 10, maxDeliveries: 10, baseDelayMs: 1_000, maxDelayMs: 5_000 },
      random: new SequenceRandom([0.5]),
    });
    const id = await enqueueOk(queue);
    const backoffs: number[] = [];
    for (let attempt = 1; attempt <= 4; attempt++) {
      const task = await claimOk(queue, `w${attempt}`);
      expect(task).toMatchObject({ id, attempt, generation: attempt });
      const result = await queue.fail(id, `w${attempt}`, attempt, { errorClass: 'transient_network', message: 'reset' });
      if (!result.ok || result.notBefore === undefined) throw new Error('expected a retry');
      backoffs.push(result.notBefore - clock.t);
      clock.t = result.notBefore;
    }
    expect(backoffs).toEqual([2_000, 4_000, 5_000, 5_000]);
  });

  it('does not hand the task out again before notBefore', async () => {
    const { queue, clock } = openTestQueue({ random: new SequenceRandom([0.5]) });
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    const result = await queue.fail(id, 'w1', 1, { errorClass: 'db_busy', message: 'busy' });
    if (!result.ok || result.notBefore === undefined) throw new Error('expected a retry');
    clock.t = result.notBefore - 1;
    expect(await queue.claim('w2')).toMatchObject({ ok: false });
    expect((await queue.get(id))?.state).toBe('ready');
    clock.t = result.notBefore;
    expect(await claimOk(queue, 'w2')).toMatchObject({ id, generation: 2, attempt: 2 });
  });

  it('lets other ready work through while a retry waits', async () => {
    const { queue } = openTestQueue();
    const retrying = await enqueueOk(queue, { tenant: 'a', priority: 30 });
    await claimOk(queue, 'w1');
    await queue.fail(retrying, 'w1', 1, { errorClass: 'tool_timeout', message: 'slow' });
    const other = await enqueueOk(queue, { tenant: 'a', priority: 0 });
    expect((await claimOk(queue, 'w2')).id).toBe(other);
  });

  it.each(FATAL_ERROR_CLASSES)('fails a %s at once, with the reason recorded', async (errorClass) => {
    const random = new SequenceRandom([0.5]);
    const { queue, clock } = openTestQueue({ random });
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    expect(await queue.fail(id, 'w1', 1, { errorClass, message: 'denied' })).toEqual({ ok: true, next: 'failed' });
    expect(await queue.get(id)).toMatchObject({ state: 'failed', errorClass, errorMessage: 'denied', attempts: 1 });
    expect((await queue.events(id)).at(-1)).toMatchObject({
      type: 'failed',
      at: clock.t,
      data: { from: 'running', to: 'failed', errorClass, message: 'denied', reason: 'not_retryable' },
    });
    expect(await queue.claim('w2')).toEqual({ ok: false, reason: 'empty' });
  });

  it('stops retrying once attempts reach maxAttempts (default 3)', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue);
    const outcomes: string[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      clock.advance(120_000);
      await claimOk(queue, `w${attempt}`);
      const result = await queue.fail(id, `w${attempt}`, attempt, { errorClass: 'rate_limited', message: '429' });
      outcomes.push(result.ok ? result.next : result.error);
    }
    expect(outcomes).toEqual(['retry', 'retry', 'failed']);
    expect(await queue.get(id)).toMatchObject({ state: 'failed', attempts: 3 });
    expect((await queue.events(id)).at(-1)).toMatchObject({ type: 'failed', data: { reason: 'attempts_exhausted', errorClass: 'rate_limited' } });
  });

  it('does not schedule a retry that would land beyond maxRetryAgeMs after the first claim', async () => {
    const { queue, clock } = openTestQueue({ config: { maxRetryAgeMs: 10_000 }, random: new SequenceRandom([0.5]) });
    const early = await enqueueOk(queue, { tenant: 'a' });
    const late = await enqueueOk(queue, { tenant: 'b' });
    await claimOk(queue, 'w1');
    await claimOk(queue, 'w2');
    clock.advance(8_000);
    // 8_000 + 2_000 = 10_000: still within the age.
    expect(await queue.fail(early, 'w1', 1, { errorClass: 'rate_limited', message: '429' })).toMatchObject({ ok: true, next: 'retry' });
    clock.advance(1);
    // 8_001 + 2_000 > 10_000.
    expect(await queue.fail(late, 'w2', 1, { errorClass: 'rate_limited', message: '429' })).toEqual({ ok: true, next: 'failed' });
    expect((await queue.events(late)).at(-1)).toMatchObject({ type: 'failed', data: { reason: 'retry_age_exceeded' } });
  });

  it('fails a waiting retry at claim once the retry age has passed', async () => {
    const { queue, clock } = openTestQueue({ config: { maxRetryAgeMs: 10_000 }, random: new SequenceRandom([0.5]) });
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    await queue.fail(id, 'w1', 1, { errorClass: 'rate_limited', message: '429' });
    clock.advance(10_001);
    expect(await queue.claim('w2')).toEqual({ ok: false, reason: 'empty' });
    expect(await queue.get(id)).toMatchObject({ state: 'failed', attempts: 1 });
    expect((await queue.events(id)).at(-1)).toMatchObject({ type: 'failed', data: { from: 'ready', to: 'failed', reason: 'retry_age_exceeded' } });
  });

  it('refuses an unknown error class as invalid_input and changes nothing', async () => {
    const { queue } = openTestQueue();
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    const before = await fingerprint(queue);
    expect(await queue.fail(id, 'w1', 1, { errorClass: 'oops' as ErrorClass, message: 'x' })).toMatchObject({
      ok: false,
      error: 'invalid_input',
      field: 'errorClass',
    });
    expect(await queue.fail(id, 'w1', 1, null as never)).toMatchObject({ ok: false, error: 'invalid_input', field: 'errorClass' });
    expect(await fingerprint(queue)).toEqual(before);
  });
});
