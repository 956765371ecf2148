import { describe, it } from 'vitest';
import { expectClean, expectViolation } from './expect-checker.ts';
import { fakeWorld, type FakeWorld } from './fake-world.ts';
import { i6BoundedRetries } from './i6-bounded-retries.ts';

/** A task that fails retryably on each of its maxAttempts = 2 attempts and ends failed, dead-lettered. */
function exhausted(): { fw: FakeWorld; task: number } {
  const fw = fakeWorld({ maxAttempts: 2, maxDeliveries: 2 });
  const task = fw.enqueue()!;
  fw.claim('w0#1', task);
  fw.fail('w0#1', task, 1_000);
  fw.advance(2_000).claim('w0#1', task);
  fw.fail('w0#1', task);
  return { fw, task };
}

describe('I6 bounded retries', () => {
  it('passes a task that used its attempts, ended failed and was dead-lettered', () => {
    expectClean(i6BoundedRetries, exhausted().fw.build());
  });

  it('fails when a task goes back to ready after its last attempt', () => {
    const world = exhausted().fw.build();
    world.scenario = { ...world.scenario, queue: { maxAttempts: 1, maxDeliveries: 1 } };
    expectViolation(i6BoundedRetries, world, /went back to ready by retry_scheduled .* after its last attempt/);
  });

  it('fails when a task is claimed more often than maxDeliveries', () => {
    const fw = fakeWorld({ maxAttempts: 3, maxDeliveries: 3 });
    const task = fw.enqueue()!;
    for (let n = 0; n < 2; n++) {
      fw.claim('w0#1', task);
      fw.fail('w0#1', task, 0);
    }
    fw.claim('w0#1', task);
    const world = fw.build();
    world.scenario = { ...world.scenario, queue: { maxAttempts: 3, maxDeliveries: 2 } };
    expectViolation(i6BoundedRetries, world, /delivered 3 times, maxDeliveries 2/);
  });

  it('fails when a claim does not count its attempt (a counter bumped on one path only)', () => {
    const { fw, task } = exhausted();
    fw.task(task).attempts = 1;
    expectViolation(i6BoundedRetries, fw.build(), new RegExp(`task ${task} was claimed 2 times but ended with 1 attempts and 2 deliveries`));
  });

  it('fails when the second claim records attempt 1', () => {
    const fw = fakeWorld({ maxAttempts: 3 });
    const task = fw.enqueue()!;
    fw.claim('w0#1', task);
    fw.fail('w0#1', task, 0);
    fw.task(task).attempts = 0;
    fw.claim('w0#1', task);
    fw.task(task).attempts = 2;
    expectViolation(i6BoundedRetries, fw.build(), /claim \d+ is its claim number 2 but records attempt 1/);
  });

  it('fails when a non-retryable error class is retried', () => {
    const fw = fakeWorld({ maxAttempts: 3 });
    const task = fw.enqueue()!;
    fw.claim('w0#1', task);
    fw.fail('w0#1', task, 1_000);
    expectClean(i6BoundedRetries, fw.build());
    const world = fw.build();
    world.events = world.events.map((event) => (event.type === 'retry_scheduled' ? { ...event, data: { ...event.data, errorClass: 'permission_denied' } } : event));
    expectViolation(i6BoundedRetries, world, /retries error class permission_denied, which is not retryable/);
  });

  it('fails when a retry is claimed after maxRetryAgeMs', () => {
    const fw = fakeWorld({ maxRetryAgeMs: 10_000 });
    const task = fw.enqueue()!;
    fw.claim('w0#1', task);
    fw.fail('w0#1', task, 1_000);
    fw.advance(20_000).claim('w0#1', task);
    expectViolation(i6BoundedRetries, fw.build(), /claimed 20000 ms after its first claim, maxRetryAgeMs 10000/);
  });

  it('fails when an exhausted task has no dead letter', () => {
    const world = exhausted().fw.build();
    world.deadLetters = [];
    expectViolation(i6BoundedRetries, world, /ended failed \(attempts_exhausted\) but has no dead letter/);
  });

  it('fails when a dead letter names a task that did not fail', () => {
    const fw = fakeWorld();
    const task = fw.enqueue()!;
    fw.claim('w0#1', task);
    fw.runToDone('w0#1', task);
    const world = fw.build();
    world.deadLetters = [{ taskId: task, tenant: 'acme', topic: 'topic-1', version: 1, reason: 'deliveries_exhausted', reasons: ['x'], at: 0 }];
    expectViolation(i6BoundedRetries, world, /dead letter for task 1, which ended done, not failed/);
  });
});
