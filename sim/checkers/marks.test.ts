import { describe, expect, it } from 'vitest';
import { fakeWorld } from './fake-world.ts';
import { ALL_MARKS, coverageMarks, REQUIRED_MARKS } from './marks.ts';

describe('S8 coverage marks', () => {
  it('reports every mark, zero when not reached, and requires only marks it knows', () => {
    const marks = coverageMarks(fakeWorld().build());
    expect(Object.keys(marks).sort()).toEqual([...ALL_MARKS].sort());
    expect(Object.values(marks).every((count) => count === 0)).toBe(true);
    for (const mark of REQUIRED_MARKS) expect(ALL_MARKS).toContain(mark);
  });

  it('counts a zombie: paused, taken over, refused on waking, resumed from its checkpoint A', () => {
    const fw = fakeWorld();
    const task = fw.enqueue()!;
    fw.claim('w0#1', task);
    fw.checkpoint('w0#1', task, 'A', 0, { inputTokens: 1_000, outputTokens: 200 });
    fw.note('pause', 'w0#1').advance(31_000).expireLeases().note('kill', 'w0#1').confirmStopped(task);
    fw.claim('w1#1', task);
    fw.rawEvent(task, 'task_resumed', { checkpointKind: 'A', checkpointSeq: 1 }, { workerId: 'w1#1', generation: 2 });
    fw.staleWrite('w0#1', task, 1, 'checkpoint');
    fw.runToDone('w1#1', task);
    const marks = coverageMarks(fw.build());
    expect(marks).toMatchObject({
      stale_lease_rejected: 1,
      zombie_write_rejected: 1,
      takeover_from_checkpoint_A: 1,
      takeover_fresh: 0,
      lease_expired: 1,
      stop_confirmed: 1,
      pause: 1,
      kill: 1,
      settled: 1,
      provider_repeat: 0,
    });
  });

  it('counts a fresh takeover, a supersede and a queue_full refusal', () => {
    const fw = fakeWorld({ capacity: 2, globalLimit: 2 });
    const task = fw.enqueue({ topic: 'topic-1' })!;
    fw.claim('w0#1', task);
    fw.advance(31_000).expireLeases().note('kill', 'w0#1').confirmStopped(task);
    fw.claim('w1#1', task);
    fw.enqueue({ topic: 'topic-2' });
    fw.enqueue({ topic: 'topic-3' });
    fw.enqueue({ topic: 'topic-2', version: 2 });
    expect(coverageMarks(fw.build())).toMatchObject({ takeover_fresh: 1, superseded: 1, queue_full: 1, hold_released: 1 });
  });
});
