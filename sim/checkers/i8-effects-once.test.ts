import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { i8EffectsOnce } from './i8-effects-once.ts';
import { realRun, type RealRun } from './__test-helpers__/real-run.ts';

async function doneRun(): Promise<{ world: WorldResult; task: number }> {
  const run = realRun();
  const task = (await run.enqueue())!;
  await run.claim('w0#1', task);
  await run.runToDone('w0#1', task);
  return { world: await run.build(), task };
}

/** On the real queue: w0#1 made the task's write and recorded it, died, and w1#1 took the task over (generation 2). */
async function takenOverAfterEffect(keyOf?: RealRun['keyOf']) {
  const run = realRun();
  if (keyOf !== undefined) run.keyOf = keyOf;
  const task = (await run.enqueue())!;
  const claimed = await run.claim('w0#1', task);
  const write = run.scriptOf(claimed).steps[0]!.calls[1]!;
  await run.effect('w0#1', task, write.tool, write.args);
  run.advance(31_000);
  await run.expireLeases();
  run.note('kill', 'w0#1');
  await run.confirmStopped(task);
  await run.claim('w1#1', task);
  return { run, task, write };
}

describe('I8 effects once', () => {
  it('passes a done run whose write was executed once, though its takeover asked for it again', async () => {
    const { run, task } = await takenOverAfterEffect();
    await run.runToDone('w1#1', task);
    const world = await run.build();
    expect(world.history.entries().filter((entry) => entry.type === 'invoke' && entry.op === 'effectResult').length).toBe(2);
    expect(world.provider.executions.length).toBe(1);
    expectClean(i8EffectsOnce, world);
  });

  it('fails when a run sends an effect at or after its task\'s deadline (Q14: an expired task causes no effect)', async () => {
    const build = async (sendAfterMs: number) => {
      const run = realRun();
      const deadline = run.clock.now() + 10_000;
      const task = (await run.enqueue({ deadline }))!;
      const claimed = await run.claim('w0#1', task);
      const write = run.scriptOf(claimed).steps[0]!.calls[1]!;
      run.advance(sendAfterMs);
      const operation = { requestKey: `${task}:${write.tool}:late`, action: write.tool, tenant: 'acme', taskId: task, generation: 1, actor: 'w0#1', atMs: 0 };
      run.provider.execute({ ...operation, sentIndex: run.provider.noteSent(operation) }, write.args);
      return { world: await run.build(), deadline };
    };
    // One millisecond before the deadline is allowed (the script does not intend this key, so only that rule speaks).
    const early = (await build(9_999)).world;
    expect(i8EffectsOnce.check(early).map((violation) => violation.message).filter((message) => message.includes('deadline'))).toEqual([]);
    const { world, deadline } = await build(10_000);
    expectViolation(i8EffectsOnce, world, new RegExp(`sent confirm_order \\(1:confirm_order:late\\) at ${deadline}, at or after the task's deadline ${deadline}`));
  });

  it('fails when a read starts at or after its task\'s deadline (Q14, A8: the deadline is checked before each tool call)', async () => {
    const build = async (startAfterMs: number) => {
      const run = realRun();
      const deadline = run.clock.now() + 10_000;
      const task = (await run.enqueue({ deadline }))!;
      await run.claim('w0#1', task);
      run.advance(startAfterMs);
      run.provider.noteCall({ taskId: task, generation: 1, actor: 'w0#1', tool: 'lookup_order', toolCallId: `t${task}-s0-c0`, atMs: run.clock.monotonicNow() });
      return { world: await run.build(), deadline };
    };
    const early = (await build(9_999)).world;
    expect(early.provider.calls.length).toBe(1);
    expect(i8EffectsOnce.check(early).map((violation) => violation.message).filter((message) => message.includes('deadline'))).toEqual([]);
    const { world, deadline } = await build(10_000);
    expectViolation(i8EffectsOnce, world, new RegExp(`w0#1 started lookup_order \\(t1-s0-c0\\) at ${deadline}, at or after the task's deadline ${deadline}`));
  });

  it('fails when a repeat overwrote the ledger\'s first record, or an effect_recorded event misstates repeated', async () => {
    const { run, task, write } = await takenOverAfterEffect();
    // w1#1 records the write again (it skipped the ledger read): the real queue keeps the first record.
    await run.sendEffect('w1#1', task, write.tool, write.args);
    const clean = await run.build();
    const records = clean.events.filter((event) => event.type === 'effect_recorded');
    expect(records.map((event) => [event.generation, event.data.repeated])).toEqual([
      [1, false],
      [2, true],
    ]);
    const overwritten = { ...clean, effects: clean.effects.map((row) => ({ ...row, generation: 2 })) };
    expectViolation(i8EffectsOnce, overwritten, new RegExp(`the ledger row of ${task}:confirm_order:\\w+ names generation 2, but generation 1 recorded it first`));
    const events = clean.events.map((event) => (event.type === 'effect_recorded' && event.generation === 2 ? { ...event, data: { ...event.data, repeated: false } } : event));
    expectViolation(i8EffectsOnce, { ...clean, events }, /effect_recorded event \d+ of \S+ says repeated: false, but it is a repeat of event \d+/);
  });

  it('fails when the provider executed one request key twice', async () => {
    const { world } = await doneRun();
    expectClean(i8EffectsOnce, world);
    world.provider.executions.push({ ...world.provider.executions[0]! });
    expectViolation(i8EffectsOnce, { ...world }, /executed more than once/);
  });

  it('fails when a done run never executed its intended write', async () => {
    // A worker that skips its write tool: the real queue accepts every fenced write it makes.
    const run = realRun();
    const task = (await run.enqueue())!;
    const script = run.scriptOf(await run.claim('w0#1', task));
    await run.checkpoint('w0#1', task, 'A', 0, script.steps[0]!);
    await run.toolResult('w0#1', task, 'lookup_order');
    await run.checkpoint('w0#1', task, 'B', 1);
    await run.checkpoint('w0#1', task, 'A', 1, script.finalTokens);
    await run.complete('w0#1', task);
    expectViolation(i8EffectsOnce, await run.build(), /task 1: done, but its confirm_order .* was executed 0 times/);
  });

  it('fails when an effect no script intends was executed', async () => {
    const { world, task } = await doneRun();
    world.provider.execute({ requestKey: `${task}:issue_refund:deadbeef`, action: 'issue_refund', tenant: 'acme', taskId: task, generation: 1, actor: 'w0#1', atMs: 0 }, {});
    expectViolation(i8EffectsOnce, world, /executed 1:issue_refund:deadbeef, which its script never intends/);
  });

  it('fails when a takeover sends an effect again though the ledger already held its result', async () => {
    const { run, task, write } = await takenOverAfterEffect();
    await run.sendEffect('w1#1', task, write.tool, write.args);
    expectViolation(i8EffectsOnce, await run.build(), /w1#1 sent 1:confirm_order:\S+ again \(history \d+\) after the ledger had recorded its result/);
  });

  it('owes a graph write at most once, but exactly once when the step records it ok (A7)', async () => {
    const script = {
      steps: [
        {
          calls: [
            { id: 'T1', tool: 'lookup_order', args: { ref: 'order' } },
            { id: 'T3', tool: 'confirm_order', args: { order: 'g1' }, dependsOn: ['T1'], resource: 'ticket' },
          ],
          inputTokens: 1_000,
          outputTokens: 200,
        },
      ],
      answer: { status: 'resolved', summary: 'updated' },
      finalTokens: { inputTokens: 800, outputTokens: 100 },
    };
    // The run ends done without executing T3 (its call failed, say); its last checkpoint states T3's outcome.
    const build = async (status: 'ok' | 'failed') => {
      const run = realRun();
      const task = (await run.enqueue({ script }))!;
      await run.claim('w0#1', task);
      await run.checkpoint('w0#1', task, 'A', 0, script.steps[0]);
      await run.toolResult('w0#1', task, 'lookup_order', 0);
      await run.checkpoint('w0#1', task, 'B', 1);
      await run.checkpoint('w0#1', task, 'A', 1, script.finalTokens);
      await run.complete('w0#1', task);
      const world = await run.build();
      const last = world.checkpoints.get(task)!;
      const results = [{ toolCallId: `t${task}-s0-T1`, tool: 'lookup_order', result: {}, status: 'ok' }, { toolCallId: `t${task}-s0-T3`, tool: 'confirm_order', result: null, status }];
      world.checkpoints.set(task, { ...last, state: { step: 1, messages: [{ role: 'tool', step: 0, results }] } });
      return world;
    };
    expectClean(i8EffectsOnce, await build('failed'));
    expectViolation(i8EffectsOnce, await build('ok'), /done, but its confirm_order \(\S+\) was executed 0 times[\s\S]*the ledger has no confirm_order/);
  });

  it('does not pin the key format: a worker whose keys are spelled otherwise (stable across takeovers) passes', async () => {
    // Another format of the same R3 key: a prefix, separators and a different digest of the payload.
    const otherFormat: RealRun['keyOf'] = (taskId, tool, args) => `v2/${taskId}/${tool}/${createHash('sha1').update(JSON.stringify(args)).digest('base64url')}`;
    const { run, task } = await takenOverAfterEffect(otherFormat);
    await run.runToDone('w1#1', task);
    const world = await run.build();
    expect(world.provider.executions.map((execution) => execution.requestKey)).toEqual([expect.stringMatching(/^v2\/1\/confirm_order\//)]);
    expect(world.effects.map((row) => row.requestKey)).toEqual([world.provider.executions[0]!.requestKey]);
    expectClean(i8EffectsOnce, world);
    const plain = realRun();
    plain.keyOf = otherFormat;
    const id = (await plain.enqueue())!;
    await plain.claim('w0#1', id);
    await plain.runToDone('w0#1', id);
    expectClean(i8EffectsOnce, await plain.build());
  });

  it('fails when a takeover repeats an effect under a different key (the key names the generation): executed twice though no key was', async () => {
    const { run, task } = await takenOverAfterEffect((taskId, tool, args, generation) => `${taskId}:${tool}:${createHash('sha256').update(JSON.stringify(args)).digest('hex').slice(0, 12)}:g${generation}`);
    await run.runToDone('w1#1', task);
    const world = await run.build();
    // Each key executed once, so only the per-effect judgement sees the duplicate.
    expect(new Set(world.provider.executions.map((execution) => execution.requestKey)).size).toBe(2);
    expectViolation(i8EffectsOnce, world, /task 1: one intended effect \(confirm_order of tool call t1-s0-c1\) executed 2 times, under keys \S+:g1, \S+:g2 \(w0#1@g1, w1#1@g2\)/);
    expectViolation(i8EffectsOnce, world, /task 1: done, but its confirm_order \(\S+:g1, \S+:g2\) was executed 2 times/);
  });

  it('fails when one key is sent for two different effects (a key without the payload): the second never happens', async () => {
    const script = {
      steps: [
        {
          calls: [
            { tool: 'confirm_order', args: { order: 'a' } },
            { tool: 'confirm_order', args: { order: 'b' } },
          ],
          inputTokens: 1_000,
          outputTokens: 200,
        },
      ],
      answer: { status: 'resolved', summary: 'two orders' },
      finalTokens: { inputTokens: 800, outputTokens: 100 },
    };
    const build = async (lookupFirst: boolean) => {
      const run = realRun();
      run.keyOf = (taskId, tool) => `${taskId}:${tool}`;
      const task = (await run.enqueue({ script }))!;
      await run.claim('w0#1', task);
      if (lookupFirst) return { run, task, world: (await run.runToDone('w0#1', task), await run.build()) };
      // The worker sends both writes (no ledger lookup in between): the provider answers the second with the first's result.
      await run.checkpoint('w0#1', task, 'A', 0, script.steps[0]);
      for (const call of script.steps[0]!.calls) await run.sendEffect('w0#1', task, call.tool, call.args);
      return { run, task, world: await run.build() };
    };
    // With the ledger lookup the second write finds the first's row and is never sent: done without it.
    const done = (await build(true)).world;
    expect(done.provider.executions.length).toBe(1);
    expectViolation(i8EffectsOnce, done, /task 1: done, but its confirm_order \(t1-s0-c1\) was executed 0 times/);
    // Sent twice, the second is answered as a repeat: judged while the run is still under way.
    const sent = (await build(false)).world;
    expect(sent.provider.requests.length).toBe(2);
    expect(sent.provider.executions.length).toBe(1);
    expectViolation(i8EffectsOnce, sent, /request key 1:confirm_order was sent for two different intended effects \(task 1 t1-s0-c0, task 1 t1-s0-c1\)/);
  });

  it('fails when a step records a write skipped or failed though the ledger holds its effect (a re-run whose dependency failed this time), or done though it never executed', async () => {
    const script = {
      steps: [
        {
          calls: [
            { id: 'T1', tool: 'lookup_order', args: { ref: 'order' } },
            { id: 'T2', tool: 'search_kb', args: { ref: 'policy' } },
            { id: 'T3', tool: 'confirm_order', args: { order: 'g1' }, dependsOn: ['T1', 'T2'], resource: 'ticket' },
          ],
          inputTokens: 1_000,
          outputTokens: 200,
        },
      ],
      answer: { status: 'resolved', summary: 'updated' },
      finalTokens: { inputTokens: 800, outputTokens: 100 },
    };
    // w0#1 ran the graph up to T3's effect and its record, then died; w1#1 took over from checkpoint A and
    // re-ran the step, where T1 failed this time. The last checkpoint states each call's outcome.
    const build = async (t3: 'ok' | 'skipped' | 'failed', executed = true) => {
      const run = realRun();
      const task = (await run.enqueue({ script }))!;
      await run.claim('w0#1', task);
      await run.checkpoint('w0#1', task, 'A', 0, script.steps[0]);
      await run.toolResult('w0#1', task, 'lookup_order', 0);
      await run.toolResult('w0#1', task, 'search_kb', 0);
      if (executed) await run.effect('w0#1', task, 'confirm_order', { order: 'g1' });
      run.advance(31_000);
      await run.expireLeases();
      run.note('kill', 'w0#1');
      await run.confirmStopped(task);
      await run.claim('w1#1', task);
      await run.checkpoint('w1#1', task, 'B', 1);
      const world = await run.build();
      const last = world.checkpoints.get(task)!;
      const results = [
        { toolCallId: `t${task}-s0-T1`, tool: 'lookup_order', result: null, status: 'failed' },
        { toolCallId: `t${task}-s0-T2`, tool: 'search_kb', result: {}, status: 'ok' },
        { toolCallId: `t${task}-s0-T3`, tool: 'confirm_order', result: t3 === 'ok' ? {} : null, status: t3 },
      ];
      world.checkpoints.set(task, { ...last, state: { step: 1, messages: [{ role: 'tool', step: 0, results }] } });
      return world;
    };
    const recorded = (world: WorldResult) => i8EffectsOnce.check(world).filter((violation) => violation.message.includes(' records its '));
    expect(recorded(await build('ok'))).toEqual([]);
    expect(recorded(await build('skipped', false))).toEqual([]);
    expectViolation(i8EffectsOnce, await build('skipped'), /task 1: step 0 records its confirm_order \(t1-s0-T3\) skipped, but the ledger holds its effect under 1:confirm_order:\w+ \(executed 1 time\)/);
    expectViolation(i8EffectsOnce, await build('failed'), /records its confirm_order \(t1-s0-T3\) failed, but the ledger holds its effect/);
    expectViolation(i8EffectsOnce, await build('ok', false), /task 1: step 0 records its confirm_order \(t1-s0-T3\) done, but the external system never executed that effect/);
  });
});
