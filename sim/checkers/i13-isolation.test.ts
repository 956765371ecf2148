import { describe, it } from 'vitest';
import type { WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { i13Isolation } from './i13-isolation.ts';
import { realRun, type RealRun } from './__test-helpers__/real-run.ts';

/** Two tenants' tasks run side by side on the real queue; `before` may act on the run before it is read. */
async function twoTenants(before: (run: RealRun) => Promise<void> | void = () => {}): Promise<WorldResult> {
  const run = realRun();
  const a = (await run.enqueue({ tenant: 'acme' }))!;
  const b = (await run.enqueue({ tenant: 'globex' }))!;
  await run.claim('w0#1', a);
  await run.claim('w1#1', b);
  await run.runToDone('w0#1', a);
  await run.runToDone('w1#1', b);
  await before(run);
  return await run.build();
}

describe('I13 isolation', () => {
  it('passes two tenants whose events, results and effects stay their own', async () => {
    expectClean(i13Isolation, await twoTenants());
  });

  it("fails when an event names another tenant's task", async () => {
    const world = await twoTenants();
    const last = world.events.filter((event) => event.taskId === 1).at(-1)!;
    world.events.push({ ...last, id: world.events.at(-1)!.id + 1, seq: last.seq + 1, type: 'note', data: { byTaskId: 2 } });
    expectViolation(i13Isolation, world, /task 1 \(acme\): note event \d+ names task 2 of globex/);
  });

  it("fails when a result mentions another tenant's topic", async () => {
    const world = await twoTenants();
    world.final = { ...world.final, tasks: world.final.tasks.map((task) => (task.id === 1 ? { ...task, result: { summary: 'see globex/topic-2' } } : task)) };
    expectViolation(i13Isolation, world, /task 1 \(acme\): its result or checkpoint mentions globex\/topic-2/);
  });

  it('fails when an effect reaches the provider under another tenant', async () => {
    const world = await twoTenants();
    world.provider.requests[0] = { ...world.provider.requests[0]!, tenant: 'globex' };
    expectViolation(i13Isolation, world, /provider request .* for task 1 \(acme\) came as tenant globex/);
  });

  it("passes a tenant read that returned only its own rows, and fails one that returned another tenant's", async () => {
    // The real read, recorded as the world's client records it; the bad one names a tenant it did not return.
    const readAs = (tenant: string, extra: string[]) =>
      twoTenants(async (run) => {
        const invoke = run.history.invoke('client', 'list-tenant', { data: { tenant } });
        const rows = await run.queue.listForTenant(tenant);
        const tenants = [...new Set([...rows.map((row) => row.tenant), ...extra])].sort();
        run.history.ok(invoke, { data: { tenant, rows: rows.length, tenants } });
      });
    expectClean(i13Isolation, await readAs('acme', []));
    expectViolation(i13Isolation, await readAs('acme', ['globex']), /a read as tenant acme \(history \d+\) returned rows of globex/);
  });
});
