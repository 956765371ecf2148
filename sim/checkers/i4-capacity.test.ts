import { describe, expect, it } from 'vitest';
import type { QueueConfig } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { i4Capacity } from './i4-capacity.ts';
import { realRun } from './__test-helpers__/real-run.ts';
import { buildWithBudgets, budgetRun, enqueueWith, withEvents } from './__test-helpers__/budget-run.ts';

/** `count` enqueues of new topics into the real queue under `config`. */
async function enqueued(config: Partial<QueueConfig>, count: number): Promise<WorldResult> {
  const run = realRun(config);
  for (let index = 0; index < count; index++) await run.enqueue();
  return await run.build();
}

/** The same books judged against another configuration (a new object: analyses are memoised). */
function judgedUnder(world: WorldResult, queue: Partial<QueueConfig>): WorldResult {
  return { ...world, scenario: { ...world.scenario, queue } };
}

describe('I4 capacity and recorded rejections', () => {
  it('passes a full queue that refuses a new topic and records it, and accepts a replacement', async () => {
    const run = realRun({ capacity: 2, globalLimit: 2 });
    await run.enqueue({ topic: 'topic-1' });
    await run.enqueue({ topic: 'topic-2' });
    await run.enqueue({ topic: 'topic-3' });
    await run.enqueue({ topic: 'topic-2', version: 2 });
    const world = await run.build();
    expectClean(i4Capacity, world);
    // The run really was full and really replaced: one refusal, one replacement.
    expectViolation(i4Capacity, { ...world, final: { ...world.final, rejections: [] } }, /topic-3 .*refused 1 time\(s\) but rejections record 0/);
  });

  it('fails when more tasks are live than the capacity', async () => {
    const world = await enqueued({ capacity: 3, globalLimit: 2 }, 3);
    expectClean(i4Capacity, world);
    expectViolation(i4Capacity, judgedUnder(world, { capacity: 2, globalLimit: 2 }), /3 tasks are live, capacity 2/);
  });

  it('fails when a queue_full refusal is not in the rejections', async () => {
    const world = await enqueued({ capacity: 2, globalLimit: 2 }, 3);
    expectClean(i4Capacity, world);
    expectViolation(i4Capacity, { ...world, final: { ...world.final, rejections: [] } }, /refused 1 time\(s\) but rejections record 0/);
  });

  it('fails when a rejection is recorded that no client was given', async () => {
    const world = await enqueued({ capacity: 2, globalLimit: 2 }, 2);
    const phantom = { tenant: 'acme', topic: 'topic-9', version: 1, reason: 'queue_full', at: world.final.at } as WorldResult['final']['rejections'][number];
    expectViolation(i4Capacity, { ...world, final: { ...world.final, rejections: [phantom] } }, /rejections record acme \/ topic-9 \/ 1 \/ queue_full 1 time\(s\) but the client was refused 0/);
  });

  it('fails when a new topic is refused queue_full while there was room', async () => {
    const world = await enqueued({ capacity: 1, globalLimit: 1 }, 2);
    expectClean(i4Capacity, world);
    expectViolation(i4Capacity, judgedUnder(world, { capacity: 5, globalLimit: 1 }), /refused queue_full with 1 live tasks, capacity 5/);
  });
});

describe('I4 with critical headroom (A2)', () => {
  it('lets critical work exceed capacity within its headroom, and no further', async () => {
    const run = budgetRun({ capacity: 2, globalLimit: 2, perTenantLimit: 2, criticalHeadroom: 2 });
    await enqueueWith(run, { tenant: 'a' });
    await enqueueWith(run, { tenant: 'a' });
    expect(await enqueueWith(run, { tenant: 'b' })).toBeUndefined();
    expect(await enqueueWith(run, { tenant: 'b', critical: true })).toBeDefined();
    expect(await enqueueWith(run, { tenant: 'b', critical: true })).toBeDefined();
    expect(await enqueueWith(run, { tenant: 'b', critical: true })).toBeUndefined();
    const world = await buildWithBudgets(run);
    expectClean(i4Capacity, world);
    expectViolation(i4Capacity, judgedUnder(world, { ...world.scenario.queue, criticalHeadroom: 1 }), /4 tasks are live, capacity 2 \(\+1 critical headroom in use\)/);
    // The same tasks, none of them critical: nothing allowed them past capacity.
    const ordinary = withEvents(world, (events) => events.map((event) => (event.type === 'enqueued' ? { ...event, data: { ...event.data, critical: false } } : event)));
    expectViolation(i4Capacity, ordinary, /3 tasks are live, capacity 2\n/);
  });

  it('holds every exceeds_budget refusal to its recorded rejection', async () => {
    const run = budgetRun({ budgets: { seats: { kind: 'concurrency', limit: 1 } } });
    expect(await enqueueWith(run, { needs: { seats: 2 } })).toBeUndefined();
    const world = await buildWithBudgets(run);
    expectClean(i4Capacity, world);
    expectViolation(i4Capacity, { ...world, final: { ...world.final, rejections: [] } }, /refused 1 time\(s\) but rejections record 0/);
  });
});

describe('I4: a replacement takes over the headroom place of the critical version it replaced', () => {
  it('passes a newer ordinary version that replaced a waiting critical one over capacity, and fails it without the critical predecessor', async () => {
    const run = budgetRun({ capacity: 1, globalLimit: 1, perTenantLimit: 1, criticalHeadroom: 1 });
    await enqueueWith(run, { topic: 'a' });
    expect(await enqueueWith(run, { topic: 'b', critical: true })).toBeDefined();
    expect(await enqueueWith(run, { topic: 'b', version: 2 })).toBeDefined();
    const world = await buildWithBudgets(run);
    expectClean(i4Capacity, world);
    const ordinary = withEvents(world, (events) => events.map((event) => (event.type === 'enqueued' ? { ...event, data: { ...event.data, critical: false } } : event)));
    expectViolation(i4Capacity, ordinary, /2 tasks are live, capacity 1/);
  });
});
