import { describe, expect, it } from 'vitest';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { i10Supersede } from './i10-supersede.ts';
import { realRun } from './__test-helpers__/real-run.ts';

/** The real queue: a waiting v1 superseded by v2; a running v1 that finishes after its v2 was queued. */
async function corrections() {
  const run = realRun();
  const running = (await run.enqueue({ topic: 'topic-2' }))!;
  await run.claim('w0#1', running);
  await run.enqueue({ topic: 'topic-1' });
  await run.enqueue({ topic: 'topic-1', version: 2 });
  await run.enqueue({ topic: 'topic-2', version: 2 });
  await run.runToDone('w0#1', running);
  for (let left = 2; left > 0; left--) {
    const next = await run.claim('w0#1');
    await run.runToDone('w0#1', next.id);
  }
  return await run.build();
}

describe('I10 supersede and stale input', () => {
  it('passes: a waiting v1 is superseded; a running v1 finishes stale_input; v2 finishes done', async () => {
    expectClean(i10Supersede, await corrections());
  });

  it('fails when a version that had started (and waits for a retry) is superseded', async () => {
    const run = realRun();
    const old = (await run.enqueue({ topic: 'topic-1' }))!;
    await run.claim('w0#1', old);
    await run.fail('w0#1', old);
    await run.enqueue({ topic: 'topic-1', version: 2 });
    const world = await run.build();
    expectClean(i10Supersede, world);
    // The bad edit: the queue superseded the retrying v1 when v2 arrived (Q2 leaves a started version alone).
    const bad = { ...world, events: [...world.events, { ...world.events.at(-1)!, id: world.events.length + 1, taskId: old, seq: 99, type: 'superseded', data: { from: 'ready', to: 'superseded', byTaskId: 2 } }] };
    expectViolation(i10Supersede, bad, /task 1 \(v1\) was both claimed \(event \d+\) and superseded \(event \d+\)/);
  });

  it('fails when a result from an older version is not marked stale_input', async () => {
    const world = await corrections();
    const staleResult = world.events.find((event) => event.type === 'completed' && event.data.outcome === 'stale_input')!;
    staleResult.data.outcome = 'done';
    expectViolation(i10Supersede, world, /completed with outcome done, expected stale_input/);
  });

  it('fails when a version older than one already queued is accepted to run instead of superseded (Q2)', async () => {
    const run = realRun();
    await run.enqueue({ topic: 'topic-1', version: 2 });
    await run.enqueue({ topic: 'topic-1', version: 1 });
    const world = await run.build();
    expect(world.events.map((event) => [event.taskId, event.type])).toEqual([
      [1, 'enqueued'],
      [2, 'superseded'],
    ]);
    expectClean(i10Supersede, world);
    const late = world.events.find((event) => event.taskId === 2)!;
    const bad = { ...world, events: world.events.map((event) => (event === late ? { ...late, type: 'enqueued', data: { to: 'ready', version: 1 } } : event)) };
    expectViolation(i10Supersede, bad, /task 2 \(v1\) arrived after v2 \(task 1\) and was enqueued, not superseded/);
  });

  it('fails when the client of a late version is answered enqueued instead of superseded (Q2)', async () => {
    const run = realRun();
    await run.enqueue({ topic: 'topic-1', version: 3 });
    await run.enqueue({ topic: 'topic-1', version: 1 });
    const world = await run.build();
    expect(world.enqueued.map(({ result }) => (result.ok ? result.status : result.error))).toEqual(['enqueued', 'superseded']);
    expectClean(i10Supersede, world);
    world.enqueued[1] = { ...world.enqueued[1]!, result: { ok: true, taskId: 2, status: 'enqueued' } };
    expectViolation(i10Supersede, world, /enqueue of acme\/topic-1\/v1 stored task 2 superseded \(a newer version came first\) but answered enqueued/);
    world.enqueued[1] = { ...world.enqueued[1]!, result: { ok: true, taskId: 1, status: 'superseded' } };
    expectViolation(i10Supersede, world, /was answered superseded, but task 1 was stored enqueued/);
  });

  it('fails when an older version is left ready after a newer one was enqueued', async () => {
    const world = await corrections();
    world.events = world.events.filter((event) => event.type !== 'superseded');
    expectViolation(i10Supersede, world, /task 2 \(v1\) had not started and was still ready when v2 \(task 3\) was enqueued/);
  });
});
