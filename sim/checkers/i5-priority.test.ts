import { describe, expect, it } from 'vitest';
import type { TaskView } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { claimDecisions, i5Priority, i5Starvation } from './i5-priority.ts';
import { realRun } from './__test-helpers__/real-run.ts';

const MINUTE = 60_000;

/** The books with some task rows rewritten (a new result object: analyses are memoised). */
function withTasks(world: WorldResult, edit: (task: TaskView) => TaskView): WorldResult {
  return { ...world, final: { ...world.final, tasks: world.final.tasks.map(edit) } };
}

/** The real queue: base-0 task 1, then 31 minutes later a fresh base-30 task 2; one slot, one claim. */
async function agedAgainstFresh(): Promise<WorldResult> {
  const run = realRun({ globalLimit: 1, perTenantLimit: 1 });
  await run.enqueue({ priority: 0 });
  run.advance(31 * MINUTE);
  await run.enqueue({ priority: 30 });
  await run.claim('w0#1', 1);
  return await run.build();
}

/** The real queue: task 1 fails into its backoff (1.6-2.4 s); w1#1 is refused 1 s later, claims 5 s after. */
async function refusedDuringBackoff(): Promise<WorldResult> {
  const run = realRun();
  const task = (await run.enqueue())!;
  await run.claim('w0#1', task);
  await run.fail('w0#1', task);
  run.advance(1_000);
  expect(await run.tryClaim('w1#1')).toBeUndefined();
  run.advance(5_000);
  await run.claim('w1#1', task);
  return await run.build();
}

describe('I5 priority order', () => {
  it('passes claims in (score, enqueue time, id) order', async () => {
    const run = realRun({ globalLimit: 1, perTenantLimit: 1 });
    const low = (await run.enqueue({ priority: 5 }))!;
    const high = (await run.enqueue({ priority: 20 }))!;
    await run.claim('w0#1', high);
    await run.runToDone('w0#1', high);
    await run.claim('w0#1', low);
    expectClean(i5Priority, await run.build());
  });

  it('fails when a claim takes a lower-scored task', async () => {
    const run = realRun({ globalLimit: 1, perTenantLimit: 1 });
    await run.enqueue({ priority: 20 });
    await run.enqueue({ priority: 5 });
    await run.claim('w0#1', 1);
    const world = await run.build();
    expectClean(i5Priority, world);
    // The bad edit: the books give the claimed task the low base priority and the waiting one the high.
    const swapped = withTasks(world, (task) => ({ ...task, priority: task.id === 1 ? 5 : 20 }));
    expectViolation(i5Priority, swapped, /took task 1 \(base 5, score 5\) over task 2 \(base 20, score 20/);
  });

  it('fails when the claim records a score other than the aged score', async () => {
    const run = realRun();
    const task = (await run.enqueue({ priority: 5 }))!;
    run.advance(3 * MINUTE);
    await run.claim('w0#1', task);
    const world = await run.build();
    expectClean(i5Priority, world);
    expect(world.events.find((event) => event.type === 'claimed')!.data.score).toBe(8);
    const events = world.events.map((event) => (event.type === 'claimed' ? { ...event, data: { ...event.data, score: 5 } } : event));
    expectViolation(i5Priority, { ...world, events }, /recorded score 5, expected 8/);
  });

  it('fails when a task is claimed before its retry backoff ends', async () => {
    const world = await refusedDuringBackoff();
    expectClean(i5Priority, world);
    const events = world.events.map((event) => (event.type === 'retry_scheduled' ? { ...event, data: { ...event.data, backoffMs: 10 * MINUTE } } : event));
    expectViolation(i5Priority, { ...world, events }, /was claimed at \d+ though it was not eligible \(notBefore/);
  });

  it('lets aging decide: a base-0 task that waited 31 minutes beats a fresh base-30 task', async () => {
    const world = await agedAgainstFresh();
    expectClean(i5Priority, world);
    expectClean(i5Starvation, world);
    expect(claimDecisions(world).map((decision) => decision.agingOvertook)).toEqual([true]);
  });
});

describe('I5 no starvation', () => {
  it('fails the aging bound when a fresh base-30 task passes a base-0 task that waited 31 minutes', async () => {
    const world = await agedAgainstFresh();
    // The bad edit: the books swap the two tasks, so the claim took the fresh base-30 one.
    const first = world.final.tasks[0]!;
    const second = world.final.tasks[1]!;
    const swapped = withTasks(world, (task) =>
      task.id === first.id ? { ...task, priority: second.priority, enqueuedAt: second.enqueuedAt, notBefore: second.notBefore } : { ...task, priority: first.priority, enqueuedAt: first.enqueuedAt, notBefore: first.notBefore },
    );
    expectViolation(i5Starvation, swapped, /task 2 \(base 0\) had waited 1860000 ms longer than task 1/);
  });

  it('fails when a claim is refused empty while a task was ready and eligible with a free slot', async () => {
    const world = await refusedDuringBackoff();
    const events = world.events.map((event) => (event.type === 'retry_scheduled' ? { ...event, data: { ...event.data, backoffMs: 0 } } : event));
    expectViolation(i5Starvation, { ...world, events }, /claim by w1#1 at \d+ was refused empty with 0\/2 slots held while task 1 was ready and eligible/);
  });

  it('passes a refused claim when the only ready task waits out its backoff', async () => {
    expectClean(i5Starvation, await refusedDuringBackoff());
  });

  it('uses the wall clock the core saw: a backwards clock jump keeps a fresh task not yet eligible', async () => {
    const run = realRun();
    run.advance(1_000);
    await run.enqueue();
    run.jumpClock(-5_000);
    expect(await run.tryClaim('w0#1')).toBeUndefined();
    expectClean(i5Starvation, await run.build());
  });
});
