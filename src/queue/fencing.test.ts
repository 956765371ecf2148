import { afterEach, describe, expect, it } from 'vitest';
import { checkAndCloseQueues, claimOk, enqueueOk, fingerprint, openTestQueue, type TestQueue } from './__test-helpers__/test-kit.ts';
import type { WorkQueue } from './types.ts';

afterEach(checkAndCloseQueues);

/** The fenced writes of a lease holder (Q8), each called as (taskId, workerId, generation). */
const WRITES: [string, (queue: WorkQueue, taskId: number, workerId: string, generation: number) => Promise<unknown>][] = [
  ['heartbeat', (queue, id, worker, generation) => queue.heartbeat(id, worker, generation)],
  ['complete', (queue, id, worker, generation) => queue.complete(id, worker, generation, { status: 'resolved' })],
  ['fail (retryable)', (queue, id, worker, generation) => queue.fail(id, worker, generation, { errorClass: 'rate_limited', message: 'slow down' })],
  ['fail (fatal)', (queue, id, worker, generation) => queue.fail(id, worker, generation, { errorClass: 'business_error', message: 'no' })],
  ['appendEvent', (queue, id, worker, generation) => queue.appendEvent(id, worker, generation, 'tool_called', { tool: 'refund' })],
  ['acknowledgeCancel', (queue, id, worker, generation) => queue.acknowledgeCancel(id, worker, generation)],
  [
    'checkpoint',
    (queue, id, worker, generation) =>
      queue.checkpoint(id, worker, generation, { kind: 'A', step: 1, state: { messages: [] }, usage: { inputTokens: 5, outputTokens: 1, modelCalls: 1 } }),
  ],
];

/**
 * Stale situations, each built from a fresh queue with the task claimed by 'w1' at generation 1 and a
 * second tenant's task running beside it. Returns the (worker, generation) to write with.
 */
const STALE: [string, (harness: TestQueue, taskId: number) => { worker: string; generation: number } | Promise<{ worker: string; generation: number }>][] = [
  ['a different worker', () => ({ worker: 'intruder', generation: 1 })],
  ['a newer generation', () => ({ worker: 'w1', generation: 2 })],
  ['an older generation', () => ({ worker: 'w1', generation: 0 })],
  [
    'an expired lease, not yet marked uncertain',
    ({ clock }) => {
      clock.advance(30_000 + 1);
      return { worker: 'w1', generation: 1 };
    },
  ],
  [
    'a lease that expired into uncertain',
    async ({ queue, clock }, id) => {
      clock.advance(30_000);
      await queue.expireLeases();
      expect((await queue.get(id))?.state).toBe('uncertain');
      return { worker: 'w1', generation: 1 };
    },
  ],
  [
    'an uncertain task whose old lease looks live again to a clock that stepped back',
    async ({ queue, clock }, id) => {
      clock.advance(30_000);
      await queue.expireLeases();
      expect((await queue.get(id))?.state).toBe('uncertain');
      clock.advance(-20_000);
      return { worker: 'w1', generation: 1 };
    },
  ],
  [
    'a task that already completed',
    async ({ queue }, id) => {
      expect(await queue.complete(id, 'w1', 1, { status: 'first' })).toMatchObject({ ok: true });
      return { worker: 'w1', generation: 1 };
    },
  ],
  [
    'a task sent back to ready by a retry',
    async ({ queue }, id) => {
      expect(await queue.fail(id, 'w1', 1, { errorClass: 'transient_network', message: 'reset' })).toMatchObject({ ok: true, next: 'retry' });
      return { worker: 'w1', generation: 1 };
    },
  ],
  [
    'a task taken over by another worker after confirmStopped',
    async ({ queue, clock }, id) => {
      clock.advance(30_000);
      await queue.expireLeases();
      expect(await queue.confirmStopped(id, 1, 'supervisor')).toMatchObject({ ok: true, next: 'ready' });
      expect(await claimOk(queue, 'w2')).toMatchObject({ id, generation: 2 });
      return { worker: 'w1', generation: 1 };
    },
  ],
  [
    'the new generation written by the old worker',
    async ({ queue, clock }, id) => {
      clock.advance(30_000);
      await queue.expireLeases();
      await queue.confirmStopped(id, 1, 'supervisor');
      await claimOk(queue, 'w2');
      return { worker: 'w1', generation: 2 };
    },
  ],
  ['a task that does not exist', () => ({ worker: 'w1', generation: 1 })],
];

