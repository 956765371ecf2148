import { describe, it } from 'vitest';
import type { WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { i11Contiguous, i11Drained } from './i11-no-lost-task.ts';
import { realRun } from './__test-helpers__/real-run.ts';

/** One task through the real queue, enqueued, claimed and finished; `extra` more left waiting. */
async function doneRun(overrides: Partial<WorldResult> = {}, extra = 0): Promise<WorldResult> {
  const run = realRun();
  const task = (await run.enqueue())!;
  await run.claim('w0#1', task);
  await run.runToDone('w0#1', task);
  for (let index = 0; index < extra; index++) await run.enqueue();
  return await run.build(overrides);
}

describe('I11 contiguous event log', () => {
  it('passes a run whose log tells its story', async () => {
    expectClean(i11Contiguous, await doneRun());
  });

  it('fails when a sequence number is missing', async () => {
    const world = await doneRun();
    world.events = world.events.filter((event) => event.seq !== 3);
    expectViolation(i11Contiguous, world, /task 1: event \d+ has seq 4, expected 3/);
  });

  it('fails when a transition starts from a state the log never left the task in', async () => {
    const world = await doneRun();
    const last = world.events.at(-1)!;
    world.events.push({ id: last.id + 1, taskId: 1, seq: last.seq + 1, type: 'retry_scheduled', at: last.at, data: { from: 'running', to: 'ready' } });
    expectViolation(i11Contiguous, world, /says from running, the log had it done/);
  });

  it('fails when the final state differs from the log', async () => {
    const world = await doneRun();
    world.final = { ...world.final, tasks: world.final.tasks.map((task) => ({ ...task, state: 'ready' as const })) };
    expectViolation(i11Contiguous, world, /task 1 is ready but its log leaves it done/);
  });
});

describe('I11 every accepted task terminal after the liveness phase', () => {
  it('passes when the run drained and every task ended', async () => {
    expectClean(i11Drained, await doneRun());
  });

  it('fails when the run did not drain', async () => {
    expectViolation(i11Drained, await doneRun({ drained: false }, 1), /did not drain .* 1 tasks not terminal: 2:ready/);
  });
});
