import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { InputError } from './errors.ts';
import { TRANSITIONS, canTransition } from './states.ts';
import {
  assertEventLogConsistent,
  checkAndCloseQueues,
  claimOk,
  enqueueOk,
  fingerprint,
  openTestQueue,
  recordedTransitions,
  request,
} from './test-kit.ts';
import type { TaskState } from './types.ts';

afterEach(checkAndCloseQueues);

describe('Q12 done is not resolved', () => {
  it('ends the execution done and keeps the business outcome verbatim in the result', () => {
    const { queue, clock } = openTestQueue();
    const id = enqueueOk(queue);
    claimOk(queue, 'w1');
    clock.advance(4_000);
    const result = { status: 'needs_human', evidence: ['payment captured', 'no print receipt'], note: '\u672a\u51fa\u5355', nested: { n: 1.5, ok: false, none: null } };
    expect(queue.complete(id, 'w1', 1, result)).toEqual({ ok: true, outcome: 'done' });
    const view = queue.get(id);
    expect(view).toMatchObject({ state: 'done', outcome: 'done', runMs: 4_000 });
    expect(view?.result).toEqual(result);
    expect(view?.workerId).toBe('w1');
    expect(view?.leaseUntil).toBeUndefined();
  });

  it('stores a null result for complete without one', () => {
    const { queue } = openTestQueue();
    const id = enqueueOk(queue);
    claimOk(queue, 'w1');
    expect(queue.complete(id, 'w1', 1, undefined)).toEqual({ ok: true, outcome: 'done' });
    expect(queue.get(id)).toMatchObject({ state: 'done', result: null });
  });

  it('refuses a result that is not JSON with InputError and leaves the task running', () => {
    const { queue } = openTestQueue();
    const id = enqueueOk(queue);
    claimOk(queue, 'w1');
    const before = fingerprint(queue);
    expect(() => queue.complete(id, 'w1', 1, { amount: 1n })).toThrow(InputError);
    expect(() => queue.complete(id, 'w1', 1, { run() {} })).toThrow(expect.objectContaining({ field: 'result' }));
    expect(fingerprint(queue)).toEqual(before);
  });
});