describe('Q8 fenced writes', () => {
  for (const [writeName, write] of WRITES) {
    it.each(STALE)(`${writeName} from %s answers stale_lease and changes nothing anywhere`, async (situation, setUp) => {
      const harness = openTestQueue();
      const { queue } = harness;
      const id = await enqueueOk(queue, { tenant: 'a' });
      await enqueueOk(queue, { tenant: 'b' });
      expect(await claimOk(queue, 'w1')).toMatchObject({ id, generation: 1 });
      await claimOk(queue, 'other');
      const target = situation === 'a task that does not exist' ? 999 : id;
      const { worker, generation } = await setUp(harness, id);
      const before = await fingerprint(queue);
      const view = await queue.get(id);
      const events = await queue.events(id);
      const checkpoint = await queue.lastCheckpoint(id);
      const result = await write(queue, target, worker, generation);
      expect(result).toMatchObject({ ok: false, error: 'stale_lease' });
      expect(await queue.get(id)).toEqual(view);
      expect(await queue.events(id)).toEqual(events);
      expect(await queue.lastCheckpoint(id)).toEqual(checkpoint);
      expect(await fingerprint(queue)).toEqual(before);
    });
  }

  it.each(WRITES)('%s succeeds for the holder one millisecond before the lease ends', async (_name, write) => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue);
    const task = await claimOk(queue, 'w1');
    await queue.cancel(id);
    clock.t = task.leaseUntil - 1;
    expect(await write(queue, id, 'w1', 1)).toMatchObject({ ok: true });
  });

  it('refuses a write at the leaseUntil instant itself', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue);
    const task = await claimOk(queue, 'w1');
    clock.t = task.leaseUntil;
    expect(await queue.heartbeat(id, 'w1', 1)).toMatchObject({ ok: false, error: 'stale_lease' });
    expect(await queue.complete(id, 'w1', 1, 'late')).toMatchObject({ ok: false, error: 'stale_lease' });
    expect((await queue.get(id))?.result).toBeUndefined();
  });

  it('appends a fenced event with the next seq of the task for the holder', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    clock.advance(5);
    expect(await queue.appendEvent(id, 'w1', 1, 'tool_called', { tool: 'lookup_order' })).toEqual({ ok: true, seq: 3 });
    expect((await queue.events(id)).at(-1)).toEqual(
      expect.objectContaining({ taskId: id, seq: 3, type: 'tool_called', at: clock.t, data: { tool: 'lookup_order' } }),
    );
    expect((await queue.get(id))?.state).toBe('running');
  });
});

describe('Q9 heartbeat', () => {
  it('renews the lease to now + leaseMs and keeps the task running past the first lease', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue);
    const task = await claimOk(queue, 'w1');
    for (let beat = 1; beat <= 6; beat++) {
      clock.advance(10_000);
      expect(await queue.heartbeat(id, 'w1', 1)).toEqual({ ok: true, leaseUntil: clock.t + 30_000, cancelRequested: false });
      expect((await queue.get(id))?.leaseUntil).toBe(clock.t + 30_000);
      expect(await queue.expireLeases()).toBe(0);
    }
    expect(clock.t).toBeGreaterThan(task.leaseUntil);
    expect(await queue.get(id)).toMatchObject({ state: 'running', generation: 1, attempts: 1 });
    expect(await queue.complete(id, 'w1', 1, 'finished')).toEqual({ ok: true, outcome: 'done' });
  });

  it('uses the configured leaseMs', async () => {
    const { queue, clock } = openTestQueue({ config: { leaseMs: 9_000, heartbeatMs: 3_000 } });
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    clock.advance(3_000);
    expect(await queue.heartbeat(id, 'w1', 1)).toMatchObject({ ok: true, leaseUntil: clock.t + 9_000 });
  });

  it('cannot revive a lease that has already passed', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    clock.advance(31_000);
    expect(await queue.heartbeat(id, 'w1', 1)).toMatchObject({ ok: false, error: 'stale_lease' });
    expect(await queue.expireLeases()).toBe(1);
    expect((await queue.get(id))?.state).toBe('uncertain');
  });
});

