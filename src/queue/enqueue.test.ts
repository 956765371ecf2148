import { afterEach, describe, expect, it } from 'vitest';
import { checkAndCloseQueues, claimOk, enqueueOk, fingerprint, openTestQueue, request } from './__test-helpers__/test-kit.ts';
import type { EnqueueRequest, WorkQueue } from './types.ts';

afterEach(checkAndCloseQueues);

describe('Q1 idempotent enqueue', () => {
  it('returns the original task id with status duplicate for the same key and input', async () => {
    const { queue, clock } = openTestQueue();
    const first = await queue.enqueue(request({ topic: 'order-1', input: { a: 1, b: [1, 2] }, store: 's1' }));
    expect(first).toMatchObject({ ok: true, status: 'enqueued' });
    clock.advance(1_000);
    const before = await fingerprint(queue);
    const again = await queue.enqueue(request({ topic: 'order-1', input: { a: 1, b: [1, 2] }, store: 's1' }));
    expect(again).toEqual({ ok: true, status: 'duplicate', taskId: first.ok ? first.taskId : -1 });
    expect(await fingerprint(queue)).toEqual(before);
    expect((await queue.snapshot()).tasks).toHaveLength(1);
    expect((await queue.allEvents()).filter((event) => event.type === 'enqueued')).toHaveLength(1);
  });

  it('treats inputs that differ only in key order as the same input', async () => {
    const { queue } = openTestQueue();
    const id = await enqueueOk(queue, { topic: 'order-1', input: { a: 1, nested: { x: 1, y: 2 } } });
    const again = await queue.enqueue(request({ topic: 'order-1', input: { nested: { y: 2, x: 1 }, a: 1 } }));
    expect(again).toEqual({ ok: true, status: 'duplicate', taskId: id });
  });

  it('still answers duplicate after the original task has finished', async () => {
    const { queue } = openTestQueue();
    const id = await enqueueOk(queue, { topic: 'order-1' });
    const task = await claimOk(queue, 'w1');
    expect(await queue.complete(id, 'w1', task.generation, { status: 'resolved' })).toMatchObject({ ok: true });
    expect(await queue.enqueue(request({ topic: 'order-1' }))).toEqual({ ok: true, status: 'duplicate', taskId: id });
    expect((await queue.get(id))?.state).toBe('done');
  });

  const changes: [string, Partial<EnqueueRequest>][] = [
    ['payload', { input: { text: 'changed' } }],
    ['store', { store: 'other-store' }],
    ['priority', { priority: 7 }],
    ['tier', { tier: 'long' }],
    ['deadline', { deadline: 1_800_000_000_000 }],
  ];

  it.each(changes)('refuses the same key with a different %s, changes nothing but records the rejection', async (_name, change) => {
    const { queue, clock } = openTestQueue();
    const base = { tenant: 'acme', topic: 'order-1', version: 1, priority: 3, input: { text: 'hello' }, store: 's1' };
    const id = await enqueueOk(queue, base);
    clock.advance(500);
    const before = await queue.snapshot();
    const eventsBefore = await queue.allEvents();
    const result = await queue.enqueue({ ...base, ...change });
    expect(result).toMatchObject({ ok: false, error: 'idempotency_conflict', taskId: id });
    expect((await queue.snapshot()).tasks).toEqual(before.tasks);
    expect(await queue.allEvents()).toEqual(eventsBefore);
    expect(await queue.rejections()).toEqual([{ tenant: 'acme', topic: 'order-1', version: 1, reason: 'idempotency_conflict', at: clock.t }]);
  });

  it('does not count the incident context in the idempotency hash (only store, priority, payload, tier, deadline)', async () => {
    const { queue } = openTestQueue();
    const id = await enqueueOk(queue, { topic: 'order-1', context: { brand: 'b1' } });
    expect(await queue.enqueue(request({ topic: 'order-1', context: { brand: 'b2' } }))).toEqual({ ok: true, status: 'duplicate', taskId: id });
  });

  it('keys by tenant too: the same topic and version in another tenant is a new task', async () => {
    const { queue } = openTestQueue();
    const a = await enqueueOk(queue, { tenant: 'acme', topic: 'order-1' });
    const b = await enqueueOk(queue, { tenant: 'globex', topic: 'order-1', input: { other: true } });
    expect(b).not.toBe(a);
  });

});

