import { describe, it } from 'vitest';
import { expectClean, expectViolation } from './expect-checker.ts';
import { fakeWorld } from './fake-world.ts';
import { i3Quotas } from './i3-quotas.ts';

describe('I3 quotas at every instant', () => {
  it('passes one running task per tenant within the global limit', () => {
    const fw = fakeWorld({ globalLimit: 2, perTenantLimit: 1 });
    const a = fw.enqueue({ tenant: 'acme' })!;
    const b = fw.enqueue({ tenant: 'globex' })!;
    fw.claim('w0#1', a);
    fw.claim('w1#1', b);
    fw.runToDone('w0#1', a).runToDone('w1#1', b);
    expectClean(i3Quotas, fw.build());
  });

  it('fails when more tasks hold slots than the global limit', () => {
    const fw = fakeWorld({ globalLimit: 1, perTenantLimit: 1 });
    const a = fw.enqueue({ tenant: 'acme' })!;
    const b = fw.enqueue({ tenant: 'globex' })!;
    fw.claim('w0#1', a);
    fw.claim('w1#1', b);
    expectViolation(i3Quotas, fw.build(), /2 tasks hold slots, global limit 1/);
  });

  it('counts an uncertain task against its tenant: a second claim for that tenant breaks the limit', () => {
    const fw = fakeWorld({ globalLimit: 3, perTenantLimit: 1 });
    const a = fw.enqueue({ tenant: 'acme' })!;
    const b = fw.enqueue({ tenant: 'acme' })!;
    fw.claim('w0#1', a);
    fw.advance(31_000).expireLeases();
    fw.claim('w1#1', b);
    expectViolation(i3Quotas, fw.build(), /tenant acme holds 2 slots, limit 1/);
  });

  it('honours tenantLimits overrides', () => {
    const fw = fakeWorld({ globalLimit: 3, perTenantLimit: 1, tenantLimits: { acme: 2 } });
    const a = fw.enqueue({ tenant: 'acme' })!;
    const b = fw.enqueue({ tenant: 'acme' })!;
    fw.claim('w0#1', a);
    fw.claim('w1#1', b);
    expectClean(i3Quotas, fw.build());
  });

  it('holds a tenant named like an Object.prototype member to the default limit', () => {
    const fw = fakeWorld({ globalLimit: 3, perTenantLimit: 1 });
    const a = fw.enqueue({ tenant: 'constructor' })!;
    const b = fw.enqueue({ tenant: 'constructor' })!;
    fw.claim('w0#1', a);
    fw.claim('w1#1', b);
    expectViolation(i3Quotas, fw.build(), /tenant constructor holds 2 slots, limit 1/);
  });
});
