import { afterEach, describe, expect, it } from 'vitest';
import { InputError } from './errors.ts';
import { TRANSITIONS, canTransition } from './states.ts';
import {
  checkAndCloseQueues,
  claimOk,
  enqueueOk,
  fingerprint,
  openTestQueue,
  recordedTransitions,
  request,
} from './__test-helpers__/test-kit.ts';
import type { TaskState } from './types.ts';

afterEach(checkAndCloseQueues);

describe('Q12 done is not resolved', () => {
  it('ends the execution done and keeps the business outcome verbatim in the result', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    clock.advance(4_000);
    const result = { status: 'needs_human', evidence: ['payment captured', 'no print receipt'], note: '\u672a\u51fa\u5355', nested: { n: 1.5, ok: false, none: null } };
    expect(await queue.complete(id, 'w1', 1, result)).toEqual({ ok: true, outcome: 'done' });
    const view = await queue.get(id);
    expect(view).toMatchObject({ state: 'done', outcome: 'done', runMs: 4_000 });
    expect(view?.result).toEqual(result);
    expect(view?.workerId).toBe('w1');
    expect(view?.leaseUntil).toBeUndefined();
  });

  it('stores a null result for complete without one', async () => {
    const { queue } = openTestQueue();
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    expect(await queue.complete(id, 'w1', 1, undefined)).toEqual({ ok: true, outcome: 'done' });
    expect(await queue.get(id)).toMatchObject({ state: 'done', result: null });
  });

  it('refuses a result that is not JSON with InputError and leaves the task running', async () => {
    const { queue } = openTestQueue();
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    const before = await fingerprint(queue);
    await expect(queue.complete(id, 'w1', 1, { amount: 1n })).rejects.toThrow(InputError);
    await expect(queue.complete(id, 'w1', 1, { run() {} })).rejects.toThrow(expect.objectContaining({ field: 'result' }));
    expect(await fingerprint(queue)).toEqual(before);
  });
});