describe('Q13 cancel', () => {
  it('refuses to end a run cancelled when nobody asked for it, and changes nothing', () => {
    const { queue } = openTestQueue();
    const id = enqueueOk(queue);
    claimOk(queue, 'w1');
    const before = queue.events(id);
    expect(queue.acknowledgeCancel(id, 'w1', 1)).toMatchObject({ ok: false, error: 'not_requested' });
    expect(queue.get(id)).toMatchObject({ state: 'running', cancelRequested: false });
    expect(queue.events(id)).toEqual(before);
  });

  it('cancels a ready task at once; it never runs', () => {
    const { queue, clock } = openTestQueue();
    const id = enqueueOk(queue);
    clock.advance(10);
    expect(queue.cancel(id)).toEqual({ ok: true, state: 'cancelled' });
    expect(queue.get(id)).toMatchObject({ state: 'cancelled', outcome: 'cancelled', generation: 0 });
    expect(queue.events(id).at(-1)).toMatchObject({ type: 'cancelled', at: clock.t, data: { from: 'ready', to: 'cancelled' } });
    expect(queue.claim('w1')).toEqual({ ok: false, reason: 'empty' });
  });

  it('records a request on a running task, which the worker sees on heartbeat and then acknowledges', () => {
    const { queue, clock } = openTestQueue();
    const id = enqueueOk(queue, { tenant: 'a' });
    const other = enqueueOk(queue, { tenant: 'a' });
    claimOk(queue, 'w1');
    expect(queue.heartbeat(id, 'w1', 1)).toMatchObject({ ok: true, cancelRequested: false });
    expect(queue.cancel(id)).toEqual({ ok: true, state: 'cancel_requested' });
    expect(queue.get(id)).toMatchObject({ state: 'running', cancelRequested: true });
    expect(queue.events(id).at(-1)).toMatchObject({ type: 'cancel_requested', at: clock.t });
    clock.advance(1_000);
    expect(queue.heartbeat(id, 'w1', 1)).toEqual({ ok: true, leaseUntil: clock.t + 30_000, cancelRequested: true });
    expect(queue.acknowledgeCancel(id, 'w1', 1)).toEqual({ ok: true });
    expect(queue.get(id)).toMatchObject({ state: 'cancelled', outcome: 'cancelled' });
    expect(queue.events(id).at(-1)).toMatchObject({ type: 'cancelled', data: { from: 'running', to: 'cancelled' } });
    // The slot is free again.
    expect(claimOk(queue, 'w2').id).toBe(other);
  });

  it('persists the request: a second cancel changes nothing more', () => {
    const { queue } = openTestQueue();
    const id = enqueueOk(queue);
    claimOk(queue, 'w1');
    queue.cancel(id);
    const before = fingerprint(queue);
    expect(queue.cancel(id)).toEqual({ ok: true, state: 'cancel_requested' });
    expect(fingerprint(queue)).toEqual(before);
  });

  it('answers already_terminal for a finished task and changes nothing', () => {
    const { queue } = openTestQueue();
    const id = enqueueOk(queue);
    claimOk(queue, 'w1');
    queue.complete(id, 'w1', 1, { status: 'resolved' });
    const before = fingerprint(queue);
    expect(queue.cancel(id)).toMatchObject({ ok: false, error: 'already_terminal', state: 'done' });
    expect(fingerprint(queue)).toEqual(before);
    expect(queue.cancel(12345)).toMatchObject({ ok: false, error: 'not_found' });
  });

  it('lets a completion that commits after the cancel request win, and says so in the event', () => {
    const { queue } = openTestQueue();
    const id = enqueueOk(queue);
    claimOk(queue, 'w1');
    queue.cancel(id);
    expect(queue.complete(id, 'w1', 1, { status: 'resolved' })).toEqual({ ok: true, outcome: 'done' });
    expect(queue.get(id)).toMatchObject({ state: 'done', outcome: 'done', result: { status: 'resolved' } });
    expect(queue.events(id).at(-1)).toMatchObject({ type: 'completed', data: { cancelRequested: true, to: 'done' } });
    expect(queue.cancel(id)).toMatchObject({ ok: false, error: 'already_terminal', state: 'done' });
  });

  it('tells a worker whose run was already cancelled that its completion lost', () => {
    const { queue } = openTestQueue();
    const id = enqueueOk(queue);
    claimOk(queue, 'w1');
    queue.cancel(id);
    queue.acknowledgeCancel(id, 'w1', 1);
    expect(queue.complete(id, 'w1', 1, { status: 'resolved' })).toMatchObject({ ok: false, error: 'stale_lease' });
    expect(queue.get(id)?.state).toBe('cancelled');
  });

  it('ends a failing run cancelled instead of retrying it when a cancel is pending', () => {
    const { queue } = openTestQueue();
    const id = enqueueOk(queue);
    claimOk(queue, 'w1');
    queue.cancel(id);
    expect(queue.fail(id, 'w1', 1, { errorClass: 'rate_limited', message: '429' })).toEqual({ ok: true, next: 'cancelled' });
    expect(queue.get(id)).toMatchObject({ state: 'cancelled', outcome: 'cancelled' });
  });

  it('records a cancel on an uncertain task and applies it when the stop is confirmed', () => {
    const { queue, clock } = openTestQueue();
    const id = enqueueOk(queue);
    claimOk(queue, 'w1');
    clock.advance(30_000);
    queue.expireLeases();
    expect(queue.cancel(id)).toEqual({ ok: true, state: 'cancel_requested' });
    expect(queue.get(id)).toMatchObject({ state: 'uncertain', cancelRequested: true });
    expect(queue.confirmStopped(id, 1, 'supervisor')).toEqual({ ok: true, next: 'cancelled' });
    expect(queue.get(id)).toMatchObject({ state: 'cancelled', outcome: 'cancelled' });
  });
});

