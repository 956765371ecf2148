import { afterEach, describe, expect, it } from 'vitest';
import { InputError } from './errors.ts';
import { checkAndCloseQueues, claimOk, enqueueOk, openTestQueue, request, inOrder } from './__test-helpers__/test-kit.ts';

afterEach(checkAndCloseQueues);

/** Three tenants with tasks in several states, plus look-alike tenant names. */
async function populated() {
  const harness = openTestQueue({ config: { capacity: 50, globalLimit: 3 } });
  const { queue, clock } = harness;
  const acme = [await enqueueOk(queue, { tenant: 'acme' }), await enqueueOk(queue, { tenant: 'acme' }), await enqueueOk(queue, { tenant: 'acme' })];
  const globex = [await enqueueOk(queue, { tenant: 'globex' }), await enqueueOk(queue, { tenant: 'globex' })];
  const lookalikes = await inOrder(['ACME', 'acme2', 'acm', "acme' OR '1'='1", '%'], (tenant) => enqueueOk(queue, { tenant }));
  await claimOk(queue, 'w1'); // acme[0]
  await claimOk(queue, 'w2'); // globex[0]
  await queue.cancel(acme[2]!);
  await queue.complete(globex[0]!, 'w2', 1, { status: 'resolved' });
  clock.advance(30_000);
  await queue.expireLeases(); // acme[0] uncertain
  await queue.enqueue(request({ tenant: 'globex', topic: 'late', deadline: 1 }));
  return { ...harness, acme, globex, lookalikes };
}

describe('Q19 views', () => {
  it("listForTenant returns exactly that tenant's tasks, as get() returns them", async () => {
    const { queue, acme, globex } = await populated();
    const listed = await queue.listForTenant('acme');
    expect(listed.map((task) => task.id)).toEqual(acme);
    expect(listed.every((task) => task.tenant === 'acme')).toBe(true);
    expect(listed).toEqual(await Promise.all(acme.map((id) => queue.get(id))));
    expect(listed.map((task) => task.state)).toEqual(['uncertain', 'ready', 'cancelled']);
    expect((await queue.listForTenant('globex')).map((task) => task.id)).toEqual(globex);
  });

  it('never returns another tenant’s rows for look-alike, differently cased or injected names', async () => {
    const { queue, lookalikes } = await populated();
    for (const [index, tenant] of ['ACME', 'acme2', 'acm', "acme' OR '1'='1", '%'].entries()) {
      const listed = await queue.listForTenant(tenant);
      expect(listed.map((task) => task.id), tenant).toEqual([lookalikes[index]]);
      expect(listed[0]?.tenant).toBe(tenant);
    }
    expect(await queue.listForTenant('nobody')).toEqual([]);
  });

  it('rejects a missing tenant with InputError', async () => {
    const { queue } = openTestQueue();
    for (const bad of ['', undefined, 5]) {
      await expect(queue.listForTenant(bad as never)).rejects.toThrow(InputError);
      try {
        await queue.listForTenant(bad as never);
      } catch (error) {
        expect((error as InputError).field).toBe('tenant');
      }
    }
  });

  it('snapshot is the admin view across all tenants: every task, counts, live, occupied slots and rejections', async () => {
    const { queue, clock } = await populated();
    const snapshot = await queue.snapshot();
    expect(snapshot.at).toBe(clock.t);
    expect(snapshot.tasks.map((task) => task.id)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    expect(new Set(snapshot.tasks.map((task) => task.tenant))).toEqual(new Set(['acme', 'globex', 'ACME', 'acme2', 'acm', "acme' OR '1'='1", '%']));
    expect(snapshot.tasks).toEqual(await Promise.all(snapshot.tasks.map((task) => queue.get(task.id))));
    expect(snapshot.countsByState).toEqual({ ready: 7, running: 0, uncertain: 1, done: 1, failed: 0, superseded: 0, cancelled: 1, expired: 0 });
    expect(snapshot.live).toBe(8);
    expect(snapshot.occupied).toEqual({ global: 1, byTenant: { acme: 1 } });
    expect(snapshot.rejections).toEqual([{ tenant: 'globex', topic: 'late', version: 1, reason: 'expired', at: clock.t }]);
  });

  it('tasksInState lists one state across tenants', async () => {
    const { queue, acme } = await populated();
    expect((await queue.tasksInState('uncertain')).map((task) => task.id)).toEqual([acme[0]]);
    expect(await queue.tasksInState('ready')).toHaveLength(7);
    await expect(queue.tasksInState('lost' as never)).rejects.toThrow(InputError);
  });

  it('tasksInState answers in id order, whichever index it walks, with the rows get() returns', async () => {
    const { queue } = openTestQueue({ config: { globalLimit: 3, perTenantLimit: 3 } });
    // Tenants chosen so that both partial indexes, ordered by tenant first, list these out of id order.
    const ids = [await enqueueOk(queue, { priority: 1 }), await enqueueOk(queue, { tenant: 'zulu', priority: 20 }), await enqueueOk(queue, { priority: 10 })];
    const waiting = [await enqueueOk(queue, { tenant: 'aaa', priority: 0 }), await enqueueOk(queue, { tenant: 'alpha', priority: 30 })];
    expect([(await claimOk(queue, 'w1')).id, (await claimOk(queue, 'w2')).id, (await claimOk(queue, 'w3')).id]).toEqual([waiting[1], ids[1], ids[2]]);
    expect((await queue.tasksInState('running')).map((task) => task.id)).toEqual([ids[1], ids[2], waiting[1]]);
    expect((await queue.tasksInState('ready')).map((task) => task.id)).toEqual([ids[0], waiting[0]]);
    expect(await queue.tasksInState('running')).toEqual(await Promise.all([ids[1]!, ids[2]!, waiting[1]!].map((id) => queue.get(id))));
    expect(await queue.tasksInState('done')).toEqual([]);
  });
});