describe('Q13 cancel', () => {
  it('refuses to end a run cancelled when nobody asked for it, and changes nothing', async () => {
    const { queue } = openTestQueue();
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    const before = await queue.events(id);
    expect(await queue.acknowledgeCancel(id, 'w1', 1)).toMatchObject({ ok: false, error: 'not_requested' });
    expect(await queue.get(id)).toMatchObject({ state: 'running', cancelRequested: false });
    expect(await queue.events(id)).toEqual(before);
  });

  it('cancels a ready task at once; it never runs', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue);
    clock.advance(10);
    expect(await queue.cancel(id)).toEqual({ ok: true, state: 'cancelled' });
    expect(await queue.get(id)).toMatchObject({ state: 'cancelled', outcome: 'cancelled', generation: 0 });
    expect((await queue.events(id)).at(-1)).toMatchObject({ type: 'cancelled', at: clock.t, data: { from: 'ready', to: 'cancelled' } });
    expect(await queue.claim('w1')).toEqual({ ok: false, reason: 'empty' });
  });

  it('records a request on a running task, which the worker sees on heartbeat and then acknowledges', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue, { tenant: 'a' });
    const other = await enqueueOk(queue, { tenant: 'a' });
    await claimOk(queue, 'w1');
    expect(await queue.heartbeat(id, 'w1', 1)).toMatchObject({ ok: true, cancelRequested: false });
    expect(await queue.cancel(id)).toEqual({ ok: true, state: 'cancel_requested' });
    expect(await queue.get(id)).toMatchObject({ state: 'running', cancelRequested: true });
    expect((await queue.events(id)).at(-1)).toMatchObject({ type: 'cancel_requested', at: clock.t });
    clock.advance(1_000);
    expect(await queue.heartbeat(id, 'w1', 1)).toEqual({ ok: true, leaseUntil: clock.t + 30_000, cancelRequested: true });
    expect(await queue.acknowledgeCancel(id, 'w1', 1)).toEqual({ ok: true });
    expect(await queue.get(id)).toMatchObject({ state: 'cancelled', outcome: 'cancelled' });
    expect((await queue.events(id)).at(-1)).toMatchObject({ type: 'cancelled', data: { from: 'running', to: 'cancelled' } });
    // The slot is free again.
    expect((await claimOk(queue, 'w2')).id).toBe(other);
  });

  it('persists the request: a second cancel changes nothing more', async () => {
    const { queue } = openTestQueue();
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    await queue.cancel(id);
    const before = await fingerprint(queue);
    expect(await queue.cancel(id)).toEqual({ ok: true, state: 'cancel_requested' });
    expect(await fingerprint(queue)).toEqual(before);
  });

  it('answers already_terminal for a finished task and changes nothing', async () => {
    const { queue } = openTestQueue();
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    await queue.complete(id, 'w1', 1, { status: 'resolved' });
    const before = await fingerprint(queue);
    expect(await queue.cancel(id)).toMatchObject({ ok: false, error: 'already_terminal', state: 'done' });
    expect(await fingerprint(queue)).toEqual(before);
    expect(await queue.cancel(12345)).toMatchObject({ ok: false, error: 'not_found' });
  });

  it('lets a completion that commits after the cancel request win, and says so in the event', async () => {
    const { queue } = openTestQueue();
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    await queue.cancel(id);
    expect(await queue.complete(id, 'w1', 1, { status: 'resolved' })).toEqual({ ok: true, outcome: 'done' });
    expect(await queue.get(id)).toMatchObject({ state: 'done', outcome: 'done', result: { status: 'resolved' } });
    expect((await queue.events(id)).at(-1)).toMatchObject({ type: 'completed', data: { cancelRequested: true, to: 'done' } });
    expect(await queue.cancel(id)).toMatchObject({ ok: false, error: 'already_terminal', state: 'done' });
  });

  it('tells a worker whose run was already cancelled that its completion lost', async () => {
    const { queue } = openTestQueue();
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    await queue.cancel(id);
    await queue.acknowledgeCancel(id, 'w1', 1);
    expect(await queue.complete(id, 'w1', 1, { status: 'resolved' })).toMatchObject({ ok: false, error: 'stale_lease' });
    expect((await queue.get(id))?.state).toBe('cancelled');
  });

  it('ends a failing run cancelled instead of retrying it when a cancel is pending', async () => {
    const { queue } = openTestQueue();
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    await queue.cancel(id);
    expect(await queue.fail(id, 'w1', 1, { errorClass: 'rate_limited', message: '429' })).toEqual({ ok: true, next: 'cancelled' });
    expect(await queue.get(id)).toMatchObject({ state: 'cancelled', outcome: 'cancelled' });
  });

  it('records a cancel on an uncertain task and applies it when the stop is confirmed', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    clock.advance(30_000);
    await queue.expireLeases();
    expect(await queue.cancel(id)).toEqual({ ok: true, state: 'cancel_requested' });
    expect(await queue.get(id)).toMatchObject({ state: 'uncertain', cancelRequested: true });
    expect(await queue.confirmStopped(id, 1, 'supervisor')).toEqual({ ok: true, next: 'cancelled' });
    expect(await queue.get(id)).toMatchObject({ state: 'cancelled', outcome: 'cancelled' });
  });
});

