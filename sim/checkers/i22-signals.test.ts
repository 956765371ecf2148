import { beforeAll, describe, expect, it } from 'vitest';
import type { HistoryEntry } from '../history.ts';
import { simulate } from '../run-scenario.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import type { WorldResult } from '../world.ts';
import { realRun } from './__test-helpers__/real-run.ts';
import { i22Signals, recomputeSignals, signalMarks } from './i22-signals.ts';

/** The stuck-alert scenario's real run (seed 1), and copies whose recorded signals() answers were tampered with. */
let world: WorldResult;

beforeAll(async () => {
  world = (await simulate({ scenario: catalogueScenario('stuck-alert'), seed: '1' })).world;
}, 60_000);

type Signals = Record<string, unknown> & { alerts: { stuckWhileCapacityNormal: boolean } };

/** The world with its k-th signals read (among those `pick` selects) answered as `change` says: what a wrong signals() would have recorded. */
function tampered(pick: (signals: Signals, at: number) => boolean, change: (signals: Signals) => void): { world: WorldResult; changed: number } {
  let changed = 0;
  const entries = world.history.entries().map((entry): HistoryEntry => {
    if (entry.type !== 'ok' || entry.op !== 'signals') return entry;
    const data = structuredClone(entry.data) as { signals: Signals; ev: number };
    if (!pick(data.signals, entry.timeMs)) return entry;
    change(data.signals);
    changed += 1;
    return { ...entry, data: data as unknown as HistoryEntry['data'] };
  });
  const history = Object.create(world.history, { entries: { value: () => entries } }) as WorldResult['history'];
  return { world: { ...world, history }, changed };
}

const T0 = 1_700_000_000_000;

describe('I22 signals are true', () => {
  it('passes the real run, and its reads reach the three alert marks', () => {
    expect(i22Signals.check(world)).toEqual([]);
    expect(recomputeSignals(world).length).toBeGreaterThan(30);
    const marks = signalMarks(world);
    expect(marks.fired).toBeGreaterThan(0);
    expect(marks.silentPaused).toBeGreaterThan(0);
    expect(marks.silentAtLimit).toBeGreaterThan(0);
  });

  it('fails a depth read from a stale cache (each read answered with the depth of the read before it)', () => {
    let before: unknown;
    const stale = tampered(
      (signals) => {
        const last = before;
        before = signals.depth;
        return last !== undefined && JSON.stringify(last) !== JSON.stringify(signals.depth);
      },
      (signals) => {
        signals.depth = [{ tenant: 'acme', priority: 10, n: 1 }];
      },
    );
    expect(stale.changed).toBeGreaterThan(0);
    expect(i22Signals.check(stale.world).some((v) => /I22 depth: .*depth reported/.test(v.message))).toBe(true);
  });

  it('fails an alert that fires for a paused tenant, and a tenant held at its own limit (named constructor), alone', () => {
    const bad = tampered(
      (signals, at) => at - T0 > 65_000 && at - T0 < 80_000 && signals.alerts.stuckWhileCapacityNormal === false,
      (signals) => {
        signals.alerts.stuckWhileCapacityNormal = true;
      },
    );
    expect(bad.changed).toBeGreaterThan(0);
    expect(i22Signals.check(bad.world).some((v) => /I22 alert: .*reported true, but only a paused tenant or a tenant at its own slot limit has work waiting past stuckAfterMs/.test(v.message))).toBe(true);
  });

  it('fails an alert that stays silent while its condition holds', () => {
    const bad = tampered(
      (signals) => signals.alerts.stuckWhileCapacityNormal === true,
      (signals) => {
        signals.alerts.stuckWhileCapacityNormal = false;
      },
    );
    expect(bad.changed).toBeGreaterThan(0);
    expect(i22Signals.check(bad.world).some((v) => /I22 alert: .*reported false, but an eligible task waited stuckAfterMs/.test(v.message))).toBe(true);
  });

  it('fails a decision count, a lease, a latency and a rejection that the history does not back', () => {
    const last = (signals: Signals) => Array.isArray(signals.leases) && signals.leases.length > 0;
    const leases = tampered(last, (signals) => {
      (signals.leases as { ageMs: number }[])[0]!.ageMs += 1;
    });
    expect(i22Signals.check(leases.world).some((v) => /I22 leases/.test(v.message))).toBe(true);
    const decisions = tampered(
      () => true,
      (signals) => {
        const run = (signals.decisions as { action: string; n: number }[]).find((row) => row.action === 'RUN');
        if (run !== undefined) run.n += 1;
      },
    );
    expect(i22Signals.check(decisions.world).some((v) => /I22 decisions: .*RUN:admitted reported/.test(v.message))).toBe(true);
    const waits = tampered(
      (signals) => (signals.waitMs as { count: number }).count > 0,
      (signals) => {
        (signals.waitMs as { max: number }).max += 1;
      },
    );
    expect(i22Signals.check(waits.world).some((v) => /I22 latency: .*waitMs reported/.test(v.message))).toBe(true);
    const rejections = tampered(
      () => true,
      (signals) => {
        signals.rejections = [{ reason: 'queue_full', n: 1 }];
      },
    );
    expect(i22Signals.check(rejections.world).some((v) => /I22 rejections: .*queue_full reported 1, the history says 0/.test(v.message))).toBe(true);
  });

  it('judges nothing in a run without a monitor', () => {
    const bare = { ...world, history: Object.create(world.history, { entries: { value: () => world.history.entries().filter((entry) => entry.type === 'note' || entry.op !== 'signals') } }) as WorldResult['history'] };
    expect(recomputeSignals(bare)).toEqual([]);
    expect(i22Signals.check(bare)).toEqual([]);
  });
});

describe('I22 for a tenant named like an Object.prototype member (issue 31)', () => {
  /** Two tasks of `tenant`, one running at its limit of 1 and one waiting 10 minutes, then one signals() read recorded. */
  async function atItsLimit(tenant: string): Promise<WorldResult> {
    const run = realRun({ globalLimit: 2, perTenantLimit: 1, stuckAfterMs: 600_000 });
    await run.enqueue({ tenant });
    await run.enqueue({ tenant });
    await run.claim('w0#1');
    run.advance(600_000);
    const invoke = run.history.invoke('monitor', 'signals');
    const signals = await run.queue.signals();
    const ev = await run.queue.eventCursor();
    run.history.ok(invoke, { data: { signals: signals as unknown as Record<string, never>, ev } });
    return await run.build();
  }

  for (const tenant of ['constructor', '__proto__', 'toString']) {
    it(`judges ${tenant} by its own limit: the silent alert passes, an alert that fires fails`, async () => {
      const world = await atItsLimit(tenant);
      const read = recomputeSignals(world);
      expect(read).toHaveLength(1);
      expect(read[0]!.expected.stuck).toBe(false);
      expect(i22Signals.check(world)).toEqual([]);
      // The bad history: the queue's alert fired for a tenant held by its own limit.
      const entries = world.history.entries().map((entry): HistoryEntry => {
        if (entry.type !== 'ok' || entry.op !== 'signals') return entry;
        const data = structuredClone(entry.data) as { signals: Signals; ev: number };
        data.signals.alerts.stuckWhileCapacityNormal = true;
        return { ...entry, data: data as unknown as HistoryEntry['data'] };
      });
      const bad = { ...world, history: Object.create(world.history, { entries: { value: () => entries } }) as WorldResult['history'] };
      expect(i22Signals.check(bad).map((v) => v.message).join('\n')).toMatch(/stuckWhileCapacityNormal reported true, but only a tenant at its own slot limit has work waiting past stuckAfterMs/);
    });
  }
});
