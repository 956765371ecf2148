import { describe, expect, it } from 'vitest';
import type { QueueConfig } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { i20Admission, i20DeferredNotLost } from './i20-admission.ts';
import { budgetRun, buildWithBudgets, enqueueWith, judgedUnder, pause, withEvents } from './__test-helpers__/budget-run.ts';

const config: Partial<QueueConfig> = {
  capacity: 2,
  criticalHeadroom: 1,
  globalLimit: 2,
  perTenantLimit: 2,
  budgets: { tpm: { kind: 'rate', capacity: 100, refill: 100, periodMs: 60_000 } },
};

/**
 * Task 1 runs holding the whole bucket; task 2 waits for the bucket (rate DEFER with retryAt); a new
 * topic past capacity is refused, a critical one admitted into the headroom (DEFER capacity), the next
 * critical one past the headroom refused; a paused tenant's enqueue is accepted DEFER tenant_paused.
 */
async function admissions(finish = false): Promise<WorldResult> {
  const run = budgetRun(config);
  const a = (await enqueueWith(run, { needs: { tpm: 100 } }))!;
  const b = (await enqueueWith(run, { tenant: 'globex', needs: { tpm: 50 } }))!;
  await run.claim('w0#1', a);
  expect(await run.tryClaim('w1#1')).toBeUndefined();
  expect(await enqueueWith(run, { tenant: 'initech' })).toBeUndefined();
  const c = (await enqueueWith(run, { tenant: 'initech', topic: 'urgent', critical: true }))!;
  expect(await enqueueWith(run, { tenant: 'initech', topic: 'urgent-2', critical: true })).toBeUndefined();
  await pause(run, 'hooli');
  if (finish) {
    await run.runToDone('w0#1', a);
    run.advance(60_000);
    await run.claim('w1#1', b);
    await run.runToDone('w1#1', b);
    await run.claim('w2#1', c);
    await run.runToDone('w2#1', c);
  }
  return await buildWithBudgets(run, { drained: finish });
}

