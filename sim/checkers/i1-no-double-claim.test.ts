import { describe, it } from 'vitest';
import { expectClean, expectViolation } from './expect-checker.ts';
import { fakeWorld } from './fake-world.ts';
import { i1NoDoubleClaim } from './i1-no-double-claim.ts';

describe('I1 no double claim', () => {
  it('passes a takeover: the second claim comes after the first holder was confirmed stopped', () => {
    const fw = fakeWorld();
    const task = fw.enqueue()!;
    fw.claim('w0#1', task);
    fw.advance(31_000).expireLeases().note('kill', 'w0#1').confirmStopped(task);
    fw.claim('w1#1', task);
    fw.runToDone('w1#1', task);
    expectClean(i1NoDoubleClaim, fw.build());
  });

  it('fails when a task is claimed again while its first holder is still running', () => {
    const fw = fakeWorld();
    const task = fw.enqueue()!;
    fw.claim('w0#1', task);
    fw.claim('w1#1', task);
    expectViolation(i1NoDoubleClaim, fw.build(), /task 1: claimed by w1#1 at generation 2 while running \(held by w0#1@g1\)/);
  });

  it('fails when a generation is skipped', () => {
    const fw = fakeWorld();
    const task = fw.enqueue()!;
    fw.claim('w0#1', task);
    const world = fw.build();
    world.events[1]!.data.generation = 2;
    world.events[1]!.generation = 2;
    expectViolation(i1NoDoubleClaim, world, /granted generation 2, expected 1/);
  });

  it('fails when the history hands one generation to two workers', () => {
    const fw = fakeWorld();
    const task = fw.enqueue()!;
    fw.claim('w0#1', task);
    fw.call('w1#1', 'claim', {}, () => ({ ok: true, fields: { taskId: task, generation: 1 } }));
    expectViolation(i1NoDoubleClaim, fw.build(), /generation 1 was handed to w1#1 by a second claim/);
  });
});