describe('Q14 deadlines', () => {
  it('answers a resend of a stored task as a duplicate even after its deadline passed (Q1 before Q14)', () => {
    const { queue, clock } = openTestQueue();
    const sent = request({ topic: 'resend', deadline: clock.t + 1_000 });
    const id = enqueueOk(queue, sent);
    clock.advance(2_000);
    expect(queue.enqueue(sent)).toEqual({ ok: true, taskId: id, status: 'duplicate' });
    expect(queue.enqueue({ ...sent, priority: 7 })).toMatchObject({ ok: false, error: 'idempotency_conflict', taskId: id });
    expect(queue.rejections().map((rejection) => rejection.reason)).toEqual(['idempotency_conflict']);
  });

  it('rejects an enqueue whose deadline is not in the future, with the reason recorded', () => {
    const { queue, clock } = openTestQueue();
    const before = queue.snapshot().tasks;
    expect(queue.enqueue(request({ topic: 'late', deadline: clock.t }))).toMatchObject({ ok: false, error: 'expired' });
    expect(queue.enqueue(request({ topic: 'later', deadline: clock.t - 60_000 }))).toMatchObject({ ok: false, error: 'expired' });
    expect(queue.snapshot().tasks).toEqual(before);
    expect(queue.allEvents()).toEqual([]);
    expect(queue.rejections().map((rejection) => [rejection.topic, rejection.reason])).toEqual([
      ['late', 'expired'],
      ['later', 'expired'],
    ]);
    expect(queue.enqueue(request({ deadline: clock.t + 1 }))).toMatchObject({ ok: true, status: 'enqueued' });
  });

  it('expires a task at claim instead of running it, and claims the next one', () => {
    const { queue, clock } = openTestQueue();
    const doomed = enqueueOk(queue, { tenant: 'a', priority: 30, deadline: clock.t + 5_000 });
    const fine = enqueueOk(queue, { tenant: 'a', priority: 0 });
    clock.advance(5_000);
    const claimed = claimOk(queue, 'w1');
    expect(claimed.id).toBe(fine);
    expect(queue.get(doomed)).toMatchObject({ state: 'expired', generation: 0, attempts: 0 });
    expect(queue.events(doomed).at(-1)).toMatchObject({ type: 'expired', at: clock.t, data: { from: 'ready', to: 'expired', when: 'claim' } });
  });

  it('answers empty when the only ready task expired at claim, holding no slot', () => {
    const { queue, clock } = openTestQueue();
    const id = enqueueOk(queue, { deadline: clock.t + 1_000 });
    clock.advance(1_000);
    expect(queue.claim('w1')).toEqual({ ok: false, reason: 'empty' });
    expect(queue.get(id)?.state).toBe('expired');
    expect(queue.snapshot().occupied.global).toBe(0);
  });

  it('hands the deadline to the worker with the claim', () => {
    const { queue, clock } = openTestQueue();
    enqueueOk(queue, { deadline: clock.t + 60_000 });
    expect(claimOk(queue, 'w1').deadline).toBe(clock.t + 60_000);
  });

  it('drops a result committed after the deadline: the task ends expired and its slot is freed', () => {
    const { queue, clock } = openTestQueue();
    const id = enqueueOk(queue, { tenant: 'a', deadline: clock.t + 20_000 });
    const next = enqueueOk(queue, { tenant: 'a' });
    claimOk(queue, 'w1');
    clock.advance(20_000);
    expect(queue.complete(id, 'w1', 1, { status: 'resolved' })).toMatchObject({ ok: false, error: 'expired' });
    expect(queue.get(id)).toMatchObject({ state: 'expired' });
    expect(queue.get(id)?.result).toBeUndefined();
    expect(queue.events(id).at(-1)).toMatchObject({ type: 'expired', data: { from: 'running', to: 'expired', when: 'complete' } });
    expect(claimOk(queue, 'w2').id).toBe(next);
  });

  it('accepts a result committed before the deadline', () => {
    const { queue, clock } = openTestQueue();
    const id = enqueueOk(queue, { deadline: clock.t + 20_000 });
    claimOk(queue, 'w1');
    clock.advance(19_999);
    expect(queue.complete(id, 'w1', 1, 'in time')).toEqual({ ok: true, outcome: 'done' });
  });

  it('expires an uncertain task whose deadline passed when its stop is confirmed', () => {
    const { queue, clock } = openTestQueue();
    const id = enqueueOk(queue, { deadline: clock.t + 40_000 });
    claimOk(queue, 'w1');
    clock.advance(40_000);
    queue.expireLeases();
    expect(queue.confirmStopped(id, 1, 'supervisor')).toEqual({ ok: true, next: 'expired' });
    expect(queue.get(id)?.state).toBe('expired');
  });
});

