import { describe, expect, it } from 'vitest';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { realRun } from './__test-helpers__/real-run.ts';
import { q9LeaseKept } from './q9-lease-kept.ts';

/** w0#1 claims, heartbeats twice on its 10 s schedule, then stops beating: its 30 s lease expires 31 s after the last beat. */
async function lapse() {
  const run = realRun();
  const task = (await run.enqueue())!;
  await run.claim('w0#1', task);
  run.advance(10_000);
  await run.heartbeat('w0#1', task);
  run.advance(10_000);
  await run.heartbeat('w0#1', task);
  run.advance(31_000);
  expect(await run.expireLeases()).toBe(1);
  return { run, world: await run.build(), task };
}

describe('Q9: a holder that heartbeats on its schedule keeps its lease', () => {
  it('passes a lease that lapsed because its holder froze', async () => {
    const run = realRun();
    const task = (await run.enqueue())!;
    await run.claim('w0#1', task);
    run.advance(10_000);
    await run.heartbeat('w0#1', task);
    run.note('pause', 'w0#1');
    run.advance(31_000);
    expect(await run.expireLeases()).toBe(1);
    const world = await run.build();
    expect(world.events.some((event) => event.type === 'lease_expired')).toBe(true);
    expectClean(q9LeaseKept, world);
  });

  it('fails a lease that lapsed under a holder alive, unfrozen and answered (a keeper that stopped beating)', async () => {
    // Nothing was wrong with w0#1 when it stopped beating: no freeze, no kill, no fault beneath the queue.
    const { world } = await lapse();
    expectViolation(q9LeaseKept, world, /Q9 healthy-holder: task 1: w0#1@g1's lease expired at \d+, 31000 ms after its last renewal \(heartbeat invoked at #\d+, \d+\): the holder was alive/);
  });

  it('fails an expiry within two heartbeats of the last renewal, as under a lease shorter than three heartbeats', async () => {
    const { world } = await lapse();
    // The configuration a lost Q9 rule would accept: 31 s of lease against a 20 s heartbeat.
    world.scenario = { ...world.scenario, queue: { ...world.scenario.queue, heartbeatMs: 20_000 } };
    expectViolation(q9LeaseKept, world, /Q9 on-schedule: task 1: w0#1@g1's lease expired at \d+, 31000 ms after its last renewal .*within two heartbeats \(heartbeatMs 20000\)/);
  });

  it('does not judge an expiry with a clock jump since the last renewal', async () => {
    const run = realRun();
    const task = (await run.enqueue())!;
    await run.claim('w0#1', task);
    run.advance(1_000).jumpClock(40_000);
    expect(await run.expireLeases()).toBe(1);
    expectClean(q9LeaseKept, await run.build());
  });
});
