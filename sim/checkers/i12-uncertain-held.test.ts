import { describe, it } from 'vitest';
import { expectClean, expectViolation } from './expect-checker.ts';
import { fakeWorld, type FakeWorld } from './fake-world.ts';
import { i12UncertainHeld } from './i12-uncertain-held.ts';

/** A task whose holder w0#1 went silent: its lease expired and it sits uncertain. */
function uncertain(queue = {}): { fw: FakeWorld; task: number } {
  const fw = fakeWorld(queue);
  const task = fw.enqueue()!;
  fw.claim('w0#1', task);
  fw.advance(31_000).expireLeases();
  return { fw, task };
}

describe('I12 uncertain is held', () => {
  it('passes a confirmation after the holder died', () => {
    const { fw, task } = uncertain();
    fw.note('kill', 'w0#1').advance(10_000).confirmStopped(task);
    expectClean(i12UncertainHeld, fw.build());
  });

  it('fails when a confirmation sends an uncertain task with a pending cancel back to ready (Q13)', () => {
    const { fw, task } = uncertain();
    fw.call('client', 'cancel', { taskId: task }, () => {
      fw.rawEvent(task, 'cancel_requested', { state: 'uncertain' });
      return { ok: true, outcome: 'cancel_requested' };
    });
    fw.note('kill', 'w0#1').confirmStopped(task);
    expectViolation(i12UncertainHeld, fw.build(), /task 1: stop_confirmed event \d+ moved it uncertain -> ready though cancel was requested \(event \d+\)/);
  });

  it('fails when a cancel answered cancel_requested left no event', () => {
    const { fw, task } = uncertain();
    fw.call('client', 'cancel', { taskId: task }, () => ({ ok: true, outcome: 'cancel_requested' }));
    expectViolation(i12UncertainHeld, fw.build(), /task 1: cancel answered cancel_requested \(history \d+\) but no cancel_requested event was written/);
    const { fw: recorded, task: same } = uncertain();
    recorded.call('client', 'cancel', { taskId: same }, () => {
      recorded.rawEvent(same, 'cancel_requested', { state: 'uncertain' });
      return { ok: true, outcome: 'cancel_requested' };
    });
    expectClean(i12UncertainHeld, recorded.build());
  });

  it('fails when a paused holder is confirmed stopped', () => {
    const { fw, task } = uncertain();
    fw.note('pause', 'w0#1').confirmStopped(task);
    expectViolation(i12UncertainHeld, fw.build(), /confirmed stopped while its holder w0#1 was paused/);
  });

  it('fails when a task leaves uncertain without a confirmation', () => {
    const { fw, task } = uncertain();
    fw.rawEvent(task, 'retry_scheduled', { from: 'uncertain', to: 'ready' });
    expectViolation(i12UncertainHeld, fw.build(), /left uncertain by retry_scheduled/);
  });

  it('fails when a late confirmation of an older generation frees the newer one', () => {
    const { fw, task } = uncertain();
    fw.note('kill', 'w0#1').advance(10_000).confirmStopped(task);
    fw.claim('w1#1', task);
    fw.advance(31_000).expireLeases();
    // The supervisor's confirmation of generation 1, delivered again, is taken for generation 2.
    fw.call('supervisor', 'confirmStopped', { taskId: task, generation: 1 }, () => {
      fw.rawEvent(task, 'stop_confirmed', { from: 'uncertain', to: 'ready', source: 'supervisor', generation: 1, reason: 'stopped' });
      return { ok: true, outcome: 'ready' };
    });
    expectViolation(i12UncertainHeld, fw.build(), /stop_confirmed event \d+ confirms generation 1 while the task is at generation 2/);
  });

  it('fails when a lapsed lease sends the task straight back to ready', () => {
    const fw = fakeWorld();
    const task = fw.enqueue()!;
    fw.claim('w0#1', task);
    fw.advance(31_000).rawEvent(task, 'lease_expired', { from: 'running', to: 'ready', workerId: 'w0#1', generation: 1 });
    expectViolation(i12UncertainHeld, fw.build(), /lease_expired event \d+ moved it to ready, not uncertain/);
  });

  it('fails when a stop_confirmed event answers no confirmStopped call', () => {
    const { fw, task } = uncertain();
    fw.rawEvent(task, 'stop_confirmed', { from: 'uncertain', to: 'ready', source: 'supervisor', generation: 1 });
    expectViolation(i12UncertainHeld, fw.build(), /stop_confirmed event \d+ answers no successful confirmStopped/);
  });

  it('accepts a reconciliation decision only under the auto policy', () => {
    const hold = uncertain();
    hold.fw.rawEvent(hold.task, 'reconciled', { from: 'uncertain', to: 'ready', decision: 'requeue' });
    expectViolation(i12UncertainHeld, hold.fw.build(), /left uncertain by reconciliation under policy hold/);
    const auto = uncertain({ reconciliation: 'auto' });
    auto.fw.rawEvent(auto.task, 'reconciled', { from: 'uncertain', to: 'ready', decision: 'requeue' });
    expectClean(i12UncertainHeld, auto.fw.build());
  });
});
