import { describe, expect, it } from 'vitest';
import { ALL_MARKS, coverageMarks, REQUIRED_MARKS } from './marks.ts';
import { realRun } from './__test-helpers__/real-run.ts';

describe('S8 coverage marks', () => {
  it('reports every mark, zero when not reached, and requires only marks it knows', async () => {
    const marks = coverageMarks(await realRun().build());
    expect(Object.keys(marks).sort()).toEqual([...ALL_MARKS].sort());
    expect(Object.values(marks).every((count) => count === 0)).toBe(true);
    for (const mark of REQUIRED_MARKS) expect(ALL_MARKS).toContain(mark);
  });

  it('counts a zombie: paused, taken over, refused on waking, resumed from its checkpoint A', async () => {
    const run = realRun();
    const task = (await run.enqueue())!;
    await run.claim('w0#1', task);
    await run.checkpoint('w0#1', task, 'A', 0, { inputTokens: 1_000, outputTokens: 200 });
    run.note('pause', 'w0#1').advance(31_000);
    await run.expireLeases();
    run.note('kill', 'w0#1');
    await run.confirmStopped(task);
    await run.claim('w1#1', task);
    // The zombie wakes and writes with its old generation: the real queue refuses it.
    expect(await run.checkpoint('w0#1', task, 'B', 1)).toMatchObject({ ok: false, error: 'stale_lease' });
    await run.runToDone('w1#1', task);
    const marks = coverageMarks(await run.build());
    expect(marks).toMatchObject({
      stale_lease_rejected: 1,
      zombie_write_rejected: 1,
      takeover_from_checkpoint_A: 1,
      takeover_fresh: 0,
      lease_expired: 1,
      stop_confirmed: 1,
      pause: 1,
      kill: 1,
      settled: 1,
      provider_repeat: 0,
    });
  });

  it('counts a fresh takeover, a supersede and a queue_full refusal', async () => {
    const run = realRun({ capacity: 2, globalLimit: 2 });
    const task = (await run.enqueue({ topic: 'topic-1' }))!;
    await run.claim('w0#1', task);
    run.advance(31_000);
    await run.expireLeases();
    run.note('kill', 'w0#1');
    await run.confirmStopped(task);
    await run.claim('w1#1', task);
    await run.enqueue({ topic: 'topic-2' });
    await run.enqueue({ topic: 'topic-3' });
    await run.enqueue({ topic: 'topic-2', version: 2 });
    expect(coverageMarks(await run.build())).toMatchObject({ takeover_fresh: 1, superseded: 1, queue_full: 1, hold_released: 1 });
  });

  it('counts retry_age_exceeded once per task that ran out of retry age, at a failure or at a claim, and not attempts exhaustion', async () => {
    const run = realRun({ globalLimit: 3, perTenantLimit: 3, baseDelayMs: 1_000, maxDelayMs: 1_000, maxRetryAgeMs: 5_000, maxAttempts: 2 });
    // a: its retry at +6 s would come 6 s after its first claim: ended at the failure.
    const a = (await run.enqueue({ topic: 'topic-1' }))!;
    await run.claim('w0#1', a);
    run.advance(5_000);
    await run.fail('w0#1', a, 'rate_limited');
    // b: retried, then claimed again only past its age: retired at the claim.
    const b = (await run.enqueue({ topic: 'topic-2' }))!;
    await run.claim('w0#1', b);
    await run.fail('w0#1', b, 'rate_limited');
    run.advance(6_000);
    expect(await run.tryClaim('w1#1')).toBeUndefined();
    // c: its second attempt fails: attempts, not age.
    const c = (await run.enqueue({ topic: 'topic-3' }))!;
    await run.claim('w0#1', c);
    await run.fail('w0#1', c, 'rate_limited');
    run.advance(1_500);
    await run.claim('w0#1', c);
    await run.fail('w0#1', c, 'rate_limited');
    const world = await run.build();
    const reasons = world.events.filter((event) => event.type === 'failed').map((event) => [event.taskId, event.data.reason]);
    expect(reasons).toEqual([
      [a, 'retry_age_exceeded'],
      [b, 'retry_age_exceeded'],
      [c, 'attempts_exhausted'],
    ]);
    expect(coverageMarks(world)).toMatchObject({ retry_age_exceeded: 2, dead_letter: 3 });
  });

  it("counts the client swarm's calls by the state each met: resends, a conflict, a late version, cancels, a burst", async () => {
    const run = realRun({ globalLimit: 4, perTenantLimit: 4 });
    const a = (await run.enqueue({ topic: 'topic-1' }))!;
    await run.enqueue({ topic: 'topic-1' });
    await run.enqueue({ topic: 'topic-1', priority: 29 });
    await run.claim('w0#1', a);
    await run.enqueue({ topic: 'topic-1' });
    expect(await run.cancel(a)).toMatchObject({ ok: true, state: 'cancel_requested' });
    const b = (await run.enqueue({ topic: 'topic-2' }))!;
    expect(await run.cancel(b)).toMatchObject({ ok: true, state: 'cancelled' });
    expect(await run.cancel(b)).toMatchObject({ ok: false, error: 'already_terminal' });
    await run.enqueue({ topic: 'topic-2' });
    await run.enqueue({ topic: 'topic-3', version: 2 });
    await run.enqueue({ topic: 'topic-3', version: 1 });
    const c = (await run.enqueue({ topic: 'topic-4', priority: 30 }))!;
    await run.claim('w1#1', c);
    run.advance(31_000);
    await run.expireLeases();
    expect(await run.cancel(c)).toMatchObject({ ok: true, state: 'cancel_requested' });
    expect(coverageMarks(await run.build())).toMatchObject({
      resend_before_claim: 1,
      resend_while_running: 1,
      resend_after_end: 1,
      conflict_refused: 1,
      version_out_of_order: 1,
      cancel_ready: 1,
      cancel_running: 1,
      cancel_uncertain: 1,
      cancel_after_end: 1,
      // Nine enqueues at the first instant, none later.
      burst: 1,
    });
  });
});