describe('Q15 event log', () => {
  it('numbers each task’s events 1..n and records the time of each transition', () => {
    const { queue, clock } = openTestQueue();
    const id = enqueueOk(queue);
    clock.advance(100);
    claimOk(queue, 'w1');
    clock.advance(100);
    queue.appendEvent(id, 'w1', 1, 'model_returned', { tokens: 12 });
    clock.advance(100);
    queue.fail(id, 'w1', 1, { errorClass: 'tool_timeout', message: 'slow tool' });
    const events = queue.events(id);
    expect(events.map((event) => [event.seq, event.type, event.at - events[0]!.at])).toEqual([
      [1, 'enqueued', 0],
      [2, 'claimed', 100],
      [3, 'model_returned', 200],
      [4, 'retry_scheduled', 300],
    ]);
  });

  it('records queue wait and run time per task', () => {
    const { queue, clock } = openTestQueue();
    const id = enqueueOk(queue);
    clock.advance(2_500);
    claimOk(queue, 'w1');
    clock.advance(7_250);
    queue.complete(id, 'w1', 1, null);
    expect(queue.get(id)).toMatchObject({ queueWaitMs: 2_500, runMs: 7_250 });
    expect(queue.events(id)[1]?.data.queueWaitMs).toBe(2_500);
  });

  it('lists all events in commit order across tasks', () => {
    const { queue, clock } = openTestQueue();
    const a = enqueueOk(queue, { tenant: 'a' });
    const b = enqueueOk(queue, { tenant: 'b' });
    claimOk(queue, 'w1');
    clock.advance(1);
    queue.complete(a, 'w1', 1, null);
    queue.cancel(b);
    expect(queue.allEvents().map((event) => [event.taskId, event.type])).toEqual([
      [a, 'enqueued'],
      [b, 'enqueued'],
      [a, 'claimed'],
      [a, 'completed'],
      [b, 'cancelled'],
    ]);
  });

  it('writes the event in the same transaction as the transition: if the event cannot be written, the transition is undone', () => {
    const db = new Database(':memory:');
    const { queue } = openTestQueue({ db });
    const id = enqueueOk(queue);
    db.exec(`CREATE TRIGGER refuse_claimed BEFORE INSERT ON events WHEN NEW.type = 'claimed' BEGIN SELECT RAISE(ABORT, 'outbox down'); END`);
    const before = fingerprint(queue);
    expect(() => queue.claim('w1')).toThrow(/outbox down/);
    expect(fingerprint(queue)).toEqual(before);
    expect(queue.get(id)).toMatchObject({ state: 'ready', generation: 0, attempts: 0 });
    db.exec('DROP TRIGGER refuse_claimed');
    claimOk(queue, 'w1');
    db.exec(`CREATE TRIGGER refuse_completed BEFORE INSERT ON events WHEN NEW.type = 'completed' BEGIN SELECT RAISE(ABORT, 'outbox down'); END`);
    expect(() => queue.complete(id, 'w1', 1, 'result')).toThrow(/outbox down/);
    expect(queue.get(id)).toMatchObject({ state: 'running' });
    expect(queue.get(id)?.result).toBeUndefined();
    db.exec('DROP TRIGGER refuse_completed');
    expect(db.inTransaction).toBe(false);
    queue.close();
    db.close();
  });

  it('catches a broken log: the consistency check fails on a gap, an illegal edge and a wrong final state', () => {
    const db = new Database(':memory:');
    const { queue } = openTestQueue({ db });
    const id = enqueueOk(queue);
    claimOk(queue, 'w1');
    assertEventLogConsistent(queue);
    db.prepare('UPDATE events SET seq = 5 WHERE task_id = ? AND seq = 2').run(id);
    expect(() => assertEventLogConsistent(queue)).toThrow();
    db.prepare('UPDATE events SET seq = 2 WHERE task_id = ? AND seq = 5').run(id);
    db.prepare(`UPDATE events SET data = json_set(data, '$.from', 'done') WHERE task_id = ? AND seq = 2`).run(id);
    expect(() => assertEventLogConsistent(queue)).toThrow();
    db.prepare(`UPDATE events SET data = json_set(data, '$.from', 'ready') WHERE task_id = ? AND seq = 2`).run(id);
    db.prepare(`UPDATE tasks SET state = 'done' WHERE id = ?`).run(id);
    expect(() => assertEventLogConsistent(queue)).toThrow();
    queue.close();
    db.close();
  });
});

