import { describe, expect, it } from 'vitest';
import { emptyPlan } from '../faults/plan.ts';
import { simulate } from '../run-scenario.ts';
import type { ScenarioSpec } from '../scenario.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import { expectationSchema } from './index.ts';

const mixed = catalogueScenario('mixed');

/** Two explicit tasks and a flood, no faults: small enough to read, big enough to check. */
function scenario(expectations: ScenarioSpec['expect']): ScenarioSpec {
  return {
    ...mixed,
    name: 'explicit-test',
    // mixed's script drawing without its topics and client swarm: these tests list every arrival.
    workload: {
      parts: [
        {
          kind: 'tasks',
          tasks: [
            { atMs: 0, tenant: 'acme', topic: 'lunch', priority: 30, label: 'L' },
            { atMs: 0, tenant: 'acme', topic: 'report', priority: 1, version: 1, resendAtMs: [2_000], conflictAtMs: [3_000] },
            { atMs: 5_000, tenant: 'acme', topic: 'report', priority: 1, version: 2, label: 'report-v2', deadlineAfterMs: 600_000 },
          ],
        },
        { kind: 'flood', tenant: 'globex', topicPrefix: 'flood', priority: [10, 20], everyMs: 1_000, fromMs: 0, untilMs: 3_000, count: 2, tiers: ['standard', 'standard', 'long'] },
      ],
      scripts: mixed.workload.scripts,
    },
    faults: { plan: emptyPlan() },
    expect: expectations,
  };
}

describe('explicit tasks, floods and expectations', () => {
  it('turns explicit tasks, resends and floods into arrivals, and checks what holds', async () => {
    const { world, report } = await simulate({ scenario: scenario([{ kind: 'final-state', task: 'L', state: 'done' }]), seed: '1' });
    expect(world.arrivals.map((arrival) => arrival.label)).toEqual(['L', 'report', 'flood-1', 'flood-2', 'flood-3', 'flood-4', 'report', 'flood-5', 'flood-6', 'report', 'report-v2']);
    // The resend is a duplicate; the resend with a changed input is refused (Q1).
    expect(world.enqueued.filter(({ arrival }) => arrival.label === 'report').map(({ result }) => (result.ok ? result.status : result.error))).toEqual(['enqueued', 'duplicate', 'idempotency_conflict']);
    expect(world.arrivals.filter((arrival) => arrival.label === 'report-v2')[0]!.request.deadline).toBeUndefined();
    const v2 = world.enqueued.find(({ arrival }) => arrival.label === 'report-v2')!;
    expect(v2.result.ok).toBe(true);
    const task = world.final.tasks.find((candidate) => v2.result.ok && candidate.id === v2.result.taskId)!;
    expect(task.deadline).toBe(world.startMs + 605_000);
    expect(report.violations).toEqual([]);
    expect(report.verdict).toBe('pass');
  });

  it('a failed expectation is a violation named expect:<kind> that fails the run', async () => {
    const { report } = await simulate({ scenario: scenario([{ kind: 'final-state', task: 'L', state: 'failed' }, { kind: 'final-state', task: 'report', state: ['done', 'superseded'] }]), seed: '1' });
    expect(report.verdict).toBe('safety');
    expect(report.violations.map((violation) => violation.invariant)).toEqual(['expect:final-state']);
    expect(report.violations[0]!.message).toMatch(/expect\[0\] final-state: task \d+ \('L'\) ended done, expected failed/);
  });

  it('the schema names what is wrong', () => {
    const bad = expectationSchema.safeParse({ kind: 'final-state', task: 'L', state: 'finished' });
    expect(bad.success).toBe(false);
    expect(JSON.stringify(bad.error?.issues)).toMatch(/state/);
    expect(expectationSchema.safeParse({ kind: 'no-such-kind' }).success).toBe(false);
  });
});
