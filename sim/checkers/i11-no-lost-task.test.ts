import { describe, it } from 'vitest';
import { expectClean, expectViolation } from './expect-checker.ts';
import { fakeWorld, type FakeWorld } from './fake-world.ts';
import { i11Contiguous, i11Drained } from './i11-no-lost-task.ts';

function doneRun(): FakeWorld {
  const fw = fakeWorld();
  const task = fw.enqueue()!;
  fw.claim('w0#1', task);
  fw.runToDone('w0#1', task);
  return fw;
}

describe('I11 contiguous event log', () => {
  it('passes a run whose log tells its story', () => {
    expectClean(i11Contiguous, doneRun().build());
  });

  it('fails when a sequence number is missing', () => {
    const world = doneRun().build();
    world.events = world.events.filter((event) => event.seq !== 3);
    expectViolation(i11Contiguous, world, /task 1: event \d+ has seq 4, expected 3/);
  });

  it('fails when a transition starts from a state the log never left the task in', () => {
    const fw = doneRun();
    fw.rawEvent(1, 'retry_scheduled', { from: 'running', to: 'ready' });
    expectViolation(i11Contiguous, fw.build(), /says from running, the log had it done/);
  });

  it('fails when the final state differs from the log', () => {
    const world = doneRun().build();
    world.final = { ...world.final, tasks: world.final.tasks.map((task) => ({ ...task, state: 'ready' as const })) };
    expectViolation(i11Contiguous, world, /task 1 is ready but its log leaves it done/);
  });
});

describe('I11 every accepted task terminal after the liveness phase', () => {
  it('passes when the run drained and every task ended', () => {
    expectClean(i11Drained, doneRun().build());
  });

  it('fails when the run did not drain', () => {
    const fw = doneRun();
    fw.enqueue();
    expectViolation(i11Drained, fw.build({ drained: false }), /did not drain .* 1 tasks not terminal: 2:ready/);
  });
});
