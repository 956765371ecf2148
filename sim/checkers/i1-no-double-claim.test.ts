import { describe, it } from 'vitest';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { i1NoDoubleClaim } from './i1-no-double-claim.ts';
import { realRun } from './__test-helpers__/real-run.ts';

/** The real queue's takeover: w0#1's lease expires, its stop is confirmed, w1#1 claims and finishes. */
async function takeover() {
  const run = realRun();
  const task = (await run.enqueue())!;
  await run.claim('w0#1', task);
  run.advance(31_000);
  await run.expireLeases();
  run.note('kill', 'w0#1');
  await run.confirmStopped(task);
  await run.claim('w1#1', task);
  await run.runToDone('w1#1', task);
  return { world: await run.build(), task };
}

describe('I1 no double claim', () => {
  it('passes a takeover: the second claim comes after the first holder was confirmed stopped', async () => {
    expectClean(i1NoDoubleClaim, (await takeover()).world);
  });

  it('fails when a task is claimed again while its first holder is still running', async () => {
    const { world } = await takeover();
    // The bad edit: the expiry and the confirmation never happened, so w1#1 claimed a running task.
    world.events = world.events.filter((event) => event.type !== 'lease_expired' && event.type !== 'stop_confirmed');
    expectViolation(i1NoDoubleClaim, world, /task 1: claimed by w1#1 at generation 2 while running \(held by w0#1@g1\)/);
  });

  it('fails when a generation is skipped', async () => {
    const { world } = await takeover();
    const second = world.events.filter((event) => event.type === 'claimed')[1]!;
    second.data.generation = 3;
    second.generation = 3;
    expectViolation(i1NoDoubleClaim, world, /granted generation 3, expected 2/);
  });

  it('fails when the history hands one generation to two workers', async () => {
    const { world, task } = await takeover();
    const invoke = world.history.invoke('w2#1', 'claim', {});
    world.history.ok(invoke, { taskId: task, generation: 1, data: { ev: world.events.length } });
    expectViolation(i1NoDoubleClaim, world, /generation 1 was handed to w2#1 by a second claim/);
  });
});