describe('I20 admission is explicit', () => {
  it('passes a real run with rate, capacity and critical decisions', async () => {
    const world = await admissions();
    expect(world.admissionDecisions!.map((row) => `${row.action}:${row.reason}${row.retryAt === undefined ? '' : ':retry'}`)).toEqual([
      'DEFER:rate_limited:retry',
      'REJECT:queue_full',
      'DEFER:capacity',
      'REJECT:queue_full',
      'PAUSE:maintenance',
    ]);
    expectClean(i20Admission, world);
  });

  it('fails a decision or a deferral whose reason is not in the SPEC set', async () => {
    const world = await admissions();
    const rows = world.admissionDecisions!;
    expectViolation(i20Admission, { ...world, admissionDecisions: rows.map((row, i) => (i === 1 ? { ...row, reason: 'vibes' } : row)) }, /I20 reason: a REJECT of tenant initech at \d+ has reason "vibes"/);
    expectViolation(i20Admission, { ...world, admissionDecisions: rows.map((row, i) => (i === 1 ? { ...row, action: 'MAYBE' as 'RUN' } : row)) }, /has action "MAYBE"/);
    const deferred = world.events.find((event) => event.type === 'deferred')!;
    expectViolation(i20Admission, withEvents(world, (events) => events.map((event) => (event.id === deferred.id ? { ...event, data: { ...event.data, reason: 'busy' } } : event))), /I20 reason: task 2's deferred event \d+ defers it with reason "busy"/);
    const enqueued = world.events.find((event) => event.type === 'enqueued' && event.data.admission !== undefined)!;
    expectViolation(i20Admission, withEvents(world, (events) => events.map((event) => (event.id === enqueued.id ? { ...event, data: { ...event.data, admission: { action: 'DEFER' } } } : event))), /I20 reason: task 3's enqueued event \d+ defers it with reason undefined/);
  });

  it('fails a retryAt before the decision', async () => {
    const world = await admissions();
    const deferred = world.events.find((event) => event.type === 'deferred')!;
    expect(deferred.data.retryAt).toBe(deferred.at + 30_000);
    expectViolation(i20Admission, withEvents(world, (events) => events.map((event) => (event.id === deferred.id ? { ...event, data: { ...event.data, retryAt: event.at - 1 } } : event))), /I20 retryAt: task 2's deferral .* names retryAt \d+, before the decision/);
    expectViolation(i20Admission, { ...world, admissionDecisions: world.admissionDecisions!.map((row) => (row.retryAt === undefined ? row : { ...row, retryAt: row.at - 5 })) }, /I20 retryAt: a DEFER of task 2 at \d+ names retryAt/);
  });

  it('fails a rejection without its REJECT, and a REJECT without its rejection', async () => {
    const world = await admissions();
    const rows = world.admissionDecisions!;
    expectViolation(i20Admission, { ...world, admissionDecisions: rows.filter((row, i) => i !== 1) }, /I20 rejection: 1 rejection\(s\) of initech \/ \d+ \/ capacity have no REJECT admission decision/);
    expectViolation(i20Admission, { ...world, final: { ...world.final, rejections: world.final.rejections.slice(1) } }, /I20 rejection: 1 REJECT decision\(s\) of initech \/ \d+ \/ capacity have no recorded rejection/);
  });

  it('fails a deferral without its DEFER, a DEFER without its deferral, and one wait recorded twice', async () => {
    const world = await admissions();
    const rows = world.admissionDecisions!;
    expectViolation(i20Admission, { ...world, admissionDecisions: rows.filter((row) => row.reason !== 'capacity') }, /I20 deferral: 1 deferral\(s\) in the log \(task 3 \/ \d+ \/ capacity\) have no DEFER admission decision/);
    expectViolation(i20Admission, { ...world, admissionDecisions: [...rows, { ...rows[0]!, at: rows[0]!.at + 1 }] }, /I20 deferral: 1 DEFER decision\(s\) \(task 2 \/ \d+ \/ rate_limited\) have no deferral in the task's log/);
    const deferred = world.events.find((event) => event.type === 'deferred')!;
    const twice = withEvents(world, (events) => [...events, { ...deferred, id: 999, seq: deferred.seq + 1 }]);
    expectViolation(i20Admission, { ...twice, admissionDecisions: [...rows, rows[0]!] }, /I20 once: task 2 was deferred "rate_limited" again \(event 999\) while still waiting on the same reason/);
  });

  it('fails a critical task refused for capacity while the headroom had room', async () => {
    const world = await admissions();
    expectClean(i20Admission, world);
    // Under a headroom of 5 the second critical enqueue (3 live) should have been admitted.
    expectViolation(i20Admission, judgedUnder(world, { criticalHeadroom: 5 }), /I20 critical: critical enqueue of initech \/ urgent-2 \/ 1 was refused queue_full with 3 live tasks, capacity 2 \+ critical headroom 5/);
    // A non-critical refusal is I4's, not this rule's.
    expect(i20Admission.check(judgedUnder(world, { criticalHeadroom: 5 })).filter((v) => /topic-3/.test(v.message))).toEqual([]);
  });

  it('liveness: every deferred task ends terminal in a drained run', async () => {
    const done = await admissions(true);
    expect(done.final.tasks.map((task) => task.state)).toEqual(['done', 'done', 'done']);
    expectClean(i20DeferredNotLost, done);
    expectClean(i20Admission, done);
    const stuck = await admissions();
    expectClean(i20DeferredNotLost, stuck);
    expectViolation(i20DeferredNotLost, { ...stuck, drained: true }, /I20 lost: task 2 was deferred and is still ready after the liveness phase/);
    expectViolation(i20DeferredNotLost, { ...stuck, drained: true }, /I20 lost: task 3 was deferred and is still ready/);
  });
});
