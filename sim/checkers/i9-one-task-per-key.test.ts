import { describe, expect, it } from 'vitest';
import type { WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { i9OneTaskPerKey } from './i9-one-task-per-key.ts';
import { realRun } from './__test-helpers__/real-run.ts';

/** The real queue: topic-1, its exact resend (duplicate), the same key with other input (conflict), topic-2. */
async function resends(): Promise<WorldResult> {
  const run = realRun();
  await run.enqueue({ topic: 'topic-1' });
  await run.enqueue({ topic: 'topic-1' });
  await run.enqueue({ topic: 'topic-1', priority: 29 });
  await run.enqueue({ topic: 'topic-2' });
  return await run.build();
}

describe('I9 one task per (tenant, topic, version)', () => {
  it('passes a duplicate enqueue answered with the same id and a conflicting one refused', async () => {
    const world = await resends();
    expectClean(i9OneTaskPerKey, world);
    // What the queue answered, so the edits below break something real.
    const answers = world.enqueued.map(({ result }) => (result.ok ? result.status : result.error));
    expect(answers).toEqual(['enqueued', 'duplicate', 'idempotency_conflict', 'enqueued']);
  });

  it('fails when two tasks hold the same key', async () => {
    const world = await resends();
    const tasks = world.final.tasks.map((task) => (task.topic === 'topic-2' ? { ...task, topic: 'topic-1' } : task));
    expectViolation(i9OneTaskPerKey, { ...world, final: { ...world.final, tasks } }, /tasks 1 and 2 both hold acme\/topic-1\/v1/);
  });

  it('fails when an enqueue with different input is accepted as a duplicate', async () => {
    const world = await resends();
    world.enqueued[2] = { ...world.enqueued[2]!, result: { ok: true, taskId: 1, status: 'duplicate' } };
    expectViolation(i9OneTaskPerKey, world, /with different input was accepted \(duplicate\)/);
  });

  it('fails when a resend of a held key is answered as a new task', async () => {
    const world = await resends();
    world.enqueued[1] = { ...world.enqueued[1]!, result: { ok: true, taskId: 1, status: 'enqueued' } };
    expectViolation(i9OneTaskPerKey, world, /acme\/topic-1\/v1 resent the same input and was answered enqueued, not duplicate/);
  });

  it('fails when a duplicate is answered with another id', async () => {
    const world = await resends();
    world.enqueued[1] = { ...world.enqueued[1]!, result: { ok: true, taskId: 2, status: 'duplicate' } };
    expectViolation(i9OneTaskPerKey, world, /answered task 2, but the key is held by task 1/);
  });

  it('fails when a conflict is refused though the input is the same', async () => {
    const world = await resends();
    world.enqueued[1] = { ...world.enqueued[1]!, result: { ok: false, error: 'idempotency_conflict', message: 'conflict', taskId: 1 } };
    expectViolation(i9OneTaskPerKey, world, /refused idempotency_conflict though the input is the same/);
  });
});
