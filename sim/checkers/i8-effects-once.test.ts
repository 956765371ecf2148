import { describe, expect, it } from 'vitest';
import { expectClean, expectViolation } from './expect-checker.ts';
import { fakeWorld, type FakeWorld } from './fake-world.ts';
import { i8EffectsOnce } from './i8-effects-once.ts';

function doneRun(): { fw: FakeWorld; task: number } {
  const fw = fakeWorld();
  const task = fw.enqueue()!;
  fw.claim('w0#1', task);
  fw.runToDone('w0#1', task);
  return { fw, task };
}

/** w0#1 made the task's write, died, and w1#1 took the task over (generation 2). */
function takenOverAfterEffect() {
  const fw = fakeWorld();
  const task = fw.enqueue()!;
  const write = fw.task(task).script.steps[0]!.calls[1]!;
  fw.claim('w0#1', task);
  fw.effect('w0#1', task, write.tool, write.args);
  fw.advance(31_000).expireLeases().note('kill', 'w0#1').confirmStopped(task);
  fw.claim('w1#1', task);
  return { fw, task, write };
}

describe('I8 effects once', () => {
  it('passes a done run whose write was executed once, though its takeover asked for it again', () => {
    const { fw, task } = takenOverAfterEffect();
    fw.runToDone('w1#1', task);
    const world = fw.build();
    expectClean(i8EffectsOnce, world);
  });

  it('fails when a run sends an effect at or after its task\'s deadline (Q14: an expired task causes no effect)', () => {
    const build = (sendAfterMs: number) => {
      const fw = fakeWorld();
      const deadline = fw.build().startMs + 10_000;
      const task = fw.enqueue({ deadline })!;
      const write = fw.task(task).script.steps[0]!.calls[1]!;
      fw.claim('w0#1', task);
      fw.advance(sendAfterMs);
      const operation = { requestKey: `${task}:${write.tool}:late`, action: write.tool, tenant: 'acme', taskId: task, generation: 1, actor: 'w0#1', atMs: 0 };
      fw.provider.execute({ ...operation, sentIndex: fw.provider.noteSent(operation) }, write.args);
      return { world: fw.build(), deadline };
    };
    // One millisecond before the deadline is allowed (the script does not intend this key, so only that rule speaks).
    const early = build(9_999).world;
    expect(i8EffectsOnce.check(early).map((violation) => violation.message).filter((message) => message.includes('deadline'))).toEqual([]);
    const { world, deadline } = build(10_000);
    expectViolation(i8EffectsOnce, world, new RegExp(`sent confirm_order \\(1:confirm_order:late\\) at ${deadline}, at or after the task's deadline ${deadline}`));
  });

  it('fails when a repeat overwrote the ledger\'s first record, or an effect_recorded event misstates repeated', () => {
    const { fw, task, write } = takenOverAfterEffect();
    fw.effect('w1#1', task, write.tool, write.args);
    const clean = fw.build();
    const records = clean.events.filter((event) => event.type === 'effect_recorded');
    expect(records.map((event) => [event.generation, event.data.repeated])).toEqual([
      [1, false],
      [2, true],
    ]);
    expectClean(i8EffectsOnce, clean);
    const overwritten = fw.build();
    overwritten.effects = overwritten.effects.map((row) => ({ ...row, generation: 2 }));
    expectViolation(i8EffectsOnce, overwritten, new RegExp(`the ledger row of ${task}:confirm_order:\\w+ names generation 2, but generation 1 recorded it first`));
    const misstated = fw.build();
    const repeat = misstated.events.find((event) => event.type === 'effect_recorded' && event.generation === 2)!;
    repeat.data = { ...repeat.data, repeated: false };
    expectViolation(i8EffectsOnce, misstated, /effect_recorded event \d+ of \S+ says repeated: false, but it is a repeat of event \d+/);
  });

  it('fails when the provider executed one request key twice', () => {
    const { fw } = doneRun();
    const world = fw.build();
    world.provider.executions.push({ ...world.provider.executions[0]! });
    expectViolation(i8EffectsOnce, world, /executed more than once/);
  });

  it('fails when a done run never executed its intended write', () => {
    const fw = fakeWorld();
    const task = fw.enqueue()!;
    const script = fw.task(task).script;
    fw.claim('w0#1', task);
    fw.checkpoint('w0#1', task, 'A', 0, script.steps[0]!).toolResult('w0#1', task, 'lookup_order').checkpoint('w0#1', task, 'B', 1);
    fw.checkpoint('w0#1', task, 'A', 1, script.finalTokens).complete('w0#1', task);
    expectViolation(i8EffectsOnce, fw.build(), /task 1: done, but its confirm_order .* was executed 0 times/);
  });

  it('fails when an effect no script intends was executed', () => {
    const { fw, task } = doneRun();
    fw.provider.execute({ requestKey: `${task}:issue_refund:deadbeef`, action: 'issue_refund', tenant: 'acme', taskId: task, generation: 1, actor: 'w0#1', atMs: 0 }, {});
    expectViolation(i8EffectsOnce, fw.build(), /executed 1:issue_refund:deadbeef, which its script never intends/);
  });

  it('fails when a takeover sends an effect again though the ledger already held its result', () => {
    const { fw, task, write } = takenOverAfterEffect();
    const first = fw.provider.executions[0]!;
    const sentIndex = fw.provider.noteSent({ requestKey: first.requestKey, taskId: task, generation: 2, actor: 'w1#1' });
    fw.provider.execute({ ...first, generation: 2, actor: 'w1#1', sentIndex }, write.args);
    expectViolation(i8EffectsOnce, fw.build(), /w1#1 sent 1:confirm_order:\S+ again \(history \d+\) after the ledger had recorded its result/);
  });
});