describe('Q10 lease expiry means uncertain', () => {
  it('moves a running task past its lease to uncertain with an event, keeping its slot', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue, { tenant: 'a' });
    const task = await claimOk(queue, 'w1');
    clock.advance(29_999);
    expect(await queue.expireLeases()).toBe(0);
    clock.advance(1);
    expect(await queue.expireLeases()).toBe(1);
    expect(await queue.expireLeases()).toBe(0);
    expect(await queue.get(id)).toMatchObject({ state: 'uncertain', workerId: 'w1', generation: 1 });
    expect((await queue.events(id)).at(-1)).toMatchObject({
      type: 'lease_expired',
      at: clock.t,
      data: { from: 'running', to: 'uncertain', workerId: 'w1', generation: 1, leaseUntil: task.leaseUntil },
    });
    expect((await queue.snapshot()).occupied).toEqual({ global: 1, byTenant: { a: 1 } });
  });

  it('never re-runs an uncertain task on its own under the default policy, however long it waits', async () => {
    const { queue, clock } = openTestQueue();
    expect(queue.config.reconciliation).toBe('hold');
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    for (let hour = 0; hour < 24; hour++) {
      clock.advance(3_600_000);
      await queue.expireLeases();
      expect((await queue.reconcile()).requeued).toBe(0);
      expect(await queue.claim(`w${hour + 2}`)).toEqual({ ok: false, reason: 'empty' });
    }
    expect(await queue.get(id)).toMatchObject({ state: 'uncertain', generation: 1, attempts: 1 });
  });

  it('rejects the late result of the expired generation', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue);
    await claimOk(queue, 'w1');
    clock.advance(45_000);
    await queue.expireLeases();
    expect(await queue.complete(id, 'w1', 1, { status: 'resolved' })).toMatchObject({ ok: false, error: 'stale_lease' });
    expect((await queue.get(id))?.result).toBeUndefined();
    expect((await queue.get(id))?.state).toBe('uncertain');
  });
});