describe('Q14 deadlines', () => {
  it('answers a resend of a stored task as a duplicate even after its deadline passed (Q1 before Q14)', async () => {
    const { queue, clock } = openTestQueue();
    const sent = request({ topic: 'resend', deadline: clock.t + 1_000 });
    const id = await enqueueOk(queue, sent);
    clock.advance(2_000);
    expect(await queue.enqueue(sent)).toEqual({ ok: true, taskId: id, status: 'duplicate' });
    expect(await queue.enqueue({ ...sent, priority: 7 })).toMatchObject({ ok: false, error: 'idempotency_conflict', taskId: id });
    expect((await queue.rejections()).map((rejection) => rejection.reason)).toEqual(['idempotency_conflict']);
  });

  it('rejects an enqueue whose deadline is not in the future, with the reason recorded', async () => {
    const { queue, clock } = openTestQueue();
    const before = (await queue.snapshot()).tasks;
    expect(await queue.enqueue(request({ topic: 'late', deadline: clock.t }))).toMatchObject({ ok: false, error: 'expired' });
    expect(await queue.enqueue(request({ topic: 'later', deadline: clock.t - 60_000 }))).toMatchObject({ ok: false, error: 'expired' });
    expect((await queue.snapshot()).tasks).toEqual(before);
    expect(await queue.allEvents()).toEqual([]);
    expect((await queue.rejections()).map((rejection) => [rejection.topic, rejection.reason])).toEqual([
      ['late', 'expired'],
      ['later', 'expired'],
    ]);
    expect(await queue.enqueue(request({ deadline: clock.t + 1 }))).toMatchObject({ ok: true, status: 'enqueued' });
  });

  it('expires a task at claim instead of running it, and claims the next one', async () => {
    const { queue, clock } = openTestQueue();
    const doomed = await enqueueOk(queue, { tenant: 'a', priority: 30, deadline: clock.t + 5_000 });
    const fine = await enqueueOk(queue, { tenant: 'a', priority: 0 });
    clock.advance(5_000);
    const claimed = await claimOk(queue, 'w1');
    expect(claimed.id).toBe(fine);
    expect(await queue.get(doomed)).toMatchObject({ state: 'expired', generation: 0, attempts: 0 });
    expect((await queue.events(doomed)).at(-1)).toMatchObject({ type: 'expired', at: clock.t, data: { from: 'ready', to: 'expired', when: 'claim' } });
  });

  it('answers empty when the only ready task expired at claim, holding no slot', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue, { deadline: clock.t + 1_000 });
    clock.advance(1_000);
    expect(await queue.claim('w1')).toEqual({ ok: false, reason: 'empty' });
    expect((await queue.get(id))?.state).toBe('expired');
    expect((await queue.snapshot()).occupied.global).toBe(0);
  });

  it('hands the deadline to the worker with the claim', async () => {
    const { queue, clock } = openTestQueue();
    await enqueueOk(queue, { deadline: clock.t + 60_000 });
    expect((await claimOk(queue, 'w1')).deadline).toBe(clock.t + 60_000);
  });

  it('drops a result committed after the deadline: the task ends expired and its slot is freed', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue, { tenant: 'a', deadline: clock.t + 20_000 });
    const next = await enqueueOk(queue, { tenant: 'a' });
    await claimOk(queue, 'w1');
    clock.advance(20_000);
    expect(await queue.complete(id, 'w1', 1, { status: 'resolved' })).toMatchObject({ ok: false, error: 'expired' });
    expect(await queue.get(id)).toMatchObject({ state: 'expired' });
    expect((await queue.get(id))?.result).toBeUndefined();
    expect((await queue.events(id)).at(-1)).toMatchObject({ type: 'expired', data: { from: 'running', to: 'expired', when: 'complete' } });
    expect((await claimOk(queue, 'w2')).id).toBe(next);
  });

  it('accepts a result committed before the deadline', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue, { deadline: clock.t + 20_000 });
    await claimOk(queue, 'w1');
    clock.advance(19_999);
    expect(await queue.complete(id, 'w1', 1, 'in time')).toEqual({ ok: true, outcome: 'done' });
  });

  it('expires an uncertain task whose deadline passed when its stop is confirmed', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue, { deadline: clock.t + 40_000 });
    await claimOk(queue, 'w1');
    clock.advance(40_000);
    await queue.expireLeases();
    expect(await queue.confirmStopped(id, 1, 'supervisor')).toEqual({ ok: true, next: 'expired' });
    expect((await queue.get(id))?.state).toBe('expired');
  });
});

describe('Q15 event log', () => {
  it('numbers each task’s events 1..n and records the time of each transition', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue);
    clock.advance(100);
    await claimOk(queue, 'w1');
    clock.advance(100);
    await queue.appendEvent(id, 'w1', 1, 'model_returned', { tokens: 12 });
    clock.advance(100);
    await queue.fail(id, 'w1', 1, { errorClass: 'tool_timeout', message: 'slow tool' });
    const events = await queue.events(id);
    expect(events.map((event) => [event.seq, event.type, event.at - events[0]!.at])).toEqual([
      [1, 'enqueued', 0],
      [2, 'claimed', 100],
      [3, 'model_returned', 200],
      [4, 'retry_scheduled', 300],
    ]);
  });

  it('records queue wait and run time per task', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue);
    clock.advance(2_500);
    await claimOk(queue, 'w1');
    clock.advance(7_250);
    await queue.complete(id, 'w1', 1, null);
    expect(await queue.get(id)).toMatchObject({ queueWaitMs: 2_500, runMs: 7_250 });
    expect((await queue.events(id))[1]?.data.queueWaitMs).toBe(2_500);
  });

  it('lists all events in commit order across tasks', async () => {
    const { queue, clock } = openTestQueue();
    const a = await enqueueOk(queue, { tenant: 'a' });
    const b = await enqueueOk(queue, { tenant: 'b' });
    await claimOk(queue, 'w1');
    clock.advance(1);
    await queue.complete(a, 'w1', 1, null);
    await queue.cancel(b);
    expect((await queue.allEvents()).map((event) => [event.taskId, event.type])).toEqual([
      [a, 'enqueued'],
      [b, 'enqueued'],
      [a, 'claimed'],
      [a, 'completed'],
      [b, 'cancelled'],
    ]);
  });

});

