import { describe, expect, it } from 'vitest';
import type { TaskView } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { claimDecisions, i5Priority, i5Starvation } from './i5-priority.ts';
import { realRun } from './__test-helpers__/real-run.ts';
import { buildWithBudgets, budgetRun, enqueueWith, judgedUnder, pause, resume, withEvents } from './__test-helpers__/budget-run.ts';

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

describe('I5 with admission (A1, A2): what a claim may pass over', () => {
  const SEATS = { seats: { kind: 'concurrency', limit: 1 } } as const;

  /** Task 1 (base 20) needs the one seat, which task 0's run holds; task 2 (base 5) needs none and runs. */
  async function seatTaken(): Promise<WorldResult> {
    const run = budgetRun({ globalLimit: 3, perTenantLimit: 3, budgets: SEATS });
    const holder = (await enqueueWith(run, { tenant: 'a', priority: 30, needs: { seats: 1 } }))!;
    await run.claim('w0#1', holder);
    await enqueueWith(run, { tenant: 'b', priority: 20, needs: { seats: 1 } });
    const free = (await enqueueWith(run, { tenant: 'c', priority: 5 }))!;
    await run.claim('w1#1', free);
    expect(await run.tryClaim('w2#1')).toBeUndefined();
    return buildWithBudgets(run);
  }

  it('passes a claim that takes a worse task while the better one waits for a budget, and the refusal after it', async () => {
    const world = await seatTaken();
    expectClean(i5Priority, world);
    expectClean(i5Starvation, world);
  });

  it('fails a claim that passes over a better task whose budget could grant (the seat was free)', async () => {
    const world = await seatTaken();
    const roomy = judgedUnder(world, { budgets: { seats: { kind: 'concurrency', limit: 2 } } });
    expectViolation(i5Priority, roomy, /took task 3 \(base 5, score 5\) over task 2 \(base 20/);
    expectViolation(i5Starvation, roomy, /was refused quota .* while task 2 was ready and eligible/);
  });

  it('keeps a smaller need from jumping a waiting head: a task behind it needing the same bucket waits too', async () => {
    const run = budgetRun({ globalLimit: 4, perTenantLimit: 4, budgets: { tokens: { kind: 'rate', capacity: 100, refill: 0, periodMs: 60_000 } } });
    const first = (await enqueueWith(run, { tenant: 'a', priority: 30, needs: { tokens: 60 } }))!;
    await run.claim('w0#1', first);
    await enqueueWith(run, { tenant: 'b', priority: 20, needs: { tokens: 50 } });
    await enqueueWith(run, { tenant: 'c', priority: 10, needs: { tokens: 10 } });
    expect(await run.tryClaim('w1#1')).toBeUndefined();
    const world = await buildWithBudgets(run);
    expectClean(i5Starvation, world);
    // Without the head's claim on the bucket, the small need would have fit: the judge knows it must wait.
    const noHead = withEvents(world, (events) => events.filter((event) => !(event.taskId === 2)));
    expectViolation(i5Starvation, noHead, /while task 3 was ready and eligible/);
  });

  it("fails a claim of a paused tenant's task, and passes over it otherwise", async () => {
    const run = budgetRun({ globalLimit: 2, perTenantLimit: 2 });
    const paused = (await enqueueWith(run, { tenant: 'a', priority: 30 }))!;
    await pause(run, 'a');
    const other = (await enqueueWith(run, { tenant: 'b', priority: 0 }))!;
    await run.claim('w0#1', other);
    expect(await run.tryClaim('w1#1')).toBeUndefined();
    await resume(run, 'a');
    await run.claim('w1#1', paused);
    const world = await buildWithBudgets(run);
    expectClean(i5Priority, world);
    expectClean(i5Starvation, world);
    // The bad history: the resume never happened, so the last claim took a paused tenant's task.
    const entries = world.history.entries();
    const resumeOk = entries.find((entry) => entry.type === 'ok' && entry.op === 'resumeTenant')!;
    const history = Object.assign(Object.create(Object.getPrototypeOf(world.history)), world.history, {
      entries: () => entries.filter((entry) => entry.index !== resumeOk.index && entry.index !== (resumeOk as { invokeIndex?: number }).invokeIndex),
    });
    expectViolation(i5Priority, { ...world, history }, /task 1 was claimed at \d+ though it was not eligible \(tenant a paused\)/);
  });
});
