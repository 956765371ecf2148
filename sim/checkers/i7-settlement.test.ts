import { describe, expect, it } from 'vitest';
import { expectClean, expectViolation } from './expect-checker.ts';
import { fakeWorld, type FakeWorld } from './fake-world.ts';
import { i7HoldsClosed, i7Settlement } from './i7-settlement.ts';

function doneRun(): { fw: FakeWorld; task: number } {
  const fw = fakeWorld();
  const task = fw.enqueue({ tier: 'long' })!;
  fw.claim('w0#1', task);
  fw.runToDone('w0#1', task);
  return { fw, task };
}

describe('I7 one settlement per run', () => {
  it('passes a done run settled once with its checkpointed usage, and a superseded task released', () => {
    const { fw } = doneRun();
    fw.enqueue({ topic: 'topic-7' });
    fw.enqueue({ topic: 'topic-7', version: 2 });
    expectClean(i7Settlement, fw.build());
  });

  it('passes a run taken over after a kill: charged what the checkpoints recorded', () => {
    const fw = fakeWorld();
    const task = fw.enqueue()!;
    const step = fw.task(task).script.steps[0]!;
    fw.claim('w0#1', task);
    fw.checkpoint('w0#1', task, 'A', 0, step);
    fw.advance(31_000).expireLeases().note('kill', 'w0#1').confirmStopped(task);
    fw.claim('w1#1', task);
    for (const call of step.calls) {
      if (call.tool === 'confirm_order') fw.effect('w1#1', task, call.tool, call.args);
      fw.toolResult('w1#1', task, call.tool);
    }
    fw.checkpoint('w1#1', task, 'B', 1).checkpoint('w1#1', task, 'A', 1, fw.task(task).script.finalTokens).complete('w1#1', task);
    expectClean(i7Settlement, fw.build());
  });

  /** A run whose hold the reconciler closed while it sat uncertain (holdTtlMs), then taken over and finished. */
  function releasedThenFinished(): { fw: FakeWorld; task: number } {
    const fw = fakeWorld();
    const task = fw.enqueue()!;
    const step = fw.task(task).script.steps[0]!;
    fw.claim('w0#1', task);
    fw.checkpoint('w0#1', task, 'A', 0, step);
    fw.advance(31_000).expireLeases().advance(15 * 60_000).releaseHold(task).advance(10_000).note('kill', 'w0#1').confirmStopped(task);
    fw.claim('w1#1', task);
    for (const call of step.calls) {
      if (call.tool === 'confirm_order') fw.effect('w1#1', task, call.tool, call.args);
      fw.toolResult('w1#1', task, call.tool);
    }
    fw.checkpoint('w1#1', task, 'B', 1).checkpoint('w1#1', task, 'A', 1, fw.task(task).script.finalTokens).complete('w1#1', task);
    return { fw, task };
  }

  it('passes a run whose hold the reconciler closed (holdTtlMs): charged what was checkpointed then, the end finds it closed', () => {
    const { fw, task } = releasedThenFinished();
    const world = fw.build();
    expect(world.events.filter((event) => event.taskId === task).at(-1)?.data.settlement).toBe('already_closed');
    expectClean(i7Settlement, world);
  });

  it('fails when a reconciler closure charged other than the usage checkpointed when it closed', () => {
    const { fw, task } = releasedThenFinished();
    const world = fw.build();
    const final = world.checkpoints.get(task)!.usage;
    const finalCredits = Math.ceil((final.inputTokens + final.outputTokens) / 1000);
    world.holds = world.holds.map((hold) => (hold.taskId === task ? { ...hold, chargedCredits: finalCredits, usage: final } : hold));
    expectViolation(i7Settlement, world, /hold settled charging \d+ credits .* when the reconciler closed it at \d+/);
  });

  it('fails when a later end closes a hold the reconciler released again (the end overwrote the release)', () => {
    const fw = fakeWorld({ maxAttempts: 1 });
    const task = fw.enqueue()!;
    fw.claim('w0#1', task);
    fw.checkpoint('w0#1', task, 'A', 0, fw.task(task).script.steps[0]!);
    fw.advance(31_000).expireLeases().advance(15 * 60_000).releaseHold(task).advance(10_000).note('kill', 'w0#1').confirmStopped(task);
    const world = fw.build();
    const end = world.events.filter((event) => event.taskId === task).at(-1)!;
    expect(end.data).toMatchObject({ to: 'failed', settlement: 'already_closed' });
    expectClean(i7Settlement, world);
    // What a closure without its `hold_state = 'held'` condition leaves: the end event closed the hold
    // again, and the hold's row now names the end, not the reconciler's release.
    const hold = world.holds.find((candidate) => candidate.taskId === task)!;
    end.data = { ...end.data, settlement: hold.state };
    world.holds = world.holds.map((candidate) => (candidate.taskId === task ? { ...candidate, reason: 'attempts_exhausted', closedAt: end.at } : candidate));
    const violations = i7Settlement.check(world).map((violation) => violation.message);
    expect(violations).toEqual([expect.stringMatching(/reconcile passes released 1 holds \(the last at history entry \d+\) but only 0 holds end closed by the reconciler/)]);
  });

  it('fails when the charge is not the checkpointed usage', () => {
    const { fw, task } = doneRun();
    const world = fw.build();
    world.holds = world.holds.map((hold) => (hold.taskId === task ? { ...hold, chargedCredits: 99 } : hold));
    expectViolation(i7Settlement, world, /task 1: hold settled charging 99 credits/);
  });

  it('fails when a hold is closed twice', () => {
    const { fw, task } = doneRun();
    fw.rawEvent(task, 'note', { settlement: 'settled' });
    expectViolation(i7Settlement, fw.build(), /hold closed by 2 events/);
  });

  it('fails when a task ended but its hold is still held', () => {
    const { fw, task } = doneRun();
    const world = fw.build();
    world.holds = world.holds.map((hold) => (hold.taskId === task ? { ...hold, state: 'held' as const } : hold));
    expectViolation(i7Settlement, world, /ended done but its hold is still held/);
  });

  it('fails when a done run is charged more than one model call beyond its fault-free run', () => {
    const fw = fakeWorld();
    const task = fw.enqueue()!;
    fw.claim('w0#1', task);
    // Two extra model calls were checkpointed before the real run: charged is the checkpointed usage, but too much.
    fw.checkpoint('w0#1', task, 'A', 0, { inputTokens: 5_000, outputTokens: 100 }).checkpoint('w0#1', task, 'A', 0, { inputTokens: 5_000, outputTokens: 100 });
    fw.runToDone('w0#1', task);
    expectViolation(i7Settlement, fw.build(), /done run charged 4 model calls and 12300 tokens; the fault-free run uses 2 and 2100/);
  });
});

describe('I7 every hold closed once drained', () => {
  it('passes when every hold is settled or released', () => {
    expectClean(i7HoldsClosed, doneRun().fw.build());
  });

  it('fails when a hold is still held after the run drained', () => {
    const { fw } = doneRun();
    fw.enqueue();
    expectViolation(i7HoldsClosed, fw.build({ drained: true }), /task 2: hold still held after the run drained/);
  });
});
