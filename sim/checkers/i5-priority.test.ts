import { describe, expect, it } from 'vitest';
import { expectClean, expectViolation } from './expect-checker.ts';
import { fakeWorld } from './fake-world.ts';
import { claimDecisions, i5Priority, i5Starvation } from './i5-priority.ts';

const MINUTE = 60_000;

describe('I5 priority order', () => {
  it('passes claims in (score, enqueue time, id) order', () => {
    const fw = fakeWorld({ globalLimit: 1, perTenantLimit: 1 });
    const low = fw.enqueue({ priority: 5 })!;
    const high = fw.enqueue({ priority: 20 })!;
    fw.claim('w0#1', high);
    fw.runToDone('w0#1', high);
    fw.claim('w0#1', low);
    expectClean(i5Priority, fw.build());
  });

  it('fails when a claim takes a lower-scored task', () => {
    const fw = fakeWorld({ globalLimit: 1, perTenantLimit: 1 });
    const low = fw.enqueue({ priority: 5 })!;
    fw.enqueue({ priority: 20 });
    fw.claim('w0#1', low);
    expectViolation(i5Priority, fw.build(), /took task 1 \(base 5, score 5\) over task 2 \(base 20, score 20/);
  });

  it('fails when the claim records a score other than the aged score', () => {
    const fw = fakeWorld();
    const task = fw.enqueue({ priority: 5 })!;
    fw.advance(3 * MINUTE).claim('w0#1', task);
    const world = fw.build();
    world.events[1]!.data.score = 5;
    expectViolation(i5Priority, world, /recorded score 5, expected 8/);
  });

  it('fails when a task is claimed before its retry backoff ends', () => {
    const fw = fakeWorld();
    const task = fw.enqueue()!;
    fw.claim('w0#1', task);
    fw.fail('w0#1', task, 5_000);
    fw.advance(1_000).claim('w0#1', task);
    expectViolation(i5Priority, fw.build(), /was claimed at \d+ though it was not eligible \(notBefore/);
  });

  it('lets aging decide: a base-0 task that waited 31 minutes beats a fresh base-30 task', () => {
    const fw = fakeWorld({ globalLimit: 1, perTenantLimit: 1 });
    const old = fw.enqueue({ priority: 0 })!;
    fw.advance(31 * MINUTE);
    fw.enqueue({ priority: 30 });
    fw.claim('w0#1', old);
    const world = fw.build();
    expectClean(i5Priority, world);
    expectClean(i5Starvation, world);
    expect(claimDecisions(world).map((decision) => decision.agingOvertook)).toEqual([true]);
  });
});

describe('I5 no starvation', () => {
  it('fails the aging bound when a fresh base-30 task passes a base-0 task that waited 31 minutes', () => {
    const fw = fakeWorld({ globalLimit: 1, perTenantLimit: 1 });
    fw.enqueue({ priority: 0 });
    fw.advance(31 * MINUTE);
    const fresh = fw.enqueue({ priority: 30 })!;
    fw.claim('w0#1', fresh);
    expectViolation(i5Starvation, fw.build(), /task 1 \(base 0\) had waited 1860000 ms longer than task 2/);
  });

  it('fails when a claim is refused empty while a task was ready and eligible with a free slot', () => {
    const fw = fakeWorld();
    fw.enqueue();
    fw.advance(1_000).refuseClaim('w0#1', 'empty');
    expectViolation(i5Starvation, fw.build(), /claim by w0#1 at \d+ was refused empty with 0\/2 slots held while task 1 was ready and eligible/);
  });

  it('passes a refused claim when the only ready task waits out its backoff', () => {
    const fw = fakeWorld();
    const task = fw.enqueue()!;
    fw.claim('w0#1', task);
    fw.fail('w0#1', task, 5_000);
    fw.advance(1_000).refuseClaim('w1#1', 'empty');
    fw.advance(5_000).claim('w1#1', task);
    expectClean(i5Starvation, fw.build());
  });

  it('uses the wall clock the core saw: a backwards clock jump keeps a fresh task not yet eligible', () => {
    const fw = fakeWorld();
    fw.advance(1_000).enqueue();
    fw.jumpClock(-5_000).refuseClaim('w0#1', 'empty');
    expectClean(i5Starvation, fw.build());
  });
});
