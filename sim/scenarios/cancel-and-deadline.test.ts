import { describe, expect, it } from 'vitest';
import { simulate } from '../run-scenario.ts';
import type { ExplicitTask, ScenarioSpec } from '../scenario.ts';
import { catalogueScenario } from './registry.ts';
import { mapTasks } from '../workloads/__test-helpers__/parts.ts';

const scenario = catalogueScenario('cancel-and-deadline');

function withTask(label: string, change: (task: ExplicitTask) => ExplicitTask): ScenarioSpec {
  const copy = structuredClone(scenario);
  copy.workload = mapTasks(copy.workload, (task) => (task.label === label ? change(task) : task));
  return copy;
}

describe('cancel-and-deadline', () => {
  it.each(['1', '2', '3'])('passes seed %s: two cancels and two expiries, the other tenant untouched', async (seed) => {
    const { world, report } = await simulate({ scenario, seed });
    expect(report.violations).toEqual([]);
    expect(report.marks.cancelled).toBe(2);
    expect(report.marks.expired).toBe(2);
    const cancels = world.history.entries().filter((entry) => entry.type === 'ok' && entry.op === 'cancel');
    expect(cancels.map((entry) => (entry.data as { outcome: string }).outcome).sort()).toEqual(['cancel_requested', 'cancelled']);
  });

  it('fails its expectations when the client never cancels', async () => {
    const { report } = await simulate({ scenario: withTask('cancel-running', ({ cancelAtMs: _dropped, ...task }) => task), seed: '1' });
    expect(report.violations.map((violation) => violation.message).join('\n')).toMatch(/'cancel-running'\) went ready -> running -> done; expected exactly ready -> running -> cancelled/);
  });

  it('fails its expectations when a waiting task has no deadline', async () => {
    const { report } = await simulate({ scenario: withTask('expire-ready', ({ deadlineAfterMs: _dropped, ...task }) => task), seed: '1' });
    expect(report.violations.map((violation) => violation.message).join('\n')).toMatch(/'expire-ready'\) went ready -> running -> done/);
  });
});
