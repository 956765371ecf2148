import { describe, it } from 'vitest';
import { expectClean, expectViolation } from './expect-checker.ts';
import { fakeWorld } from './fake-world.ts';
import { i4Capacity } from './i4-capacity.ts';

describe('I4 capacity and recorded rejections', () => {
  it('passes a full queue that refuses a new topic and records it, and accepts a replacement', () => {
    const fw = fakeWorld({ capacity: 2, globalLimit: 2 });
    fw.enqueue({ topic: 'topic-1' });
    fw.enqueue({ topic: 'topic-2' });
    fw.enqueue({ topic: 'topic-3' });
    fw.enqueue({ topic: 'topic-2', version: 2 });
    const world = fw.build();
    expectClean(i4Capacity, world);
  });

  it('fails when more tasks are live than the capacity', () => {
    const fw = fakeWorld({ capacity: 3, globalLimit: 2 });
    fw.enqueue();
    fw.enqueue();
    fw.enqueue();
    const world = fw.build();
    world.scenario = { ...world.scenario, queue: { capacity: 2, globalLimit: 2 } };
    expectViolation(i4Capacity, world, /3 tasks are live, capacity 2/);
  });

  it('fails when a queue_full refusal is not in the rejections', () => {
    const fw = fakeWorld({ capacity: 2, globalLimit: 2 });
    fw.enqueue();
    fw.enqueue();
    fw.enqueue();
    const world = fw.build();
    world.final = { ...world.final, rejections: [] };
    expectViolation(i4Capacity, world, /refused 1 time\(s\) but rejections record 0/);
  });

  it('fails when a new topic is refused queue_full while there was room', () => {
    const fw = fakeWorld({ capacity: 5, globalLimit: 2 });
    fw.enqueue();
    const request = { tenant: 'acme', topic: 'topic-9', version: 1, priority: 1, input: null };
    fw.arrivals.push({ atMs: 0, request });
    fw.call('client', 'enqueue', {}, () => {
      fw.rejections.push({ tenant: 'acme', topic: 'topic-9', version: 1, reason: 'queue_full', at: fw.now });
      fw.enqueued.push({ arrival: { atMs: 0, request }, result: { ok: false, error: 'queue_full', message: 'full' } });
      return { ok: false, reason: 'queue_full' };
    });
    expectViolation(i4Capacity, fw.build(), /refused queue_full with 1 live tasks, capacity 5/);
  });
});
