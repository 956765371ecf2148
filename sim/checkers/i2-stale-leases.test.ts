import { describe, expect, it } from 'vitest';
import { expectClean, expectViolation } from './expect-checker.ts';
import { fakeWorld, type FakeWorld } from './fake-world.ts';
import { i2StaleLeases } from './i2-stale-leases.ts';

/** w0#1 holds generation 1, is paused past its lease, and w1#1 takes over at generation 2. */
function takeover(): { fw: FakeWorld; task: number } {
  const fw = fakeWorld();
  const task = fw.enqueue()!;
  fw.claim('w0#1', task);
  fw.advance(500).checkpoint('w0#1', task, 'A', 0, { inputTokens: 1_000, outputTokens: 200 });
  fw.note('pause', 'w0#1').advance(31_000).expireLeases().note('kill', 'w0#1').advance(10_000).confirmStopped(task);
  fw.claim('w1#1', task);
  return { fw, task };
}

describe('I2 stale leases rejected', () => {
  it('passes a zombie whose writes were all refused and whose effect the new holder also asked for', () => {
    const { fw, task } = takeover();
    const script = fw.task(task).script;
    const write = script.steps[0]!.calls[1]!;
    fw.staleWrite('w0#1', task, 1, 'checkpoint');
    fw.provider.execute({ requestKey: `${task}:x`, action: 'noop', tenant: 'acme', taskId: task, generation: 1, actor: 'w0#1', atMs: 0 }, {});
    fw.provider.execute({ requestKey: `${task}:x`, action: 'noop', tenant: 'acme', taskId: task, generation: 2, actor: 'w1#1', atMs: 0 }, {});
    fw.effect('w1#1', task, write.tool, write.args);
    fw.heartbeat('w1#1', task);
    expectClean(i2StaleLeases, fw.build());
  });

  it('fails when a stale holder write makes the core throw InvariantError instead of being refused', () => {
    const { fw, task } = takeover();
    fw.call('w0#1', 'complete', { taskId: task, generation: 1 }, () => ({ ok: false, reason: 'invariant_violated' }));
    expectViolation(i2StaleLeases, fw.build(), /task 1: complete by w0#1@g1 made the core throw InvariantError instead of answering \(history \d+\)/);
  });

  it('fails when a run keeps writing after its first stale_lease refusal (R9)', () => {
    const { fw, task } = takeover();
    fw.staleWrite('w0#1', task, 1, 'heartbeat');
    expectClean(i2StaleLeases, fw.build());
    fw.staleWrite('w0#1', task, 1, 'checkpoint');
    expectViolation(i2StaleLeases, fw.build(), /task 1: w0#1@g1 was refused stale_lease 2 times over 1 run\(s\) \(history \d+, \d+\)/);
  });

  it('allows one refusal per delivery: a duplicate delivery of the claim is a second run', () => {
    const { fw, task } = takeover();
    fw.note('duplicate-delivery', 'w0#1', { taskId: task, generation: 1 });
    fw.staleWrite('w0#1', task, 1, 'heartbeat').staleWrite('w0#1', task, 1, 'checkpoint');
    expectClean(i2StaleLeases, fw.build());
    fw.staleWrite('w0#1', task, 1, 'complete');
    expectViolation(i2StaleLeases, fw.build(), /refused stale_lease 3 times over 2 run\(s\)/);
  });

  it('leaves out the stale-write fault, which replays old credentials on purpose', () => {
    const { fw, task } = takeover();
    fw.note('stale-write', 'faults', { taskId: task, workerId: 'w0#1', generation: 1 });
    fw.staleWrite('w0#1', task, 1, 'heartbeat').staleWrite('w0#1', task, 1, 'checkpoint').staleWrite('w0#1', task, 1, 'complete');
    expectClean(i2StaleLeases, fw.build());
  });

  it('fails when an old generation writes a checkpoint after the takeover', () => {
    const { fw, task } = takeover();
    fw.call('w0#1', 'checkpoint', { taskId: task, generation: 1 }, () => {
      fw.rawEvent(task, 'checkpoint', { kind: 'B', step: 1, checkpointSeq: 2, generation: 1 }, { workerId: 'w0#1', generation: 1 });
      return { ok: true };
    });
    expectViolation(i2StaleLeases, fw.build(), /checkpoint event \d+ written by w0#1@g1 while the task was running under w1#1@g2/);
  });

  it('fails when a refused write still left an event', () => {
    const { fw, task } = takeover();
    fw.call('w0#1', 'appendEvent', { taskId: task, generation: 1 }, () => {
      fw.rawEvent(task, 'tool_result', { tool: 'lookup_order' }, { workerId: 'w0#1', generation: 1 });
      return { ok: false, reason: 'stale_lease' };
    });
    expectViolation(i2StaleLeases, fw.build(), /was refused stale_lease but left event/);
  });

  it('fails when a heartbeat from the old generation succeeds', () => {
    const { fw, task } = takeover();
    fw.call('w0#1', 'heartbeat', { taskId: task, generation: 1 }, () => ({ ok: true }));
    expectViolation(i2StaleLeases, fw.build(), /heartbeat by w0#1@g1 succeeded while the task was running under w1#1@g2/);
  });

  it('fails when a holder writes after its lease ran out, even before any sweep marked it uncertain', () => {
    const fw = fakeWorld();
    const task = fw.enqueue()!;
    fw.claim('w0#1', task);
    fw.advance(20_000).heartbeat('w0#1', task);
    fw.advance(29_000).checkpoint('w0#1', task, 'A', 0, { inputTokens: 10, outputTokens: 1 });
    expectClean(i2StaleLeases, fw.build());
    fw.advance(31_000).checkpoint('w0#1', task, 'B', 1);
    expectViolation(i2StaleLeases, fw.build(), /checkpoint event \d+ by w0#1@g1 at \d+, after its lease ran out/);
  });

  it('fails when a sweep expires a lease that a heartbeat renewed (a stalled-job sweep that judges by claim time)', () => {
    const fw = fakeWorld();
    const task = fw.enqueue()!;
    fw.claim('w0#1', task);
    fw.advance(20_000).heartbeat('w0#1', task);
    fw.advance(15_000);
    expectClean(i2StaleLeases, fw.build());
    // 35 s after the claim, 15 s after the heartbeat: the renewed lease runs until 50 s.
    fw.call('supervisor', 'expireLeases', {}, () => {
      fw.rawEvent(task, 'lease_expired', { from: 'running', to: 'uncertain', workerId: 'w0#1', generation: 1, leaseUntil: 30_000 });
      return { ok: true };
    });
    expectViolation(i2StaleLeases, fw.build(), /lease_expired event \d+ expired generation 1 at \d+, before its lease ran out at \d+/);
  });

  it('passes a sweep that expires the lease exactly when it runs out', () => {
    const fw = fakeWorld();
    const task = fw.enqueue()!;
    fw.claim('w0#1', task);
    fw.advance(20_000).heartbeat('w0#1', task);
    fw.advance(30_000).expireLeases();
    expect(fw.build().events.some((event) => event.type === 'lease_expired')).toBe(true);
    expectClean(i2StaleLeases, fw.build());
  });

  it('passes an effect sent under a valid lease that lands after the lease ran out', () => {
    const fw = fakeWorld();
    const task = fw.enqueue()!;
    fw.claim('w0#1', task);
    const operation = { requestKey: `${task}:confirm_order:late`, action: 'confirm_order', tenant: 'acme', taskId: task, generation: 1, actor: 'w0#1', atMs: 0 };
    const sentIndex = fw.provider.noteSent(operation);
    fw.advance(31_000).expireLeases();
    fw.provider.execute({ ...operation, sentIndex }, {});
    expectClean(i2StaleLeases, fw.build());
  });

  it('fails when a zombie sends an effect after it lost the lease, even if it lands at once', () => {
    const { fw, task } = takeover();
    const operation = { requestKey: `${task}:confirm_order:zombie`, action: 'confirm_order', tenant: 'acme', taskId: task, generation: 1, actor: 'w0#1', atMs: 0 };
    const sentIndex = fw.provider.noteSent(operation);
    fw.provider.execute({ ...operation, sentIndex }, {});
    expectViolation(i2StaleLeases, fw.build(), /sent after it lost the lease/);
  });

  it('fails when a zombie sends an effect after it lost the lease, even if the takeover asks for the same key', () => {
    const { fw, task } = takeover();
    // The takeover sends the key and the provider executes it; the zombie, which never re-checked its
    // lease, sends the same key: the provider only repeats the first result, but the request itself is a
    // write by a run that no longer held the lease (R9: no further effects).
    const key = `${task}:confirm_order:shared`;
    const current = { requestKey: key, action: 'confirm_order', tenant: 'acme', taskId: task, generation: 2, actor: 'w1#1', atMs: 0 };
    fw.provider.execute({ ...current, sentIndex: fw.provider.noteSent(current) }, {});
    const clean = fw.build();
    expectClean(i2StaleLeases, clean);
    const zombie = { ...current, generation: 1, actor: 'w0#1' };
    fw.provider.execute({ ...zombie, sentIndex: fw.provider.noteSent(zombie) }, {});
    expectViolation(i2StaleLeases, fw.build(), new RegExp(`confirm_order \\(${key}\\) sent by w0#1@g1 while the task was running under w1#1@g2`));
  });

  it('fails when a zombie executes an effect that no current holder ever asks for', () => {
    const { fw, task } = takeover();
    fw.provider.execute({ requestKey: `${task}:confirm_order:zombie`, action: 'confirm_order', tenant: 'acme', taskId: task, generation: 1, actor: 'w0#1', atMs: 0 }, {});
    expectViolation(i2StaleLeases, fw.build(), /executed by w0#1@g1, sent after it lost the lease/);
  });

  it('fails when the newest checkpoint names a generation that did not write its event', () => {
    const { fw, task } = takeover();
    const world = fw.build();
    world.checkpoints.set(task, { ...world.checkpoints.get(task)!, generation: 2 });
    expectViolation(i2StaleLeases, world, /checkpoint 1 of generation 2 has no matching checkpoint event/);
  });
});
