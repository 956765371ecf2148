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

  it('counts admission and budgets: deferred by reason, critical deferred then ran, the bucket head waited, exceeds_budget, a retry releasing its reservation', async () => {
    const run = realRun({
      capacity: 2,
      criticalHeadroom: 2,
      globalLimit: 2,
      perTenantLimit: 2,
      budgets: { browser_sessions: { kind: 'concurrency', limit: 1 }, outbound: { kind: 'rate', capacity: 1, refill: 1, periodMs: 60_000 } },
    });
    const enqueue = (topic: string, extra: object, tenant = 'acme') => run.queue.enqueue({ tenant, topic, version: 1, priority: 10, input: { n: topic }, ...extra });
    expect(await enqueue('huge', { needs: { browser_sessions: 2 } })).toMatchObject({ ok: false, error: 'exceeds_budget' });
    const a = (await enqueue('a', { needs: { browser_sessions: 1 } })) as { taskId: number };
    const b = (await enqueue('b', { needs: { browser_sessions: 1 } })) as { taskId: number };
    // Full: a critical task is admitted into the headroom, DEFER capacity.
    const c = (await enqueue('c', { critical: true, needs: { outbound: 1 } }, 'globex')) as { taskId: number };
    expect(await enqueue('d', {})).toMatchObject({ ok: false, error: 'queue_full' });
    await run.claim('w0#1', a.taskId);
    // b waits for the browser session (DEFER budget, acme skipped for the rest of the claim); globex's c runs.
    await run.claim('w1#1', c.taskId);
    // a's retry gives its session back (it backs off); b, the bucket's head, runs.
    await run.fail('w0#1', a.taskId, 'rate_limited');
    await run.claim('w2#1', b.taskId);
    const marks = coverageMarks(await run.build());
    expect(marks).toMatchObject({
      exceeds_budget_rejected: 1,
      deferred_capacity: 1,
      critical_deferred_then_ran: 1,
      deferred_budget: 1,
      bucket_head_waited: 1,
      reservation_released_on_retry: 1,
      queue_full: 1,
      budget_exhausted: 0,
    });
  });

  it('counts a paused tenant that had ready work while another tenant was claimed, and its deferred enqueue', async () => {
    const run = realRun({ globalLimit: 2, perTenantLimit: 2 });
    const a = (await run.enqueue({ tenant: 'acme', topic: 'a-1' }))!;
    const invoke = run.history.invoke('operator', 'pauseTenant', { data: { tenant: 'acme', args: ['acme', 'drill'] } });
    await run.queue.pauseTenant('acme', 'drill');
    run.history.ok(invoke, { data: { tenant: 'acme', args: ['acme', 'drill'], ev: await run.queue.eventCursor() } });
    await run.enqueue({ tenant: 'acme', topic: 'a-2' });
    const g = (await run.enqueue({ tenant: 'globex', topic: 'g-1' }))!;
    await run.claim('w0#1', g);
    const marks = coverageMarks(await run.build());
    expect(marks).toMatchObject({ tenant_paused_no_lease: 1, deferred_tenant_paused: 1 });
    expect(a).toBeGreaterThan(0);
  });

  it('counts a run that a total budget ended budget_exhausted', async () => {
    const run = realRun({ budgets: { run_tokens: { kind: 'total', limit: 1, per: 'run' } } });
    const task = (await run.queue.enqueue({ tenant: 'acme', topic: 't', version: 1, priority: 10, input: {}, needs: { run_tokens: 1 } })) as { taskId: number };
    const claimed = await run.claim('w0#1', task.taskId);
    expect(await run.as('w0#1').reserve(task.taskId, 'w0#1', claimed.generation, { run_tokens: 1 })).toMatchObject({ ok: false, error: 'budget' });
    expect(coverageMarks(await run.build())).toMatchObject({ budget_exhausted: 1 });
  });
});