describe('Q2 supersede', () => {
  it('leaves a started older version that waits for a retry alone; it finishes stale_input', async () => {
    const { queue, clock } = openTestQueue();
    const v1 = await enqueueOk(queue, { topic: 'chat', version: 1 });
    await claimOk(queue, 'w1');
    expect(await queue.fail(v1, 'w1', 1, { errorClass: 'rate_limited', message: 'slow down' })).toMatchObject({ ok: true, next: 'retry' });
    const result = await queue.enqueue(request({ topic: 'chat', version: 2, input: { text: 'correction' } }));
    expect(result).toMatchObject({ ok: true, status: 'enqueued' });
    expect((await queue.get(v1))?.state).toBe('ready');
    clock.advance(3_600_000);
    const again = await claimOk(queue, 'w1');
    expect(again.id).toBe(v1);
    expect(await queue.complete(v1, 'w1', again.generation, { status: 'needs_human' })).toEqual({ ok: true, outcome: 'stale_input' });
  });

  it('turns a ready older version into superseded with an event, and only the new one runs', async () => {
    const { queue, clock } = openTestQueue();
    const v1 = await enqueueOk(queue, { topic: 'chat', version: 1 });
    clock.advance(1_000);
    const result = await queue.enqueue(request({ topic: 'chat', version: 2, input: { text: 'correction' } }));
    expect(result).toMatchObject({ ok: true, status: 'replaced' });
    const v2 = result.ok ? result.taskId : -1;
    expect((await queue.get(v1))?.state).toBe('superseded');
    const superseded = (await queue.events(v1)).at(-1);
    expect(superseded).toMatchObject({ type: 'superseded', at: clock.t, data: { from: 'ready', to: 'superseded', byTaskId: v2 } });
    expect((await claimOk(queue, 'w1')).id).toBe(v2);
    clock.advance(3_600_000);
    expect(await queue.claim('w2')).toEqual({ ok: false, reason: 'empty' });
    expect((await queue.get(v1))?.state).toBe('superseded');
    expect((await queue.get(v1))?.generation).toBe(0);
  });

  it('leaves a running older version alone; it completes with outcome stale_input and keeps its result', async () => {
    const { queue, clock } = openTestQueue();
    const v1 = await enqueueOk(queue, { topic: 'chat', version: 1 });
    const task = await claimOk(queue, 'w1');
    const leaseUntil = task.leaseUntil;
    clock.advance(1_000);
    const result = await queue.enqueue(request({ topic: 'chat', version: 2, input: { text: 'newer' } }));
    expect(result).toMatchObject({ ok: true, status: 'enqueued' });
    expect(await queue.get(v1)).toMatchObject({ state: 'running', workerId: 'w1', generation: 1, leaseUntil });
    expect(await queue.heartbeat(v1, 'w1', 1)).toMatchObject({ ok: true });
    expect(await queue.complete(v1, 'w1', 1, { status: 'needs_human', note: 'old input' })).toEqual({ ok: true, outcome: 'stale_input' });
    expect(await queue.get(v1)).toMatchObject({ state: 'done', outcome: 'stale_input', result: { status: 'needs_human', note: 'old input' } });
    expect((await queue.events(v1)).at(-1)).toMatchObject({ type: 'completed', data: { outcome: 'stale_input', to: 'done' } });
  });

  it('completes with outcome done when no newer version exists', async () => {
    const { queue } = openTestQueue();
    const v1 = await enqueueOk(queue, { topic: 'chat', version: 1 });
    await enqueueOk(queue, { topic: 'other-chat', version: 2 });
    await claimOk(queue, 'w1');
    expect(await queue.complete(v1, 'w1', 1, { ok: 1 })).toEqual({ ok: true, outcome: 'done' });
    expect((await queue.get(v1))?.outcome).toBe('done');
  });

  it('stores a version that arrives after a newer one as superseded, and it never runs', async () => {
    const { queue, clock } = openTestQueue();
    const v2 = await enqueueOk(queue, { topic: 'chat', version: 2 });
    clock.advance(10);
    const late = await queue.enqueue(request({ topic: 'chat', version: 1, input: { text: 'old' } }));
    expect(late).toMatchObject({ ok: true, status: 'superseded' });
    const v1 = late.ok ? late.taskId : -1;
    expect((await queue.get(v1))?.state).toBe('superseded');
    expect(await queue.events(v1)).toEqual([
      expect.objectContaining({ seq: 1, type: 'superseded', data: expect.objectContaining({ to: 'superseded' }) }),
    ]);
    expect((await queue.get(v2))?.state).toBe('ready');
    expect((await claimOk(queue, 'w1')).id).toBe(v2);
    expect(await queue.complete(v2, 'w1', 1, null)).toEqual({ ok: true, outcome: 'done' });
    clock.advance(3_600_000);
    expect(await queue.claim('w1')).toEqual({ ok: false, reason: 'empty' });
    expect((await queue.get(v1))?.generation).toBe(0);
    expect((await queue.snapshot()).live).toBe(0);
  });

  it('answers duplicate for a resent superseded version without reviving it', async () => {
    const { queue } = openTestQueue();
    const v1 = await enqueueOk(queue, { topic: 'chat', version: 1 });
    await enqueueOk(queue, { topic: 'chat', version: 2, input: { text: 'newer' } });
    expect(await queue.enqueue(request({ topic: 'chat', version: 1 }))).toEqual({ ok: true, status: 'duplicate', taskId: v1 });
    expect((await queue.get(v1))?.state).toBe('superseded');
  });

  it('stores every late version as superseded, not only the one just below the newest', async () => {
    const { queue } = openTestQueue();
    const v3 = await enqueueOk(queue, { topic: 'chat', version: 3 });
    const v1 = await queue.enqueue(request({ topic: 'chat', version: 1 }));
    const v2 = await queue.enqueue(request({ topic: 'chat', version: 2 }));
    expect([v1, v2]).toEqual([expect.objectContaining({ status: 'superseded' }), expect.objectContaining({ status: 'superseded' })]);
    expect((await queue.get(v3))?.state).toBe('ready');
    expect((await queue.snapshot()).live).toBe(1);
  });

  it('supersedes only within the same tenant and topic', async () => {
    const { queue } = openTestQueue();
    const a1 = await enqueueOk(queue, { tenant: 'acme', topic: 'chat', version: 1 });
    const other = await enqueueOk(queue, { tenant: 'acme', topic: 'chat-2', version: 1 });
    const b1 = await enqueueOk(queue, { tenant: 'globex', topic: 'chat', version: 1 });
    await enqueueOk(queue, { tenant: 'acme', topic: 'chat', version: 2 });
    expect((await queue.get(a1))?.state).toBe('superseded');
    expect((await queue.get(other))?.state).toBe('ready');
    expect((await queue.get(b1))?.state).toBe('ready');
  });
});