describe('Q15 state machine coverage', () => {
  /** One small story per edge; each returns the queue it ran on so that its log can be read. */
  const stories: [string, () => Promise<ReturnType<typeof openTestQueue>['queue']>][] = [
    ['ready->running->done', async () => {
      const { queue } = openTestQueue();
      const id = await enqueueOk(queue);
      await claimOk(queue, 'w1');
      await queue.complete(id, 'w1', 1, { status: 'needs_human' });
      return queue;
    }],
    ['ready->superseded', async () => {
      const { queue } = openTestQueue();
      await enqueueOk(queue, { topic: 'chat', version: 1 });
      await enqueueOk(queue, { topic: 'chat', version: 2 });
      return queue;
    }],
    ['ready->cancelled', async () => {
      const { queue } = openTestQueue();
      await queue.cancel(await enqueueOk(queue));
      return queue;
    }],
    ['ready->expired', async () => {
      const { queue, clock } = openTestQueue();
      await enqueueOk(queue, { deadline: clock.t + 1_000 });
      clock.advance(1_000);
      await queue.claim('w1');
      return queue;
    }],
    ['running->ready->failed (retry age)', async () => {
      const { queue, clock } = openTestQueue({ config: { maxRetryAgeMs: 600_000 } });
      const id = await enqueueOk(queue);
      await claimOk(queue, 'w1');
      await queue.fail(id, 'w1', 1, { errorClass: 'rate_limited', message: '429' });
      clock.advance(700_000);
      await queue.claim('w2');
      return queue;
    }],
    ['running->failed', async () => {
      const { queue } = openTestQueue();
      const id = await enqueueOk(queue);
      await claimOk(queue, 'w1');
      await queue.fail(id, 'w1', 1, { errorClass: 'permission_denied', message: 'no' });
      return queue;
    }],
    ['running->cancelled', async () => {
      const { queue } = openTestQueue();
      const id = await enqueueOk(queue);
      await claimOk(queue, 'w1');
      await queue.cancel(id);
      await queue.acknowledgeCancel(id, 'w1', 1);
      return queue;
    }],
    ['running->expired', async () => {
      const { queue, clock } = openTestQueue();
      const id = await enqueueOk(queue, { deadline: clock.t + 10_000 });
      await claimOk(queue, 'w1');
      clock.advance(10_000);
      await queue.complete(id, 'w1', 1, 'late');
      return queue;
    }],
    ['running->uncertain->ready, uncertain->failed', async () => {
      const { queue, clock } = openTestQueue({ config: { maxAttempts: 2 } });
      const id = await enqueueOk(queue);
      for (const generation of [1, 2]) {
        await claimOk(queue, `w${generation}`);
        clock.advance(30_000);
        await queue.expireLeases();
        await queue.confirmStopped(id, generation, 'supervisor');
      }
      return queue;
    }],
    ['uncertain->cancelled', async () => {
      const { queue, clock } = openTestQueue();
      const id = await enqueueOk(queue);
      await claimOk(queue, 'w1');
      clock.advance(30_000);
      await queue.expireLeases();
      await queue.cancel(id);
      await queue.confirmStopped(id, 1, 'supervisor');
      return queue;
    }],
    ['uncertain->expired', async () => {
      const { queue, clock } = openTestQueue();
      const id = await enqueueOk(queue, { deadline: clock.t + 30_000 });
      await claimOk(queue, 'w1');
      clock.advance(30_000);
      await queue.expireLeases();
      await queue.confirmStopped(id, 1, 'supervisor');
      return queue;
    }],
  ];

  it('exercises every edge of TRANSITIONS, and every recorded edge is legal', async () => {
    const recorded = new Set<string>();
    for (const [name, story] of stories) {
      const edges = await recordedTransitions(await story());
      const named = name.replace(/ \(.*\)/, '').split(', ').flatMap((path) => {
        const states = path.split('->');
        return states.slice(1).map((to, index) => `${states[index]}->${to}`);
      });
      for (const edge of named) expect(edges.has(edge), `${name}: ${edge}`).toBe(true);
      for (const edge of edges) recorded.add(edge);
    }
    for (const edge of recorded) {
      const [from, to] = edge.split('->') as [TaskState, TaskState];
      expect(canTransition(from, to), edge).toBe(true);
    }
    const expected = Object.entries(TRANSITIONS).flatMap(([from, targets]) => targets.map((to) => `${from}->${to}`));
    expect([...recorded].sort()).toEqual(expected.sort());
  });

  it('has no way out of a terminal state', () => {
    for (const state of ['done', 'failed', 'superseded', 'cancelled', 'expired'] as const) {
      expect(TRANSITIONS[state]).toEqual([]);
    }
  });
});
