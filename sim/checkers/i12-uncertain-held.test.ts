import { describe, expect, it } from 'vitest';
import type { QueueConfig, TaskEvent } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { i12UncertainHeld } from './i12-uncertain-held.ts';
import { realRun, type RealRun } from './__test-helpers__/real-run.ts';

/** The real queue: task 1's holder w0#1 went silent, its lease expired and the task sits uncertain. */
async function uncertain(config: Partial<QueueConfig> = {}): Promise<{ run: RealRun; task: number }> {
  const run = realRun(config);
  const task = (await run.enqueue())!;
  await run.claim('w0#1', task);
  run.advance(31_000);
  await run.expireLeases();
  return { run, task };
}

/** The uncertain task's holder died and the supervisor confirmed it: the task is ready again. */
async function confirmedAfterDeath(): Promise<WorldResult> {
  const { run, task } = await uncertain();
  run.note('kill', 'w0#1').advance(10_000);
  await run.confirmStopped(task);
  return await run.build();
}

/** The uncertain task was cancelled by its client; its dead holder's stop is then confirmed. */
async function cancelledWhileUncertain(): Promise<WorldResult> {
  const { run, task } = await uncertain();
  expect(await run.cancel(task)).toMatchObject({ ok: true, state: 'cancel_requested' });
  run.note('kill', 'w0#1');
  await run.confirmStopped(task);
  return await run.build();
}

/** `world` with one more event of task 1, as if the queue had committed it last. */
function withEvent(world: WorldResult, type: string, data: Record<string, unknown>): WorldResult {
  const last = world.events.at(-1)!;
  const seq = world.events.filter((event) => event.taskId === 1).length + 1;
  const event: TaskEvent = { id: last.id + 1, taskId: 1, seq, type, at: last.at, data };
  return { ...world, events: [...world.events, event] };
}

function withEventsEdited(world: WorldResult, edit: (event: TaskEvent) => TaskEvent): WorldResult {
  return { ...world, events: world.events.map(edit) };
}