describe('Q3 capacity and queue_full', () => {
  /** capacity 3 filled with one ready, one running and one uncertain task. */
  async function fullQueue() {
    const harness = openTestQueue({ config: { capacity: 3, globalLimit: 2, perTenantLimit: 1 } });
    const { queue, clock } = harness;
    const running = await enqueueOk(queue, { tenant: 'a', topic: 'running' });
    const uncertain = await enqueueOk(queue, { tenant: 'b', topic: 'uncertain' });
    const ready = await enqueueOk(queue, { tenant: 'a', topic: 'ready' });
    expect((await claimOk(queue, 'w1')).id).toBe(running);
    expect((await claimOk(queue, 'w2')).id).toBe(uncertain);
    clock.advance(25_000);
    expect(await queue.heartbeat(running, 'w1', 1)).toMatchObject({ ok: true });
    clock.advance(10_000);
    expect(await queue.expireLeases()).toBe(1);
    expect((await queue.get(uncertain))?.state).toBe('uncertain');
    expect((await queue.snapshot()).live).toBe(3);
    return { ...harness, running, uncertain, ready };
  }

  it('counts ready + running + uncertain and refuses a new topic with queue_full, recording the reason', async () => {
    const { queue, clock } = await fullQueue();
    const before = await queue.snapshot();
    const eventsBefore = await queue.allEvents();
    const result = await queue.enqueue(request({ tenant: 'c', topic: 'new-topic', version: 4 }));
    expect(result).toMatchObject({ ok: false, error: 'queue_full' });
    expect(result.ok ? '' : result.message).toMatch(/capacity/);
    expect((await queue.snapshot()).tasks).toEqual(before.tasks);
    expect(await queue.allEvents()).toEqual(eventsBefore);
    expect(await queue.rejections()).toEqual([{ tenant: 'c', topic: 'new-topic', version: 4, reason: 'queue_full', at: clock.t }]);
    expect((await queue.snapshot()).rejections).toEqual(await queue.rejections());
  });

  it('does not count finished tasks: completing one makes room', async () => {
    const { queue, running } = await fullQueue();
    expect(await queue.enqueue(request({ tenant: 'c' }))).toMatchObject({ ok: false, error: 'queue_full' });
    expect(await queue.complete(running, 'w1', 1, 'ok')).toMatchObject({ ok: true });
    expect(await queue.enqueue(request({ tenant: 'c' }))).toMatchObject({ ok: true, status: 'enqueued' });
  });

  it('accepts a newer version that replaces a waiting version even when full', async () => {
    const { queue, ready } = await fullQueue();
    const result = await queue.enqueue(request({ tenant: 'a', topic: 'ready', version: 2, input: { text: 'fix' } }));
    expect(result).toMatchObject({ ok: true, status: 'replaced' });
    expect((await queue.get(ready))?.state).toBe('superseded');
    expect((await queue.snapshot()).live).toBe(3);
    expect(await queue.rejections()).toEqual([]);
  });

  it('refuses a newer version of a running topic when full: there is no waiting version to replace', async () => {
    const { queue, running } = await fullQueue();
    const result = await queue.enqueue(request({ tenant: 'a', topic: 'running', version: 2, input: { text: 'fix' } }));
    expect(result).toMatchObject({ ok: false, error: 'queue_full' });
    expect((await queue.get(running))?.state).toBe('running');
  });

  it('still answers duplicate for an existing key when full', async () => {
    const { queue, ready } = await fullQueue();
    const again = await queue.enqueue(request({ tenant: 'a', topic: 'ready' }));
    expect(again).toEqual({ ok: true, status: 'duplicate', taskId: ready });
  });

  it('defaults to capacity 100', async () => {
    const { queue } = openTestQueue();
    for (let i = 0; i < 100; i++) await enqueueOk(queue, { tenant: `t${i % 7}` });
    expect(await queue.enqueue(request())).toMatchObject({ ok: false, error: 'queue_full' });
    expect((await queue.snapshot()).tasks).toHaveLength(100);
    expect(await queue.rejections()).toHaveLength(1);
  });
});