describe('Q11 leaving uncertain', () => {
  async function uncertainTask(harness: TestQueue = openTestQueue()) {
    const { queue, clock } = harness;
    const id = await enqueueOk(harness.queue);
    const task = await claimOk(queue, 'w1');
    clock.advance(30_000);
    await queue.expireLeases();
    return { ...harness, id, generation: task.generation };
  }

  it('confirmStopped from the trusted layer sends the task back to ready for another attempt', async () => {
    const { queue, clock, id } = await uncertainTask();
    expect(await queue.confirmStopped(id, 1, 'supervisor')).toEqual({ ok: true, next: 'ready' });
    expect(await queue.get(id)).toMatchObject({ state: 'ready', generation: 1, attempts: 1 });
    expect((await queue.events(id)).at(-1)).toMatchObject({
      type: 'stop_confirmed',
      at: clock.t,
      data: { from: 'uncertain', to: 'ready', source: 'supervisor', generation: 1 },
    });
    expect((await queue.snapshot()).occupied.global).toBe(0);
    expect(await claimOk(queue, 'w2')).toMatchObject({ id, generation: 2, attempt: 2 });
  });

  it('ends failed once attempts reached maxAttempts (default 3)', async () => {
    const { queue, clock } = openTestQueue();
    const id = await enqueueOk(queue);
    for (let attempt = 1; attempt <= 3; attempt++) {
      expect(await claimOk(queue, `w${attempt}`)).toMatchObject({ id, attempt, generation: attempt });
      clock.advance(30_000);
      expect(await queue.expireLeases()).toBe(1);
      const expected = attempt < 3 ? 'ready' : 'failed';
      expect(await queue.confirmStopped(id, attempt, 'operator')).toEqual({ ok: true, next: expected });
    }
    expect(await queue.get(id)).toMatchObject({ state: 'failed', attempts: 3 });
    expect((await queue.events(id)).at(-1)).toMatchObject({ type: 'stop_confirmed', data: { to: 'failed', reason: 'attempts_exhausted' } });
    expect(await queue.claim('w9')).toEqual({ ok: false, reason: 'empty' });
  });

  it('honours a configured maxAttempts', async () => {
    const { queue, id } = await uncertainTask(openTestQueue({ config: { maxAttempts: 1 } }));
    expect(await queue.confirmStopped(id, 1, 'supervisor')).toEqual({ ok: true, next: 'failed' });
  });

  it('refuses a wrong generation and changes nothing', async () => {
    const { queue, id } = await uncertainTask();
    const before = await fingerprint(queue);
    expect(await queue.confirmStopped(id, 2, 'supervisor')).toMatchObject({ ok: false, error: 'stale_generation' });
    expect(await queue.confirmStopped(id, 0, 'supervisor')).toMatchObject({ ok: false, error: 'stale_generation' });
    expect(await fingerprint(queue)).toEqual(before);
  });

  it('refuses a task that is not uncertain and changes nothing', async () => {
    const { queue } = openTestQueue();
    const running = await enqueueOk(queue, { tenant: 'a' });
    const done = await enqueueOk(queue, { tenant: 'b' });
    const ready = await enqueueOk(queue, { tenant: 'a' });
    expect((await claimOk(queue, 'w1')).id).toBe(running);
    expect((await claimOk(queue, 'w2')).id).toBe(done);
    expect(await queue.complete(done, 'w2', 1, null)).toMatchObject({ ok: true });
    const before = await fingerprint(queue);
    for (const [id, generation] of [[running, 1], [done, 1], [ready, 0]] as const) {
      expect(await queue.confirmStopped(id, generation, 'supervisor')).toMatchObject({ ok: false, error: 'not_uncertain' });
    }
    expect(await queue.confirmStopped(404, 1, 'supervisor')).toMatchObject({ ok: false, error: 'not_found' });
    expect(await fingerprint(queue)).toEqual(before);
  });

  it.each(['model', 'tool', 'Model', 'TOOL', 'tool:web_search', 'model output', '', '   '])(
    "refuses source '%s': a model or a tool can never free an uncertain slot",
    async (source) => {
      const { queue, id } = await uncertainTask();
      const before = await fingerprint(queue);
      expect(await queue.confirmStopped(id, 1, source)).toMatchObject({ ok: false, error: 'invalid_input' });
      expect(await fingerprint(queue)).toEqual(before);
      expect((await queue.get(id))?.state).toBe('uncertain');
    },
  );

  it('refuses a non-string source', async () => {
    const { queue, id } = await uncertainTask();
    expect(await queue.confirmStopped(id, 1, undefined as never)).toMatchObject({ ok: false, error: 'invalid_input' });
    expect((await queue.get(id))?.state).toBe('uncertain');
  });

  it('keeps the old worker fenced out after the task is re-claimed', async () => {
    const { queue, id } = await uncertainTask();
    await queue.confirmStopped(id, 1, 'supervisor');
    await claimOk(queue, 'w2');
    expect(await queue.complete(id, 'w1', 1, 'old result')).toMatchObject({ ok: false, error: 'stale_lease' });
    expect(await queue.complete(id, 'w2', 2, 'new result')).toEqual({ ok: true, outcome: 'done' });
    expect((await queue.get(id))?.result).toBe('new result');
  });
});
