import { describe, it } from 'vitest';
import type { QueueConfig } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { i3Quotas } from './i3-quotas.ts';
import { realRun } from './__test-helpers__/real-run.ts';

/**
 * The real queue never breaks its quotas, so each bad history is a real run under looser limits whose
 * books are then edited to name tighter ones: what a queue that ignored its limits would have left.
 */
function judgedUnder(world: WorldResult, queue: Partial<QueueConfig>): WorldResult {
  // A new result object: checkers memoise their analysis per result.
  return { ...world, scenario: { ...world.scenario, queue } };
}

async function twoRunning(config: Partial<QueueConfig>, tenants: [string, string]): Promise<WorldResult> {
  const run = realRun(config);
  const a = (await run.enqueue({ tenant: tenants[0] }))!;
  const b = (await run.enqueue({ tenant: tenants[1] }))!;
  await run.claim('w0#1', a);
  await run.claim('w1#1', b);
  return await run.build();
}

describe('I3 quotas at every instant', () => {
  it('passes one running task per tenant within the global limit', async () => {
    const run = realRun({ globalLimit: 2, perTenantLimit: 1 });
    const a = (await run.enqueue({ tenant: 'acme' }))!;
    const b = (await run.enqueue({ tenant: 'globex' }))!;
    await run.claim('w0#1', a);
    await run.claim('w1#1', b);
    await run.runToDone('w0#1', a);
    await run.runToDone('w1#1', b);
    expectClean(i3Quotas, await run.build());
  });

  it('fails when more tasks hold slots than the global limit', async () => {
    const world = await twoRunning({ globalLimit: 2, perTenantLimit: 1 }, ['acme', 'globex']);
    expectClean(i3Quotas, world);
    expectViolation(i3Quotas, judgedUnder(world, { globalLimit: 1, perTenantLimit: 1 }), /2 tasks hold slots, global limit 1/);
  });

  it('counts an uncertain task against its tenant: a second claim for that tenant breaks the limit', async () => {
    const run = realRun({ globalLimit: 3, perTenantLimit: 2 });
    const a = (await run.enqueue({ tenant: 'acme' }))!;
    const b = (await run.enqueue({ tenant: 'acme' }))!;
    await run.claim('w0#1', a);
    run.advance(31_000);
    await run.expireLeases();
    await run.claim('w1#1', b);
    const world = await run.build();
    expectClean(i3Quotas, world);
    expectViolation(i3Quotas, judgedUnder(world, { globalLimit: 3, perTenantLimit: 1 }), /tenant acme holds 2 slots, limit 1/);
  });

  it('honours tenantLimits overrides', async () => {
    const config = { globalLimit: 3, perTenantLimit: 1, tenantLimits: { acme: 2 } };
    const world = await twoRunning(config, ['acme', 'acme']);
    expectClean(i3Quotas, world);
    expectViolation(i3Quotas, judgedUnder(world, { ...config, tenantLimits: {} }), /tenant acme holds 2 slots, limit 1/);
  });

  it('holds a tenant named like an Object.prototype member to the default limit', async () => {
    const world = await twoRunning({ globalLimit: 3, perTenantLimit: 2 }, ['constructor', 'constructor']);
    expectViolation(i3Quotas, judgedUnder(world, { globalLimit: 3, perTenantLimit: 1 }), /tenant constructor holds 2 slots, limit 1/);
  });
});