describe('enqueue input validation', () => {
  class Money {
    constructor(readonly cents: number) {}
  }
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;

  const cases: [string, string, unknown][] = [
    ['missing tenant', 'tenant', { tenant: undefined }],
    ['empty tenant', 'tenant', { tenant: '' }],
    ['blank tenant', 'tenant', { tenant: '   ' }],
    ['numeric tenant', 'tenant', { tenant: 42 }],
    ['missing topic', 'topic', { topic: undefined }],
    ['empty topic', 'topic', { topic: '' }],
    ['version 0', 'version', { version: 0 }],
    ['negative version', 'version', { version: -1 }],
    ['fractional version', 'version', { version: 1.5 }],
    ['string version', 'version', { version: '1' }],
    ['NaN version', 'version', { version: Number.NaN }],
    ['missing version', 'version', { version: undefined }],
    ['priority -1', 'priority', { priority: -1 }],
    ['priority 31', 'priority', { priority: 31 }],
    ['fractional priority', 'priority', { priority: 2.5 }],
    ['string priority', 'priority', { priority: '30' }],
    ['NaN priority', 'priority', { priority: Number.NaN }],
    ['missing priority', 'priority', { priority: undefined }],
    ['missing input', 'input', { input: undefined }],
    ['BigInt input', 'input', { input: 10n }],
    ['nested BigInt', 'input', { input: { amount: 10n } }],
    ['cyclic input', 'input', { input: cyclic }],
    ['function input', 'input', { input: () => 1 }],
    ['object with a method', 'input', { input: { text: 'x', run() {} } }],
    ['class instance', 'input', { input: new Money(5) }],
    ['nested class instance', 'input', { input: { refund: new Money(5) } }],
    ['Map input', 'input', { input: new Map([['a', 1]]) }],
    ['symbol input', 'input', { input: Symbol('s') }],
    ['Infinity in input', 'input', { input: { n: Number.POSITIVE_INFINITY } }],
    ['empty store', 'store', { store: '' }],
    ['numeric store', 'store', { store: 7 }],
    ['unknown tier', 'tier', { tier: 'gold' }],
    ['tier named like an Object.prototype member', 'tier', { tier: 'toString' }],
    ['tier named __proto__', 'tier', { tier: '__proto__' }],
    ['fractional deadline', 'deadline', { deadline: 1.5 }],
    ['string deadline', 'deadline', { deadline: 'tomorrow' }],
    ['unknown context field', 'context.customerText', { context: { customerText: 'URGENT' } }],
    ['non-string context value', 'context.brand', { context: { brand: 5 } }],
    ['array context', 'context', { context: ['brand'] }],
  ];

  async function expectNothingWritten(queue: WorkQueue, enqueue: () => unknown, field: string) {
    const before = await fingerprint(queue);
    const result = await enqueue();
    expect(result).toMatchObject({ ok: false, error: 'invalid_input', field });
    expect(typeof (result as { message: unknown }).message).toBe('string');
    expect(await fingerprint(queue)).toEqual(before);
  }

  it.each(cases)('rejects %s as invalid_input naming %s and writes nothing', async (_name, field, change) => {
    const { queue } = openTestQueue();
    await enqueueOk(queue, { tenant: 'acme', topic: 'existing' });
    await claimOk(queue, 'w1');
    await enqueueOk(queue, { tenant: 'acme', topic: 'waiting' });
    await expectNothingWritten(queue, () => queue.enqueue({ ...request(), ...(change as object) } as EnqueueRequest), field);
  });

  it('rejects a request that is not an object', async () => {
    const { queue } = openTestQueue();
    await expectNothingWritten(queue, () => queue.enqueue(null as never), 'request');
  });

  it('accepts the priority bounds 0 and 30 and null input', async () => {
    const { queue } = openTestQueue();
    expect(await queue.enqueue(request({ priority: 0 }))).toMatchObject({ ok: true });
    expect(await queue.enqueue(request({ priority: 30 }))).toMatchObject({ ok: true });
    expect(await queue.enqueue(request({ input: null }))).toMatchObject({ ok: true });
  });

  it('measures maxInputBytes in UTF-8 bytes of the JSON and honours a configured limit', async () => {
    const { queue } = openTestQueue({ config: { maxInputBytes: 64 } });
    // 62 ASCII characters plus two quotes: exactly 64 bytes.
    expect(await queue.enqueue(request({ input: 'x'.repeat(62) }))).toMatchObject({ ok: true });
    await expectNothingWritten(queue, () => queue.enqueue(request({ input: 'x'.repeat(63) })), 'input');
    // 21 characters, but 63 bytes of UTF-8 plus two quotes.
    await expectNothingWritten(queue, () => queue.enqueue(request({ input: '\u20ac'.repeat(21) })), 'input');
  });

  it('defaults maxInputBytes to 256 KiB', async () => {
    const { queue } = openTestQueue();
    expect(await queue.enqueue(request({ input: 'x'.repeat(256 * 1024 - 2) }))).toMatchObject({ ok: true });
    await expectNothingWritten(queue, () => queue.enqueue(request({ input: 'x'.repeat(256 * 1024 - 1) })), 'input');
  });
});
