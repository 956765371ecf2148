import { describe, expect, it } from 'vitest';
import { runGroupMealDemo } from './group-meal.ts';
import { runSupersedeDemo } from './supersede.ts';
import { DEMO_TOPICS } from './topics.ts';

describe("seed 000's four-topic example on the real queue", async () => {
  const lines: string[] = [];
  const result = await runGroupMealDemo((line) => lines.push(line));
  const idOf = (topic: string) => result.tasks.find((task) => task.topic === topic)?.taskId;
  const groupMeal = DEMO_TOPICS.find((topic) => topic.priority === 30)?.topic as string;
  const paid = DEMO_TOPICS.filter((topic) => topic.paid).map((topic) => idOf(topic.topic));
  const unpaid = DEMO_TOPICS.filter((topic) => !topic.paid).map((topic) => idOf(topic.topic));

  it('claims the group meal first, with its base priority of 30 as the score', () => {
    expect(result.claims[0]).toMatchObject({ order: 1, topic: groupMeal, priority: 30, score: 30 });
    expect(result.claims.slice(1).every((claim) => claim.priority === 0)).toBe(true);
  });

  it('records queue waits of 5, 8, 11 and 14 s from the logical clock', () => {
    expect(result.claims.map((claim) => claim.waitMs)).toEqual([5_000, 8_000, 11_000, 14_000]);
  });

  it('groups exactly the three paid topics into one incident candidate, never confirmed', () => {
    expect(result.incidentCandidates).toHaveLength(1);
    const [candidate] = result.incidentCandidates;
    expect([...(candidate?.taskIds ?? [])].sort()).toEqual([...paid].sort());
    expect(candidate).toMatchObject({ stage: 'after_payment', confirmedIncident: false });
  });

  it('keeps the unpaid topic out of every group with them', () => {
    expect(unpaid).toHaveLength(1);
    for (const candidate of result.incidentCandidates) expect(candidate.taskIds).not.toContain(unpaid[0]);
    expect(result.standingApart).toEqual([{ taskId: unpaid[0], topic: 'store-19/no-ticket-printed', stage: 'payment' }]);
  });

  it('ends every run done while every result stays needs_human (Q12)', () => {
    expect(result.tasks).toHaveLength(4);
    for (const task of result.tasks) expect(task).toMatchObject({ state: 'done', outcome: 'done', businessStatus: 'needs_human' });
  });

  it("reports every one of the article's checks as holding, and prints them", () => {
    expect(result.checks.filter((check) => !check.holds)).toEqual([]);
    expect(lines.some((line) => line.includes('claim #1') && line.includes(groupMeal))).toBe(true);
    expect(lines.filter((line) => line.startsWith('  ok'))).toHaveLength(result.checks.length);
  });

  it('is deterministic: a second run gives the same result', async () => {
    expect(await runGroupMealDemo()).toEqual(result);
  });
});

describe('supersede: a correction replaces the waiting version', async () => {
  const result = await runSupersedeDemo();

  it('accepts the corrected version as a replacement, and the old one never runs', () => {
    expect(result.replaced).toMatchObject({ version: 1, state: 'superseded', everClaimed: false, enqueueStatus: 'replaced' });
    expect(result.claims.map((claim) => claim.taskId)).not.toContain(result.replaced.taskId);
  });

  it('leaves a running version alone and marks its result stale_input; the latest runs last', () => {
    expect(result.overtaken).toMatchObject({ version: 2, state: 'done', outcome: 'stale_input' });
    expect(result.latest).toMatchObject({ version: 3, state: 'done', outcome: 'done' });
    expect(result.claims.map((claim) => claim.version)).toEqual([1, 2, 3]);
    expect(result.checks.every((check) => check.holds)).toBe(true);
  });
});
