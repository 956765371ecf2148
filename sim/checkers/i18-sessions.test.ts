import { describe, it } from 'vitest';
import type { WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { judgedUnder } from './__test-helpers__/budget-run.ts';
import { realRun } from './__test-helpers__/real-run.ts';
import { i18Sessions } from './i18-sessions.ts';

/** Task 1 (topic chat, v1) runs; v2 of chat is enqueued and, under versioned, runs beside it. */
async function twoVersionsAtOnce(): Promise<WorldResult> {
  const run = realRun({ globalLimit: 2, perTenantLimit: 2, sessionPolicy: 'versioned' });
  const v1 = (await run.enqueue({ topic: 'chat', version: 1 }))!;
  await run.claim('w0#1', v1);
  const v2 = (await run.enqueue({ topic: 'chat', version: 2 }))!;
  await run.claim('w1#1', v2);
  return run.build();
}

describe('I18 one run per session', () => {
  it('passes a serial queue whose newer version waited for the older to end', async () => {
    const run = realRun({ globalLimit: 2, perTenantLimit: 2 });
    const v1 = (await run.enqueue({ topic: 'chat', version: 1 }))!;
    await run.claim('w0#1', v1);
    const v2 = (await run.enqueue({ topic: 'chat', version: 2 }))!;
    await run.runToDone('w0#1', v1);
    await run.claim('w1#1', v2);
    expectClean(i18Sessions, await run.build());
  });

  it('judges nothing under versioned, and fails two running versions of one session under serial', async () => {
    const world = await twoVersionsAtOnce();
    expectClean(i18Sessions, world);
    expectViolation(i18Sessions, judgedUnder(world, { sessionPolicy: 'serial' }), /session acme\/chat has 2 running or uncertain tasks \(1, 2\)/);
  });

  it('fails a session whose runs started out of version order', async () => {
    const run = realRun({ globalLimit: 2, perTenantLimit: 2 });
    const a = (await run.enqueue({ topic: 'chat', version: 1 }))!;
    await run.claim('w0#1', a);
    await run.runToDone('w0#1', a);
    const b = (await run.enqueue({ topic: 'chat', version: 2 }))!;
    await run.claim('w0#1', b);
    const world = await run.build();
    expectClean(i18Sessions, world);
    // The bad books: the first run was the newer version.
    const swapped = { ...world, final: { ...world.final, tasks: world.final.tasks.map((task) => ({ ...task, version: task.id === a ? 2 : 1 })) } };
    expectViolation(i18Sessions, swapped, /version 1 \(task 2\) started after version 2 \(task 1\)/);
  });

  it('fails a cancel_in_progress enqueue that left the running version uncancelled', async () => {
    const world = await twoVersionsAtOnce();
    expectViolation(i18Sessions, judgedUnder(world, { sessionPolicy: 'cancel_in_progress' }), /no cancel of 1 was persisted/);
  });
});
