import { describe, expect, it } from 'vitest';
import { expectClean, expectViolation } from './expect-checker.ts';
import { fakeWorld } from './fake-world.ts';
import { i10Supersede } from './i10-supersede.ts';

describe('I10 supersede and stale input', () => {
  it('passes: a waiting v1 is superseded; a running v1 finishes stale_input; v2 finishes done', () => {
    const fw = fakeWorld();
    fw.enqueue({ topic: 'topic-1' });
    fw.enqueue({ topic: 'topic-1', version: 2 });
    const running = fw.enqueue({ topic: 'topic-2' })!;
    fw.claim('w0#1', running);
    const newer = fw.enqueue({ topic: 'topic-2', version: 2 })!;
    fw.runToDone('w0#1', running);
    fw.claim('w0#1', newer);
    fw.runToDone('w0#1', newer);
    expectClean(i10Supersede, fw.build());
  });

  it('fails when a version that had started (and waits for a retry) is superseded', () => {
    const fw = fakeWorld();
    const old = fw.enqueue({ topic: 'topic-1' })!;
    fw.claim('w0#1', old);
    fw.fail('w0#1', old, 5_000);
    fw.enqueue({ topic: 'topic-1', version: 2 });
    expectViolation(i10Supersede, fw.build(), /task 1 \(v1\) was both claimed \(event \d+\) and superseded \(event \d+\)/);
  });

  it('fails when a result from an older version is not marked stale_input', () => {
    const fw = fakeWorld();
    const old = fw.enqueue({ topic: 'topic-1' })!;
    fw.claim('w0#1', old);
    fw.enqueue({ topic: 'topic-1', version: 2 });
    fw.runToDone('w0#1', old);
    const world = fw.build();
    world.events.find((event) => event.type === 'completed')!.data.outcome = 'done';
    expectViolation(i10Supersede, world, /completed with outcome done, expected stale_input/);
  });

  it('fails when a version older than one already queued is accepted to run instead of superseded (Q2)', () => {
    const fw = fakeWorld();
    fw.enqueue({ topic: 'topic-1', version: 2 });
    fw.enqueue({ topic: 'topic-1', version: 1 });
    const world = fw.build();
    expect(world.events.map((event) => [event.taskId, event.type])).toEqual([
      [1, 'enqueued'],
      [2, 'superseded'],
    ]);
    expectClean(i10Supersede, world);
    const late = world.events.find((event) => event.taskId === 2)!;
    late.type = 'enqueued';
    late.data = { to: 'ready', version: 1 };
    expectViolation(i10Supersede, world, /task 2 \(v1\) arrived after v2 \(task 1\) and was enqueued, not superseded/);
  });

  it('fails when an older version is left ready after a newer one was enqueued', () => {
    const fw = fakeWorld();
    fw.enqueue({ topic: 'topic-1' });
    fw.enqueue({ topic: 'topic-1', version: 2 });
    const world = fw.build();
    world.events = world.events.filter((event) => event.type !== 'superseded');
    expectViolation(i10Supersede, world, /task 1 \(v1\) had not started and was still ready when v2 \(task 2\) was enqueued/);
  });
});
