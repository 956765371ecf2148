/**
 * A2 and A3 decisions that do not differ by store: what the queue does with a replaced admission policy's
 * answers, and what fair share charges a tenant for needs that are not tokens or for a run that
 * checkpointed nothing. One store (SQLite in memory): these are decisions of the core, not SQL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defaultAdmission, type AdmissionPolicy, type AdmissionRequest } from '../queue/admission.ts';
import { ManualClock, T0 } from '../queue/__test-helpers__/test-kit.ts';
import type { QueueConfig, WorkQueue } from '../queue/types.ts';
import { openWorkQueue } from '../work-queue.ts';

const opened: WorkQueue[] = [];

afterEach(async () => {
  for (const queue of opened.splice(0)) await queue.close();
});

function open(options: { config?: Partial<QueueConfig>; admission?: AdmissionPolicy } = {}): WorkQueue {
  const queue = openWorkQueue({ db: ':memory:', clock: new ManualClock(), ...options });
  opened.push(queue);
  return queue;
}

const TASK = { tenant: 'acme', topic: 't', version: 1, priority: 0, input: { n: 1 } };

async function enqueueOk(queue: WorkQueue, request: Record<string, unknown> = {}): Promise<number> {
  const answer = await queue.enqueue({ ...TASK, ...request });
  if (!answer.ok) throw new Error(`enqueue refused: ${answer.message}`);
  return answer.taskId;
}

describe('a replaced admission policy', () => {
  it('that answers no decision at all is refused as a bug, and the enqueue writes nothing', async () => {
    for (const answer of [null, undefined, 'RUN', { action: 'ALLOW' }]) {
      const queue = open({ admission: () => answer as never });
      await expect(queue.enqueue(TASK)).rejects.toThrow(TypeError);
      await expect(queue.enqueue(TASK)).rejects.toThrow(/the admission policy answered/);
      expect(await queue.liveCount()).toBe(0);
      expect(await queue.allEvents()).toEqual([]);
      expect(await queue.admissionDecisions()).toEqual([]);
    }
  });

  it('that refuses an accepted task at claim ends it failed with the policy reason', async () => {
    const policy: AdmissionPolicy = (request) => (request.stage === 'claim' ? { action: 'REJECT', reason: 'expired' } : defaultAdmission(request));
    const queue = open({ admission: policy });
    const id = await enqueueOk(queue);
    expect(await queue.claim('w1')).toEqual({ ok: false, reason: 'empty' });
    expect(await queue.get(id)).toMatchObject({ state: 'failed', generation: 0, attempts: 0 });
    const last = (await queue.events(id)).at(-1);
    expect(last).toMatchObject({ type: 'failed', data: expect.objectContaining({ reason: 'admission_expired' }) });
    expect(await queue.liveCount()).toBe(0);
  });

  it('cannot refuse critical work for capacity within its headroom: the refusal becomes a wait', async () => {
    const policy: AdmissionPolicy = (request) => (request.stage === 'claim' ? { action: 'REJECT', reason: 'over_capacity' } : defaultAdmission(request));
    const queue = open({ admission: policy });
    const critical = await enqueueOk(queue, { topic: 'urgent', critical: true });
    const ordinary = await enqueueOk(queue, { tenant: 'other', topic: 'plain' });
    // The critical task waits (DEFER capacity); the ordinary one is refused and ends failed.
    const claimed = await queue.claim('w1');
    expect(claimed).toMatchObject({ ok: false, reason: 'quota', admission: { action: 'DEFER', reason: 'capacity', taskId: critical } });
    expect(await queue.get(critical)).toMatchObject({ state: 'ready', attempts: 0 });
    expect(await queue.get(ordinary)).toMatchObject({ state: 'failed' });
    expect((await queue.events(ordinary)).at(-1)?.data).toMatchObject({ reason: 'admission_over_capacity' });
    expect((await queue.admissionDecisions()).map((row) => [row.action, row.reason, row.taskId])).toContainEqual(['DEFER', 'capacity', critical]);
  });
});

describe('the default admission policy', () => {
  const base: AdmissionRequest = {
    stage: 'claim',
    task: { id: 1, tenant: 'acme', priority: 0, critical: false, deadline: null },
    tenantPaused: false,
    inFlight: 0,
    capacity: 10,
    criticalHeadroom: 2,
    replacesWaiting: false,
    now: T0,
  };

  it('refuses work whose deadline has come, and runs work whose deadline is still ahead', () => {
    // A team's policy may delegate to it for a task the queue has not retired itself.
    expect(defaultAdmission({ ...base, task: { ...base.task, deadline: T0 } })).toEqual({ action: 'REJECT', reason: 'expired' });
    expect(defaultAdmission({ ...base, task: { ...base.task, deadline: T0 - 1 } })).toEqual({ action: 'REJECT', reason: 'expired' });
    expect(defaultAdmission({ ...base, task: { ...base.task, deadline: T0 + 1 } })).toEqual({ action: 'RUN' });
  });
});

describe('fair share charges only tokens', () => {
  it('a claim whose needs are not metered in tokens charges the tenant nothing', async () => {
    const queue = open({ config: { fairness: 'fair_share', budgets: { gpu: { kind: 'concurrency', limit: 2 }, calls: { kind: 'total', limit: 10, per: 'run', meter: 'modelCalls' } } } });
    const id = await enqueueOk(queue, { needs: { gpu: 1, calls: 3 } });
    const claimed = await queue.claim('w1');
    expect(claimed).toMatchObject({ ok: true, task: { id, needs: { gpu: 1, calls: 3 } } });
    const event = (await queue.events(id)).find((row) => row.type === 'claimed');
    expect(event?.data).toMatchObject({ reserved: { gpu: 1, calls: 3 } });
    expect(event?.data).not.toHaveProperty('service');
    expect((await queue.tenantServices()).filter((row) => row.service !== 0)).toEqual([]);
  });

  it('a run that checkpointed nothing is charged nothing once it ends: the claim charge is corrected back', async () => {
    const queue = open({ config: { fairness: 'fair_share', budgets: { tokens: { kind: 'total', limit: 1_000, per: 'run', meter: 'tokens' } } } });
    const id = await enqueueOk(queue, { needs: { tokens: 300 } });
    const claimed = await queue.claim('w1');
    if (!claimed.ok) throw new Error('expected a claim');
    expect((await queue.events(id)).find((row) => row.type === 'claimed')?.data).toMatchObject({ reserved: { tokens: 300 }, service: 300 });
    expect(await queue.tenantServices()).toEqual([{ tenant: 'acme', service: 300 }]);
    expect(await queue.complete(id, 'w1', claimed.task.generation, { done: true })).toMatchObject({ ok: true });
    expect(await queue.tenantServices()).toEqual([{ tenant: 'acme', service: 0 }]);
  });
});
