import { describe, expect, it } from 'vitest';
import type { TaskEvent } from '../../src/queue/types.ts';
import type { OperationFields } from '../history.ts';
import type { WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { i2StaleLeases } from './i2-stale-leases.ts';
import { oneStepScript, realRun, type RealRun } from './__test-helpers__/real-run.ts';

type More = (run: RealRun, task: number) => Promise<void> | void;

/**
 * On the real queue: w0#1 holds generation 1, checkpoints, is paused past its lease and confirmed
 * stopped; w1#1 takes over at generation 2. `more` then acts on the run before it is read.
 */
async function takeover(more: More = () => {}): Promise<{ world: WorldResult; task: number }> {
  const run = realRun();
  const task = (await run.enqueue())!;
  await run.claim('w0#1', task);
  run.advance(500);
  await run.checkpoint('w0#1', task, 'A', 0, { inputTokens: 1_000, outputTokens: 200 });
  run.note('pause', 'w0#1').advance(31_000);
  await run.expireLeases();
  run.note('kill', 'w0#1').advance(10_000);
  await run.confirmStopped(task);
  await run.claim('w1#1', task);
  await more(run, task);
  return { world: await run.build(), task };
}

/**
 * The bad edit the real queue never makes: a call it answered otherwise, recorded with `answer`, and
 * the events it would have committed (appended, so the call's `ev` cursor covers them).
 */
function fabricate(world: WorldResult, actor: string, op: string, fields: OperationFields, answer: { ok: true } | { ok: false; reason: string }, events: Omit<TaskEvent, 'id' | 'seq'>[] = []): WorldResult {
  const added: TaskEvent[] = [];
  let id = world.events.at(-1)?.id ?? 0;
  for (const event of events) {
    const seq = [...world.events, ...added].filter((other) => other.taskId === event.taskId).length + 1;
    added.push({ ...event, id: ++id, seq });
  }
  const invoke = world.history.invoke(actor, op, fields);
  if (answer.ok) world.history.ok(invoke, { data: { ev: id } });
  else world.history.fail(invoke, answer.reason, { data: { ev: id } });
  return { ...world, events: [...world.events, ...added] };
}

/** A holder that heartbeats at 20 s and checkpoints A at 49 s, inside its renewed lease (until 50 s). */
async function renewedHolder(more: More = () => {}): Promise<WorldResult> {
  const run = realRun();
  const task = (await run.enqueue())!;
  await run.claim('w0#1', task);
  run.advance(20_000);
  await run.heartbeat('w0#1', task);
  run.advance(29_000);
  await run.checkpoint('w0#1', task, 'A', 0, { inputTokens: 10, outputTokens: 1 });
  await more(run, task);
  return await run.build();
}

describe('I2 stale leases rejected', () => {
  it('passes a zombie whose writes were all refused and whose effect the new holder also asked for', async () => {
    const { world } = await takeover(async (run, task) => {
      // The default script of the run's one task (acme/topic-1/v1): its write call.
      const write = oneStepScript('acme/topic-1/v1').steps[0]!.calls[1]!;
      expect(await run.checkpoint('w0#1', task, 'B', 1)).toMatchObject({ ok: false, error: 'stale_lease' });
      run.provider.execute({ requestKey: `${task}:x`, action: 'noop', tenant: 'acme', taskId: task, generation: 1, actor: 'w0#1', atMs: 0 }, {});
      run.provider.execute({ requestKey: `${task}:x`, action: 'noop', tenant: 'acme', taskId: task, generation: 2, actor: 'w1#1', atMs: 0 }, {});
      await run.effect('w1#1', task, write.tool, write.args);
      await run.heartbeat('w1#1', task);
    });
    expectClean(i2StaleLeases, world);
  });

  it('fails when a stale holder write makes the core throw InvariantError instead of being refused', async () => {
    const { world, task } = await takeover();
    const bad = fabricate(world, 'w0#1', 'complete', { taskId: task, generation: 1 }, { ok: false, reason: 'invariant_violated' });
    expectViolation(i2StaleLeases, bad, /task 1: complete by w0#1@g1 made the core throw InvariantError instead of answering \(history \d+\)/);
  });

  it('fails when a run keeps writing after its first stale_lease refusal (R9)', async () => {
    const once = await takeover(async (run, task) => {
      await run.heartbeat('w0#1', task);
    });
    expectClean(i2StaleLeases, once.world);
    const twice = await takeover(async (run, task) => {
      await run.heartbeat('w0#1', task);
      await run.checkpoint('w0#1', task, 'B', 1);
    });
    expectViolation(i2StaleLeases, twice.world, /task 1: w0#1@g1 was refused stale_lease 2 times over 1 run\(s\) \(history \d+, \d+\)/);
  });

  it('allows one refusal per delivery: a duplicate delivery of the claim is a second run', async () => {
    const twoRuns = (writes: number) =>
      takeover(async (run, task) => {
        run.note('duplicate-delivery', 'w0#1', { taskId: task, generation: 1 });
        await run.heartbeat('w0#1', task);
        await run.checkpoint('w0#1', task, 'B', 1);
        if (writes > 2) await run.complete('w0#1', task);
      });
    expectClean(i2StaleLeases, (await twoRuns(2)).world);
    expectViolation(i2StaleLeases, (await twoRuns(3)).world, /refused stale_lease 3 times over 2 run\(s\)/);
  });

  it('leaves out the stale-write fault, which replays old credentials on purpose', async () => {
    const { world } = await takeover(async (run, task) => {
      run.note('stale-write', 'faults', { taskId: task, workerId: 'w0#1', generation: 1 });
      await run.heartbeat('w0#1', task);
      await run.checkpoint('w0#1', task, 'B', 1);
      await run.complete('w0#1', task);
    });
    expectClean(i2StaleLeases, world);
  });

  it('fails when an old generation writes a checkpoint after the takeover', async () => {
    const { world, task } = await takeover();
    const at = world.final.at;
    const bad = fabricate(world, 'w0#1', 'checkpoint', { taskId: task, generation: 1 }, { ok: true }, [
      { taskId: task, type: 'checkpoint', at, data: { kind: 'B', step: 1, checkpointSeq: 2, generation: 1 }, workerId: 'w0#1', generation: 1 },
    ]);
    expectViolation(i2StaleLeases, bad, /checkpoint event \d+ written by w0#1@g1 while the task was running under w1#1@g2/);
  });

  it('fails when a refused write still left an event', async () => {
    const { world, task } = await takeover();
    const bad = fabricate(world, 'w0#1', 'appendEvent', { taskId: task, generation: 1 }, { ok: false, reason: 'stale_lease' }, [
      { taskId: task, type: 'tool_result', at: world.final.at, data: { tool: 'lookup_order' }, workerId: 'w0#1', generation: 1 },
    ]);
    expectViolation(i2StaleLeases, bad, /was refused stale_lease but left event/);
  });

  it('fails when a heartbeat from the old generation succeeds', async () => {
    const { world, task } = await takeover();
    const bad = fabricate(world, 'w0#1', 'heartbeat', { taskId: task, generation: 1 }, { ok: true });
    expectViolation(i2StaleLeases, bad, /heartbeat by w0#1@g1 succeeded while the task was running under w1#1@g2/);
  });

  it('fails when a holder writes after its lease ran out, even before any sweep marked it uncertain', async () => {
    expectClean(i2StaleLeases, await renewedHolder());
    let refused: unknown;
    const world = await renewedHolder(async (run, task) => {
      run.advance(31_000);
      refused = await run.checkpoint('w0#1', task, 'B', 1);
    });
    // The real queue refuses the late write; the bad edit is a queue that took it.
    expect(refused).toMatchObject({ ok: false, error: 'stale_lease' });
    const bad = fabricate(world, 'w0#1', 'checkpoint', { taskId: 1, generation: 1 }, { ok: true }, [
      { taskId: 1, type: 'checkpoint', at: world.final.at, data: { kind: 'B', step: 1, checkpointSeq: 2, generation: 1 }, workerId: 'w0#1', generation: 1 },
    ]);
    expectViolation(i2StaleLeases, bad, /checkpoint event \d+ by w0#1@g1 at \d+, after its lease ran out/);
  });

  it('fails when a sweep expires a lease that a heartbeat renewed (a stalled-job sweep that judges by claim time)', async () => {
    const run = realRun();
    const task = (await run.enqueue())!;
    await run.claim('w0#1', task);
    run.advance(20_000);
    await run.heartbeat('w0#1', task);
    run.advance(15_000);
    expect(await run.expireLeases()).toBe(0);
    const world = await run.build();
    expectClean(i2StaleLeases, world);
    // 35 s after the claim, 15 s after the heartbeat: the renewed lease runs until 50 s.
    const bad = fabricate(world, 'supervisor', 'expireLeases', {}, { ok: true }, [
      { taskId: task, type: 'lease_expired', at: world.final.at, data: { from: 'running', to: 'uncertain', workerId: 'w0#1', generation: 1, leaseUntil: run.clock.epochMs + 30_000 } },
    ]);
    expectViolation(i2StaleLeases, bad, /lease_expired event \d+ expired generation 1 at \d+, before its lease ran out at \d+/);
  });

  it('passes a sweep that expires the lease exactly when it runs out', async () => {
    const run = realRun();
    const task = (await run.enqueue())!;
    await run.claim('w0#1', task);
    run.advance(20_000);
    await run.heartbeat('w0#1', task);
    run.advance(30_000);
    await run.expireLeases();
    const world = await run.build();
    expect(world.events.some((event) => event.type === 'lease_expired')).toBe(true);
    expectClean(i2StaleLeases, world);
  });

  it('passes an effect sent under a valid lease that lands after the lease ran out', async () => {
    const run = realRun();
    const task = (await run.enqueue())!;
    await run.claim('w0#1', task);
    const operation = { requestKey: `${task}:confirm_order:late`, action: 'confirm_order', tenant: 'acme', taskId: task, generation: 1, actor: 'w0#1', atMs: 0 };
    const sentIndex = run.provider.noteSent(operation);
    run.advance(31_000);
    await run.expireLeases();
    run.provider.execute({ ...operation, sentIndex }, {});
    expectClean(i2StaleLeases, await run.build());
  });

  it('fails when a zombie sends an effect after it lost the lease, even if it lands at once', async () => {
    const { world } = await takeover((run, task) => {
      const operation = { requestKey: `${task}:confirm_order:zombie`, action: 'confirm_order', tenant: 'acme', taskId: task, generation: 1, actor: 'w0#1', atMs: 0 };
      run.provider.execute({ ...operation, sentIndex: run.provider.noteSent(operation) }, {});
    });
    expectViolation(i2StaleLeases, world, /sent after it lost the lease/);
  });

  it('fails when a zombie sends an effect after it lost the lease, even if the takeover asks for the same key', async () => {
    // The takeover sends the key and the provider executes it; the zombie, which never re-checked its
    // lease, sends the same key: the provider only repeats the first result, but the request itself is a
    // write by a run that no longer held the lease (R9: no further effects).
    const shared = (zombie: boolean) =>
      takeover((run, task) => {
        const current = { requestKey: `${task}:confirm_order:shared`, action: 'confirm_order', tenant: 'acme', taskId: task, generation: 2, actor: 'w1#1', atMs: 0 };
        run.provider.execute({ ...current, sentIndex: run.provider.noteSent(current) }, {});
        if (!zombie) return;
        const stale = { ...current, generation: 1, actor: 'w0#1' };
        run.provider.execute({ ...stale, sentIndex: run.provider.noteSent(stale) }, {});
      });
    expectClean(i2StaleLeases, (await shared(false)).world);
    expectViolation(i2StaleLeases, (await shared(true)).world, /confirm_order \(1:confirm_order:shared\) sent by w0#1@g1 while the task was running under w1#1@g2/);
  });

  it('fails when a zombie executes an effect that no current holder ever asks for', async () => {
    const { world } = await takeover((run, task) => {
      run.provider.execute({ requestKey: `${task}:confirm_order:zombie`, action: 'confirm_order', tenant: 'acme', taskId: task, generation: 1, actor: 'w0#1', atMs: 0 }, {});
    });
    expectViolation(i2StaleLeases, world, /executed by w0#1@g1, sent after it lost the lease/);
  });

  it('fails when the newest checkpoint names a generation that did not write its event', async () => {
    const { world, task } = await takeover();
    expectClean(i2StaleLeases, world);
    const checkpoints = new Map(world.checkpoints);
    checkpoints.set(task, { ...world.checkpoints.get(task)!, generation: 2 });
    expectViolation(i2StaleLeases, { ...world, checkpoints }, /checkpoint 1 of generation 2 has no matching checkpoint event/);
  });
});