describe('Q15 state machine coverage', () => {
  /** One small story per edge; each returns the queue it ran on so that its log can be read. */
  const stories: [string, () => ReturnType<typeof openTestQueue>['queue']][] = [
    ['ready->running->done', () => {
      const { queue } = openTestQueue();
      const id = enqueueOk(queue);
      claimOk(queue, 'w1');
      queue.complete(id, 'w1', 1, { status: 'needs_human' });
      return queue;
    }],
    ['ready->superseded', () => {
      const { queue } = openTestQueue();
      enqueueOk(queue, { topic: 'chat', version: 1 });
      enqueueOk(queue, { topic: 'chat', version: 2 });
      return queue;
    }],
    ['ready->cancelled', () => {
      const { queue } = openTestQueue();
      queue.cancel(enqueueOk(queue));
      return queue;
    }],
    ['ready->expired', () => {
      const { queue, clock } = openTestQueue();
      enqueueOk(queue, { deadline: clock.t + 1_000 });
      clock.advance(1_000);
      queue.claim('w1');
      return queue;
    }],
    ['running->ready->failed (retry age)', () => {
      const { queue, clock } = openTestQueue({ config: { maxRetryAgeMs: 600_000 } });
      const id = enqueueOk(queue);
      claimOk(queue, 'w1');
      queue.fail(id, 'w1', 1, { errorClass: 'rate_limited', message: '429' });
      clock.advance(700_000);
      queue.claim('w2');
      return queue;
    }],
    ['running->failed', () => {
      const { queue } = openTestQueue();
      const id = enqueueOk(queue);
      claimOk(queue, 'w1');
      queue.fail(id, 'w1', 1, { errorClass: 'permission_denied', message: 'no' });
      return queue;
    }],
    ['running->cancelled', () => {
      const { queue } = openTestQueue();
      const id = enqueueOk(queue);
      claimOk(queue, 'w1');
      queue.cancel(id);
      queue.acknowledgeCancel(id, 'w1', 1);
      return queue;
    }],
    ['running->expired', () => {
      const { queue, clock } = openTestQueue();
      const id = enqueueOk(queue, { deadline: clock.t + 10_000 });
      claimOk(queue, 'w1');
      clock.advance(10_000);
      queue.complete(id, 'w1', 1, 'late');
      return queue;
    }],
    ['running->uncertain->ready, uncertain->failed', () => {
      const { queue, clock } = openTestQueue({ config: { maxAttempts: 2 } });
      const id = enqueueOk(queue);
      for (const generation of [1, 2]) {
        claimOk(queue, `w${generation}`);
        clock.advance(30_000);
        queue.expireLeases();
        queue.confirmStopped(id, generation, 'supervisor');
      }
      return queue;
    }],
    ['uncertain->cancelled', () => {
      const { queue, clock } = openTestQueue();
      const id = enqueueOk(queue);
      claimOk(queue, 'w1');
      clock.advance(30_000);
      queue.expireLeases();
      queue.cancel(id);
      queue.confirmStopped(id, 1, 'supervisor');
      return queue;
    }],
    ['uncertain->expired', () => {
      const { queue, clock } = openTestQueue();
      const id = enqueueOk(queue, { deadline: clock.t + 30_000 });
      claimOk(queue, 'w1');
      clock.advance(30_000);
      queue.expireLeases();
      queue.confirmStopped(id, 1, 'supervisor');
      return queue;
    }],
  ];

  it('exercises every edge of TRANSITIONS, and every recorded edge is legal', () => {
    const recorded = new Set<string>();
    for (const [name, story] of stories) {
      const edges = recordedTransitions(story());
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
