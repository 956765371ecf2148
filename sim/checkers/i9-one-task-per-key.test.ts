import { describe, it } from 'vitest';
import { expectClean, expectViolation } from './expect-checker.ts';
import { fakeWorld } from './fake-world.ts';
import { i9OneTaskPerKey } from './i9-one-task-per-key.ts';

describe('I9 one task per (tenant, topic, version)', () => {
  it('passes a duplicate enqueue answered with the same id and a conflicting one refused', () => {
    const fw = fakeWorld();
    const task = fw.enqueue({ topic: 'topic-1' })!;
    const first = fw.enqueued[0]!.arrival;
    fw.enqueued.push({ arrival: first, result: { ok: true, taskId: task, status: 'duplicate' } });
    const changed = { ...first, request: { ...first.request, priority: 29 } };
    fw.enqueued.push({ arrival: changed, result: { ok: false, error: 'idempotency_conflict', message: 'conflict', taskId: task } });
    fw.rejections.push({ tenant: 'acme', topic: 'topic-1', version: 1, reason: 'idempotency_conflict', at: fw.now });
    expectClean(i9OneTaskPerKey, fw.build());
  });

  it('fails when two tasks hold the same key', () => {
    const fw = fakeWorld();
    fw.enqueue({ topic: 'topic-1' });
    fw.enqueue({ topic: 'topic-1' });
    expectViolation(i9OneTaskPerKey, fw.build(), /tasks 1 and 2 both hold acme\/topic-1\/v1/);
  });

  it('fails when an enqueue with different input is accepted as a duplicate', () => {
    const fw = fakeWorld();
    const task = fw.enqueue({ topic: 'topic-1' })!;
    const first = fw.enqueued[0]!.arrival;
    fw.enqueued.push({ arrival: { ...first, request: { ...first.request, priority: 29 } }, result: { ok: true, taskId: task, status: 'duplicate' } });
    expectViolation(i9OneTaskPerKey, fw.build(), /with different input was accepted \(duplicate\)/);
  });

  it('fails when a duplicate is answered with another id', () => {
    const fw = fakeWorld();
    fw.enqueue({ topic: 'topic-1' });
    fw.enqueue({ topic: 'topic-2' });
    const first = fw.enqueued[0]!.arrival;
    fw.enqueued.push({ arrival: first, result: { ok: true, taskId: 2, status: 'duplicate' } });
    expectViolation(i9OneTaskPerKey, fw.build(), /answered task 2, but the key is held by task 1/);
  });
});
