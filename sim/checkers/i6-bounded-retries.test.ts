import { describe, it } from 'vitest';
import type { QueueConfig } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { i6BoundedRetries } from './i6-bounded-retries.ts';
import { realRun } from './__test-helpers__/real-run.ts';

/** Longer than any backoff the default configuration draws (maxDelayMs 60 s). */
const PAST_BACKOFF_MS = 61_000;

/**
 * The real queue: one task claimed `claims` times, each attempt failing retryably, `gapMs` between
 * a failure and the next claim. Under maxAttempts = claims the last failure ends it failed.
 */
async function retried(config: Partial<QueueConfig>, claims: number, gapMs = PAST_BACKOFF_MS, failLast = true): Promise<WorldResult> {
  const run = realRun(config);
  const task = (await run.enqueue())!;
  for (let claim = 1; claim <= claims; claim++) {
    if (claim > 1) run.advance(gapMs);
    await run.claim('w0#1', task);
    if (claim < claims || failLast) await run.fail('w0#1', task);
  }
  return await run.build();
}

/** A task that fails retryably on each of its maxAttempts = 2 attempts and ends failed, dead-lettered. */
const exhausted = () => retried({ maxAttempts: 2, maxDeliveries: 2 }, 2);

/** The same books judged against another configuration (a new object: analyses are memoised). */
function judgedUnder(world: WorldResult, queue: Partial<QueueConfig>): WorldResult {
  return { ...world, scenario: { ...world.scenario, queue } };
}

describe('I6 bounded retries', () => {
  it('passes a task that used its attempts, ended failed and was dead-lettered', async () => {
    expectClean(i6BoundedRetries, await exhausted());
  });

  it('fails when a task goes back to ready after its last attempt', async () => {
    expectViolation(i6BoundedRetries, judgedUnder(await exhausted(), { maxAttempts: 1, maxDeliveries: 1 }), /went back to ready by retry_scheduled .* after its last attempt/);
  });

  it('fails when a task is claimed more often than maxDeliveries', async () => {
    const world = await retried({ maxAttempts: 3, maxDeliveries: 3 }, 3, PAST_BACKOFF_MS, false);
    expectClean(i6BoundedRetries, world);
    expectViolation(i6BoundedRetries, judgedUnder(world, { maxAttempts: 3, maxDeliveries: 2 }), /delivered 3 times, maxDeliveries 2/);
  });

  it('fails when a claim does not count its attempt (a counter bumped on one path only)', async () => {
    const world = await exhausted();
    world.final = { ...world.final, tasks: world.final.tasks.map((task) => ({ ...task, attempts: 1 })) };
    expectViolation(i6BoundedRetries, world, /task 1 was claimed 2 times but ended with 1 attempts and 2 deliveries/);
  });

  it('fails when the second claim records attempt 1', async () => {
    const world = await retried({ maxAttempts: 3 }, 2, PAST_BACKOFF_MS, false);
    world.events = world.events.map((event) => (event.type === 'claimed' && event.data.attempt === 2 ? { ...event, data: { ...event.data, attempt: 1 } } : event));
    expectViolation(i6BoundedRetries, world, /claim \d+ is its claim number 2 but records attempt 1/);
  });

  it('fails when a non-retryable error class is retried', async () => {
    const world = await retried({ maxAttempts: 3 }, 1);
    expectClean(i6BoundedRetries, world);
    const events = world.events.map((event) => (event.type === 'retry_scheduled' ? { ...event, data: { ...event.data, errorClass: 'permission_denied' } } : event));
    expectViolation(i6BoundedRetries, { ...world, events }, /retries error class permission_denied, which is not retryable/);
  });

  it('fails when a retry is claimed after maxRetryAgeMs', async () => {
    const world = await retried({}, 2, 20_000, false);
    expectClean(i6BoundedRetries, world);
    expectViolation(i6BoundedRetries, judgedUnder(world, { maxRetryAgeMs: 10_000 }), /claimed 20000 ms after its first claim, maxRetryAgeMs 10000/);
  });

  it('fails when an exhausted task has no dead letter', async () => {
    const world = await exhausted();
    world.deadLetters = [];
    expectViolation(i6BoundedRetries, world, /ended failed \(attempts_exhausted\) but has no dead letter/);
  });

  it('fails when a dead letter names a task that did not fail', async () => {
    const run = realRun();
    const task = (await run.enqueue())!;
    await run.claim('w0#1', task);
    await run.runToDone('w0#1', task);
    const world = await run.build();
    world.deadLetters = [{ taskId: task, tenant: 'acme', topic: 'topic-1', version: 1, reason: 'deliveries_exhausted', reasons: ['x'], at: 0 }];
    expectViolation(i6BoundedRetries, world, /dead letter for task 1, which ended done, not failed/);
  });
});