describe('I12 uncertain is held', () => {
  it('passes a confirmation after the holder died', async () => {
    expectClean(i12UncertainHeld, await confirmedAfterDeath());
  });

  it('fails when a confirmation sends an uncertain task with a pending cancel back to ready (Q13)', async () => {
    const world = await cancelledWhileUncertain();
    expectClean(i12UncertainHeld, world);
    const bad = withEventsEdited(world, (event) => (event.type === 'stop_confirmed' ? { ...event, data: { ...event.data, to: 'ready' } } : event));
    expectViolation(i12UncertainHeld, bad, /task 1: stop_confirmed event \d+ moved it uncertain -> ready though cancel was requested \(event \d+\)/);
  });

  it('fails when a cancel answered cancel_requested left no event', async () => {
    const world = await cancelledWhileUncertain();
    const bad = { ...world, events: world.events.filter((event) => event.type !== 'cancel_requested') };
    expectViolation(i12UncertainHeld, bad, /task 1: cancel answered cancel_requested \(history \d+\) but no cancel_requested event was written/);
  });

  it('fails when a paused holder is confirmed stopped', async () => {
    // The real queue takes the confirmation; only the supervisor knows the holder is paused, and must not send it.
    const { run, task } = await uncertain();
    run.note('pause', 'w0#1');
    await run.confirmStopped(task, 'paused');
    expectViolation(i12UncertainHeld, await run.build(), /confirmed stopped while its holder w0#1 was paused/);
  });

  it('passes a confirmation asked for after the holder stopped the run (refused stale_lease), though the holder paused before it committed', async () => {
    const { run, task } = await uncertain();
    expect(await run.heartbeat('w0#1', task)).toMatchObject({ ok: false, error: 'stale_lease' });
    await run.confirmStopped(task, 'alive', undefined, () => run.note('pause', 'w0#1'));
    expectClean(i12UncertainHeld, await run.build());
  });

  it('fails when the holder that stopped the run was already paused when the confirmation was asked for', async () => {
    const { run, task } = await uncertain();
    expect(await run.heartbeat('w0#1', task)).toMatchObject({ ok: false, error: 'stale_lease' });
    run.note('pause', 'w0#1');
    await run.confirmStopped(task, 'paused');
    expectViolation(i12UncertainHeld, await run.build(), /confirmed stopped while its holder w0#1 was paused/);
  });

  it('fails when a holder that never stopped its run pauses between the confirmation asked for and its answer', async () => {
    const { run, task } = await uncertain();
    await run.confirmStopped(task, 'alive', undefined, () => run.note('pause', 'w0#1'));
    expectViolation(i12UncertainHeld, await run.build(), /confirmed stopped while its holder w0#1 was paused/);
  });

  it('fails when a task leaves uncertain without a confirmation', async () => {
    const world = await confirmedAfterDeath();
    const bad = withEventsEdited(world, (event) => (event.type === 'stop_confirmed' ? { ...event, type: 'retry_scheduled' } : event));
    expectViolation(i12UncertainHeld, bad, /left uncertain by retry_scheduled/);
  });

  it('fails when a late confirmation of an older generation frees the newer one', async () => {
    const { run, task } = await uncertain();
    run.note('kill', 'w0#1').advance(10_000);
    await run.confirmStopped(task);
    await run.claim('w1#1', task);
    run.advance(31_000);
    await run.expireLeases();
    // The supervisor's confirmation of generation 1, delivered again: the real queue refuses it.
    expect(await run.confirmStopped(task, 'dead', 1)).toMatchObject({ ok: false });
    const world = await run.build();
    expectClean(i12UncertainHeld, world);
    // The bad edit: a queue that took it for generation 2, answering ok and freeing the task.
    const invoke = world.history.invoke('supervisor', 'confirmStopped', { taskId: task, generation: 1 });
    world.history.ok(invoke, { data: { outcome: 'ready', ev: world.events.at(-1)!.id + 1 } });
    const bad = withEvent(world, 'stop_confirmed', { from: 'uncertain', to: 'ready', source: 'supervisor', generation: 1, reason: 'stopped' });
    expectViolation(i12UncertainHeld, bad, /stop_confirmed event \d+ confirms generation 1 while the task is at generation 2/);
  });

  it('fails when a lapsed lease sends the task straight back to ready', async () => {
    const { run } = await uncertain();
    const world = await run.build();
    expectClean(i12UncertainHeld, world);
    const bad = withEventsEdited(world, (event) => (event.type === 'lease_expired' ? { ...event, data: { ...event.data, to: 'ready' } } : event));
    expectViolation(i12UncertainHeld, bad, /lease_expired event \d+ moved it to ready, not uncertain/);
  });

  it('fails when a stop_confirmed event answers no confirmStopped call', async () => {
    const { run } = await uncertain();
    const bad = withEvent(await run.build(), 'stop_confirmed', { from: 'uncertain', to: 'ready', source: 'supervisor', generation: 1 });
    expectViolation(i12UncertainHeld, bad, /stop_confirmed event \d+ answers no successful confirmStopped/);
  });

  it('accepts a reconciliation decision only under the auto policy', async () => {
    const run = realRun({ reconciliation: 'auto' });
    const task = (await run.enqueue())!;
    await run.claim('w0#1', task);
    await run.checkpoint('w0#1', task, 'B', 1);
    run.advance(31_000);
    await run.expireLeases();
    run.advance(10_001);
    expect(await run.reconcile()).toMatchObject({ requeued: 1 });
    const world = await run.build();
    expect(world.events.some((event) => event.type === 'reconciled')).toBe(true);
    expectClean(i12UncertainHeld, world);
    const underHold = { ...world, scenario: { ...world.scenario, queue: { reconciliation: 'hold' as const } } };
    expectViolation(i12UncertainHeld, underHold, /left uncertain by reconciliation under policy hold/);
  });
});
