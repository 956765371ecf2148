import { describe, expect, it } from 'vitest';
import type { QueueConfig } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { i7HoldsClosed, i7Settlement } from './i7-settlement.ts';
import { realRun, type RealRun } from './__test-helpers__/real-run.ts';

/** The real queue: one long-tier task run to done; `more` acts on the run before it is read. */
async function doneRun(more: (run: RealRun) => Promise<void> = async () => {}, overrides: Partial<WorldResult> = {}): Promise<{ world: WorldResult; task: number }> {
  const run = realRun();
  const task = (await run.enqueue({ tier: 'long' }))!;
  await run.claim('w0#1', task);
  await run.runToDone('w0#1', task);
  await more(run);
  return { world: await run.build(overrides), task };
}

/**
 * On the real queue: w0#1 checkpoints A of step 0 and goes silent; its lease expires. With `release`
 * the reconciler closes the hold of the uncertain run once holdTtlMs passed. Then w0#1's death is
 * confirmed, and (unless maxAttempts ends it) w1#1 takes over from checkpoint A and finishes.
 */
async function silentHolder(config: Partial<QueueConfig>, release: boolean): Promise<{ world: WorldResult; task: number }> {
  const run = realRun(config);
  const task = (await run.enqueue())!;
  const script = run.scriptOf(await run.claim('w0#1', task));
  const step = script.steps[0]!;
  await run.checkpoint('w0#1', task, 'A', 0, step);
  run.advance(31_000);
  await run.expireLeases();
  if (release) {
    run.advance(15 * 60_000);
    expect(await run.reconcile()).toMatchObject({ releasedHolds: 1 });
  }
  run.advance(10_000).note('kill', 'w0#1');
  const confirmed = await run.confirmStopped(task);
  if (confirmed.ok && confirmed.next === 'ready') {
    await run.claim('w1#1', task);
    for (const call of step.calls) {
      if (call.tool === 'confirm_order') await run.effect('w1#1', task, call.tool, call.args);
      await run.toolResult('w1#1', task, call.tool);
    }
    await run.checkpoint('w1#1', task, 'B', 1);
    await run.checkpoint('w1#1', task, 'A', 1, script.finalTokens);
    await run.complete('w1#1', task);
  }
  return { world: await run.build(), task };
}

function withHold(world: WorldResult, task: number, edit: (hold: WorldResult['holds'][number]) => WorldResult['holds'][number]): WorldResult {
  return { ...world, holds: world.holds.map((hold) => (hold.taskId === task ? edit(hold) : hold)) };
}

describe('I7 one settlement per run', () => {
  it('passes a done run settled once with its checkpointed usage, and a superseded task released', async () => {
    const { world } = await doneRun(async (run) => {
      await run.enqueue({ topic: 'topic-7' });
      await run.enqueue({ topic: 'topic-7', version: 2 });
    });
    expect(world.holds.map((hold) => hold.state)).toEqual(['settled', 'released', 'held']);
    expectClean(i7Settlement, world);
  });

  it('passes a run taken over after a kill: charged what the checkpoints recorded', async () => {
    expectClean(i7Settlement, (await silentHolder({}, false)).world);
  });

  it('passes a run whose hold the reconciler closed (holdTtlMs): charged what was checkpointed then, the end finds it closed', async () => {
    const { world, task } = await silentHolder({}, true);
    expect(world.events.filter((event) => event.taskId === task).at(-1)?.data.settlement).toBe('already_closed');
    expectClean(i7Settlement, world);
  });

  it('fails when a reconciler closure charged other than the usage checkpointed when it closed', async () => {
    const { world, task } = await silentHolder({}, true);
    const final = world.checkpoints.get(task)!.usage;
    const finalCredits = Math.ceil((final.inputTokens + final.outputTokens) / 1000);
    const bad = withHold(world, task, (hold) => ({ ...hold, chargedCredits: finalCredits, usage: final }));
    expectViolation(i7Settlement, bad, /hold settled charging \d+ credits .* when the reconciler closed it at \d+/);
  });

  it('fails when a later end closes a hold the reconciler released again (the end overwrote the release)', async () => {
    const { world, task } = await silentHolder({ maxAttempts: 1 }, true);
    const end = world.events.filter((event) => event.taskId === task).at(-1)!;
    expect(end.data).toMatchObject({ to: 'failed', settlement: 'already_closed' });
    expectClean(i7Settlement, world);
    // What a closure without its `hold_state = 'held'` condition leaves: the end event closed the hold
    // again, and the hold's row now names the end, not the reconciler's release.
    const hold = world.holds.find((candidate) => candidate.taskId === task)!;
    const events = world.events.map((event) => (event === end ? { ...end, data: { ...end.data, settlement: hold.state } } : event));
    const bad = withHold({ ...world, events }, task, (candidate) => ({ ...candidate, reason: 'attempts_exhausted', closedAt: end.at }));
    const violations = i7Settlement.check(bad).map((violation) => violation.message);
    // The credit ledger (on a real run, RealRun.build reads it) still holds the reconciler's closure at
    // its own time: the overwritten hold no longer agrees with it either.
    expect(violations).toEqual([
      expect.stringMatching(/reconcile passes released 1 holds \(the last at history entry \d+\) but only 0 holds end closed by the reconciler/),
      expect.stringMatching(/I7 ledger: task \d+: hold settled \(acme, \d+ credits at \d+\) but its ledger row is charge \(acme, \d+ credits at \d+\)$/),
    ]);
  });

  it('fails when the charge is not the checkpointed usage', async () => {
    const { world, task } = await doneRun();
    expectViolation(i7Settlement, withHold(world, task, (hold) => ({ ...hold, chargedCredits: 99 })), /task 1: hold settled charging 99 credits/);
  });

  it('fails when a hold is closed twice', async () => {
    const { world, task } = await doneRun();
    const last = world.events.at(-1)!;
    const note = { ...last, id: last.id + 1, seq: last.seq + 1, type: 'note', data: { settlement: 'settled' } };
    expect(note.taskId).toBe(task);
    expectViolation(i7Settlement, { ...world, events: [...world.events, note] }, /hold closed by 2 events/);
  });

  it('fails when a task ended but its hold is still held', async () => {
    const { world, task } = await doneRun();
    expectViolation(i7Settlement, withHold(world, task, (hold) => ({ ...hold, state: 'held' as const })), /ended done but its hold is still held/);
  });

  it('fails when a done run is charged more than one model call beyond its fault-free run', async () => {
    const run = realRun();
    const task = (await run.enqueue())!;
    await run.claim('w0#1', task);
    // Two extra model calls were checkpointed before the real run: charged is the checkpointed usage, but too much.
    await run.checkpoint('w0#1', task, 'A', 0, { inputTokens: 5_000, outputTokens: 100 });
    await run.checkpoint('w0#1', task, 'A', 0, { inputTokens: 5_000, outputTokens: 100 });
    await run.runToDone('w0#1', task);
    expectViolation(i7Settlement, await run.build(), /done run charged 4 model calls and 12300 tokens; the fault-free run uses 2 and 2100/);
  });
});

describe('I7 every hold closed once drained', () => {
  it('passes when every hold is settled or released', async () => {
    expectClean(i7HoldsClosed, (await doneRun()).world);
  });

  it('fails when a hold is still held after the run drained', async () => {
    const { world } = await doneRun(async (run) => {
      await run.enqueue();
    }, { drained: true });
    expectViolation(i7HoldsClosed, world, /task 2: hold still held after the run drained/);
  });
});
