import { afterEach, describe, expect, it } from 'vitest';
import { InputError } from './errors.ts';
import { T0, checkAndCloseQueues, enqueueOk, openTestQueue, inOrder } from './__test-helpers__/test-kit.ts';
import type { IncidentContext } from './types.ts';

afterEach(checkAndCloseQueues);

const BUCKET = 5 * 60_000;
/** The start of a 5-minute bucket, so that tests choose exactly where a boundary falls. */
const BUCKET_START = Math.ceil(T0 / BUCKET) * BUCKET;

/** The paid checkout timeout of seed 000. */
const PAID_TIMEOUT: Required<IncidentContext> = {
  brand: 'noodle-house',
  service: 'checkout',
  stage: 'paid',
  errorCode: 'PAY_TIMEOUT',
  deployVersion: '2024.06.1',
  campaign: 'lunch-rush',
};

function setUp() {
  const harness = openTestQueue({ config: { capacity: 100, globalLimit: 2 } });
  harness.clock.t = BUCKET_START + 10_000;
  return harness;
}

const everything = { from: 0, to: Number.MAX_SAFE_INTEGER };

describe('Q17 incident candidates', () => {
  it('groups the three paid timeouts of seed 000 and leaves the unpaid report out', async () => {
    const { queue, clock } = setUp();
    const slow = await enqueueOk(queue, { tenant: 'acme', topic: 'slow-checkout', store: 'store-1', priority: 0, context: PAID_TIMEOUT });
    clock.advance(3_000);
    const stale = await enqueueOk(queue, { tenant: 'acme', topic: 'status-stuck', store: 'store-2', priority: 0, context: PAID_TIMEOUT });
    clock.advance(3_000);
    const groupMeal = await enqueueOk(queue, { tenant: 'acme', topic: 'group-meal', store: 'store-3', priority: 30, context: PAID_TIMEOUT });
    clock.advance(3_000);
    const unpaid = await enqueueOk(queue, {
          tenant: 'acme',
          topic: 'no-order-printed',
          store: 'store-4',
          priority: 0,
          context: { ...PAID_TIMEOUT, stage: 'unpaid' },
        });
    const groups = await queue.incidentCandidates(everything);
    expect(groups).toEqual([
      {
        tenant: 'acme',
        ...PAID_TIMEOUT,
        bucketStart: BUCKET_START,
        taskIds: [slow, stale, groupMeal],
        confirmedIncident: false,
      },
    ]);
    expect(groups.flatMap((group) => group.taskIds)).not.toContain(unpaid);
    // Asked for single-task groups too, the unpaid report stands alone.
    const all = await queue.incidentCandidates({ ...everything, minGroupSize: 1 });
    expect(all).toHaveLength(2);
    expect(all.find((group) => group.stage === 'unpaid')?.taskIds).toEqual([unpaid]);
    expect(all.every((group) => group.confirmedIncident === false)).toBe(true);
  });

  it('leaves store out of the key: different stores of one brand meet in one group', async () => {
    const { queue } = setUp();
    const ids = await inOrder(['s1', 's2', 's3'], (store) => enqueueOk(queue, { tenant: 'acme', store, context: PAID_TIMEOUT }));
    expect((await queue.incidentCandidates(everything)).map((group) => group.taskIds)).toEqual([ids]);
  });

  it.each(Object.keys(PAID_TIMEOUT))('excludes a task whose %s is missing or unknown', async (field) => {
    const { queue } = setUp();
    const counted = [await enqueueOk(queue, { context: PAID_TIMEOUT }), await enqueueOk(queue, { context: PAID_TIMEOUT })];
    await enqueueOk(queue, { context: { ...PAID_TIMEOUT, [field]: undefined } });
    await enqueueOk(queue, { context: { ...PAID_TIMEOUT, [field]: 'unknown' } });
    await enqueueOk(queue, { context: { ...PAID_TIMEOUT, [field]: 'UNKNOWN' } });
    await enqueueOk(queue, { context: { ...PAID_TIMEOUT, [field]: '' } });
    await enqueueOk(queue, { context: { ...PAID_TIMEOUT, [field]: null as never } });
    const groups = await queue.incidentCandidates({ ...everything, minGroupSize: 1 });
    expect(groups.map((group) => group.taskIds)).toEqual([counted]);
  });

  it('excludes a task without any context', async () => {
    const { queue } = setUp();
    await enqueueOk(queue);
    await enqueueOk(queue);
    expect(await queue.incidentCandidates({ ...everything, minGroupSize: 1 })).toEqual([]);
  });

  it('splits groups on each key field', async () => {
    const { queue } = setUp();
    for (const field of Object.keys(PAID_TIMEOUT)) {
      await enqueueOk(queue, { context: { ...PAID_TIMEOUT, [field]: `other-${field}` } });
      await enqueueOk(queue, { context: { ...PAID_TIMEOUT, [field]: `other-${field}` } });
    }
    const groups = await queue.incidentCandidates(everything);
    expect(groups).toHaveLength(6);
    expect(groups.every((group) => group.taskIds.length === 2)).toBe(true);
  });

  it('counts only the latest version of each topic', async () => {
    const { queue, clock } = setUp();
    const other = await enqueueOk(queue, { tenant: 'acme', topic: 'other', context: PAID_TIMEOUT });
    const v1 = await enqueueOk(queue, { tenant: 'acme', topic: 'chat', version: 1, context: PAID_TIMEOUT });
    clock.advance(1_000);
    expect((await queue.incidentCandidates(everything))[0]?.taskIds).toEqual([other, v1]);
    // The corrected report is about an unpaid order: v1 no longer counts as a paid timeout.
    const v2 = await enqueueOk(queue, { tenant: 'acme', topic: 'chat', version: 2, context: { ...PAID_TIMEOUT, stage: 'unpaid' } });
    expect(await queue.incidentCandidates(everything)).toEqual([]);
    const singles = await queue.incidentCandidates({ ...everything, minGroupSize: 1 });
    expect(singles.flatMap((group) => group.taskIds).sort()).toEqual([other, v2].sort());
  });

  it('never lets a group span tenants', async () => {
    const { queue } = setUp();
    const acme = [await enqueueOk(queue, { tenant: 'acme', context: PAID_TIMEOUT }), await enqueueOk(queue, { tenant: 'acme', context: PAID_TIMEOUT })];
    const globex = [await enqueueOk(queue, { tenant: 'globex', context: PAID_TIMEOUT }), await enqueueOk(queue, { tenant: 'globex', context: PAID_TIMEOUT })];
    await enqueueOk(queue, { tenant: 'initech', context: PAID_TIMEOUT });
    const groups = await queue.incidentCandidates(everything);
    expect(groups.map((group) => [group.tenant, group.taskIds])).toEqual([
      ['acme', acme],
      ['globex', globex],
    ]);
    for (const group of groups) {
      for (const id of group.taskIds) expect((await queue.get(id))?.tenant).toBe(group.tenant);
    }
  });

  it('buckets by 5 minutes of enqueue time: one second apart across a boundary splits a group', async () => {
    const { queue, clock } = setUp();
    clock.t = BUCKET_START + BUCKET - 1_000;
    const before = [await enqueueOk(queue, { context: PAID_TIMEOUT }), await enqueueOk(queue, { context: PAID_TIMEOUT })];
    clock.t = BUCKET_START + BUCKET;
    const after = [await enqueueOk(queue, { context: PAID_TIMEOUT }), await enqueueOk(queue, { context: PAID_TIMEOUT })];
    const groups = await queue.incidentCandidates(everything);
    expect(groups.map((group) => [group.bucketStart, group.taskIds])).toEqual([
      [BUCKET_START, before],
      [BUCKET_START + BUCKET, after],
    ]);
  });

  it('uses a configured bucket width', async () => {
    const { queue, clock } = openTestQueue({ config: { incidentBucketMs: 60_000 } });
    clock.t = BUCKET_START;
    await enqueueOk(queue, { context: PAID_TIMEOUT });
    clock.advance(61_000);
    await enqueueOk(queue, { context: PAID_TIMEOUT });
    expect(await queue.incidentCandidates(everything)).toEqual([]);
    expect((await queue.incidentCandidates({ ...everything, minGroupSize: 1 })).map((group) => group.bucketStart)).toEqual([
      BUCKET_START,
      BUCKET_START + 60_000,
    ]);
  });

  it('looks only at tasks enqueued in [from, to)', async () => {
    const { queue, clock } = setUp();
    const first = await enqueueOk(queue, { context: PAID_TIMEOUT });
    const firstAt = clock.t;
    clock.advance(1_000);
    const second = await enqueueOk(queue, { context: PAID_TIMEOUT });
    clock.advance(1_000);
    await enqueueOk(queue, { context: PAID_TIMEOUT });
    expect((await queue.incidentCandidates({ from: firstAt, to: clock.t }))[0]?.taskIds).toEqual([first, second]);
    expect(await queue.incidentCandidates({ from: firstAt + 1, to: clock.t })).toEqual([]);
  });

  it('counts tasks whatever their state', async () => {
    const { queue } = setUp();
    const a = await enqueueOk(queue, { tenant: 'acme', context: PAID_TIMEOUT });
    const b = await enqueueOk(queue, { tenant: 'acme', context: PAID_TIMEOUT });
    await queue.cancel(a);
    expect((await queue.incidentCandidates(everything))[0]?.taskIds).toEqual([a, b]);
  });

  it('throws InputError for a malformed range', async () => {
    const { queue } = setUp();
    const field = async (range: unknown) => {
      try {
        await queue.incidentCandidates(range as never);
      } catch (error) {
        expect(error).toBeInstanceOf(InputError);
        return (error as InputError).field;
      }
      return 'accepted';
    };
    expect(await field({ from: Number.NaN, to: 1 })).toBe('from');
    expect(await field({ from: 10, to: 5 })).toBe('to');
    expect(await field({ from: 0, to: 1, minGroupSize: 0 })).toBe('minGroupSize');
    expect(await field(undefined)).toBe('from');
  });
});
