import { describe, it } from 'vitest';
import { expectClean, expectViolation } from './expect-checker.ts';
import { fakeWorld, type FakeWorld } from './fake-world.ts';
import { i13Isolation } from './i13-isolation.ts';

function twoTenants(): FakeWorld {
  const fw = fakeWorld();
  const a = fw.enqueue({ tenant: 'acme' })!;
  const b = fw.enqueue({ tenant: 'globex' })!;
  fw.claim('w0#1', a);
  fw.claim('w1#1', b);
  fw.runToDone('w0#1', a).runToDone('w1#1', b);
  return fw;
}

describe('I13 isolation', () => {
  it('passes two tenants whose events, results and effects stay their own', () => {
    expectClean(i13Isolation, twoTenants().build());
  });

  it("fails when an event names another tenant's task", () => {
    const fw = twoTenants();
    fw.rawEvent(1, 'note', { byTaskId: 2 });
    expectViolation(i13Isolation, fw.build(), /task 1 \(acme\): note event \d+ names task 2 of globex/);
  });

  it("fails when a result mentions another tenant's topic", () => {
    const world = twoTenants().build();
    world.final = { ...world.final, tasks: world.final.tasks.map((task) => (task.id === 1 ? { ...task, result: { summary: 'see globex/topic-2' } } : task)) };
    expectViolation(i13Isolation, world, /task 1 \(acme\): its result or checkpoint mentions globex\/topic-2/);
  });

  it('fails when an effect reaches the provider under another tenant', () => {
    const world = twoTenants().build();
    world.provider.requests[0] = { ...world.provider.requests[0]!, tenant: 'globex' };
    expectViolation(i13Isolation, world, /provider request .* for task 1 \(acme\) came as tenant globex/);
  });

  it("passes a tenant read that returned only its own rows, and fails one that returned another tenant's", () => {
    const readAs = (tenant: string, tenants: string[]) => {
      const fw = twoTenants();
      const invoke = fw.history.invoke('client', 'list-tenant', { data: { tenant } });
      fw.history.ok(invoke, { data: { tenant, rows: tenants.length, tenants } });
      return fw.build();
    };
    expectClean(i13Isolation, readAs('acme', ['acme']));
    expectViolation(i13Isolation, readAs('acme', ['acme', 'globex']), /a read as tenant acme \(history \d+\) returned rows of globex/);
  });
});
