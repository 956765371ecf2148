import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readScenarioFile } from '../check/scenario-file.ts';
import { emptyPlan, type FaultPlan } from '../faults/plan.ts';
import { simulate } from '../run-scenario.ts';
import type { ScenarioSpec } from '../scenario.ts';
import type { WorldResult } from '../world.ts';
import { claimSequence } from './claim-sequence.ts';
import { enqueueResult } from './enqueue-result.ts';
import { eventOrder } from './event-order.ts';
import { everyTask } from './every-task.ts';
import { finalTask } from './final-task.ts';
import { historyCount } from './history-count.ts';
import { incidentCandidates } from './incident-candidates.ts';
import { EXPECTATION_KINDS, expectationSchema } from './index.ts';
import { markReached } from './mark.ts';
import { peakOccupancy } from './peak-occupancy.ts';
import { scoresAtClaim } from './scores-at-claim.ts';
import { staleWrite } from './stale-write.ts';
import { taskPath } from './task-path.ts';
import type { ExpectationKind } from './types.ts';
import { mapTasks } from '../workloads/__test-helpers__/parts.ts';

/**
 * The expectation kinds the seed 000 / 003 catalogue scenarios use. Each is shown to hold on a run
 * where it should and to fail on a run where it should not: mostly a real run of a variant of the
 * catalogue scenario that breaks the property (a smaller aging cap, a larger capacity, no pause), not
 * just a wrong number in the expectation.
 */

function scenario(name: string, change: (spec: ScenarioSpec) => ScenarioSpec = (spec) => spec): ScenarioSpec {
  const path = join(import.meta.dirname, '..', '..', 'scenarios', `${name}.json`);
  return change({ ...readScenarioFile(path), expect: [] });
}

const runs = new Map<string, Promise<WorldResult>>();
function run(key: string, spec: () => ScenarioSpec, seed = '3'): Promise<WorldResult> {
  let found = runs.get(key);
  if (found === undefined) runs.set(key, (found = simulate({ scenario: spec(), seed }).then(({ world }) => world)));
  return found;
}

const groupMeal = () => run('group-meal', () => scenario('group-meal'));
const unpaidJoins = () =>
  run('group-meal, unpaid at the paid stage', () =>
    scenario('group-meal', (spec) => ({
      ...spec,
      workload: mapTasks(spec.workload, (task) => (task.label === 'store-19/no-ticket-printed' ? { ...task, context: { ...task.context, stage: 'after_payment' } } : task)),
    })),
  );
const agingTable = () => run('aging-table', () => scenario('aging-table'));
const smallCap = () => run('aging-table, agingCap 5', () => scenario('aging-table', (spec) => ({ ...spec, queue: { ...spec.queue, agingCap: 5 } })));
const leaseTable = () => run('lease-expiry-uncertain', () => scenario('lease-expiry-uncertain'));
/** The lease table without its stale-write replays: only the zombie's own writes are refused. */
const noReplays = () =>
  run('lease-expiry-uncertain, no stale writes', () =>
    scenario('lease-expiry-uncertain', (spec) => {
      const plan = (spec.faults as { plan: FaultPlan }).plan;
      return { ...spec, faults: { plan: { ...plan, rates: { ...plan.rates, staleWriteProbability: 0 } } } };
    }),
  );
const noPause = () => run('lease-expiry-uncertain, no pause', () => scenario('lease-expiry-uncertain', (spec) => ({ ...spec, faults: { plan: emptyPlan() } })));
const twoSlots = () => run('lease-expiry-uncertain, two slots', () => scenario('lease-expiry-uncertain', (spec) => ({ ...spec, queue: { ...spec.queue, globalLimit: 2, perTenantLimit: 2 } })));
const supersede = () => run('supersede-stale-input', () => scenario('supersede-stale-input'));
const lateV3 = () =>
  run('supersede-stale-input, v3 after v2 ran', () =>
    scenario('supersede-stale-input', (spec) => ({
      ...spec,
      workload: mapTasks(spec.workload, (task) => (task.label === 'v3' ? { ...task, atMs: 90_000 } : task)),
    })),
  );
const queueFull = () => run('queue-full', () => scenario('queue-full'));
const roomy = () => run('queue-full, capacity 100', () => scenario('queue-full', (spec) => ({ ...spec, queue: { ...spec.queue, capacity: 100 } })));
const claimers = () => run('concurrent-claimers', () => scenario('concurrent-claimers'), '2');

/** Validates the expectation with the scenario-file schema, then checks it against the run. */
function check<S extends { kind: string }>(kind: ExpectationKind<S>, spec: S, world: WorldResult): string[] {
  const parsed = expectationSchema.parse(spec) as unknown as S;
  return kind.check(parsed, world);
}

describe('expectation kinds for the seed 000 and 003 catalogue', () => {
  it('are all registered, each with a description and a class', () => {
    const kinds = [claimSequence, scoresAtClaim, incidentCandidates, enqueueResult, markReached, peakOccupancy, taskPath, eventOrder, staleWrite, finalTask, everyTask, historyCount];
    for (const kind of kinds) {
      expect(EXPECTATION_KINDS).toContain(kind);
      expect(kind.description.length).toBeGreaterThan(20);
      expect(['safety', 'liveness']).toContain(kind.class);
    }
  });

  it('claim-sequence: the group meal first with the article waits; fails when the order or a recorded value differs', async () => {
    const spec = {
      kind: 'claim-sequence' as const,
      // The article's first wait, then one run after another (W1); the seed's exact waits and one range.
      claims: [{ label: 'store-07/group-meal', score: 30, waitMs: 5_000 }, { waitMs: 7_827 }, { waitMs: [10_000, 10_800] as [number, number] }, { waitMs: 12_966 }],
      exhaustive: true,
    };
    expect(check(claimSequence, spec, await groupMeal())).toEqual([]);
    expect(check(claimSequence, { ...spec, claims: spec.claims.slice(0, 3) }, await groupMeal())).toEqual(['the run made 4 first claims, expected exactly 3']);
    const order = { kind: 'claim-sequence' as const, claims: [{ label: 'long-run' }, { label: 'L1', score: 11 }, { label: 'H1' }, { label: 'M1', score: 15 }] };
    expect(check(claimSequence, order, await agingTable())).toEqual([]);
    // With a cap of 5, L1 has only 6 points when the slot frees: H1 goes first.
    const messages = check(claimSequence, order, await smallCap());
    expect(messages.some((message) => /claim #2 took task \d+ \('H1'\).*expected 'L1'/.test(message))).toBe(true);
    expect(messages.some((message) => /claim #2 .* with score 10, expected 11/.test(message))).toBe(true);
  });

  it("scores-at-claim: seed 003's table at L1's claim; fails when a smaller cap changes it", async () => {
    const table = { kind: 'scores-at-claim' as const, claim: 'L1', scores: { L1: 11, H1: 10, M1: 7 }, waitsMs: { L1: [100_000, 109_999] as [number, number] }, only: true };
    expect(check(scoresAtClaim, table, await agingTable())).toEqual([]);
    expect(check(scoresAtClaim, { ...table, scores: { L1: 11, H1: 10 } }, await agingTable())).toEqual([expect.stringMatching(/also eligible: task \d+ \('M1'\) scoring 7/)]);
    const capped = check(scoresAtClaim, table, await smallCap());
    expect(capped).toContain(`at claim 1 of task 2 ('L1') (+${capped[0]!.match(/\(\+(\d+) ms\)/)![1]} ms): 'H1' was not an eligible ready task`);
    expect(capped.some((message) => /'L1' scored 6, expected 11/.test(message))).toBe(true);
  });

  it('incident-candidates: the three paid reports together, the unpaid apart; fails when the unpaid one shares their stage', async () => {
    const spec = {
      kind: 'incident-candidates' as const,
      groups: [['store-12/checkout-slow', 'store-31/status-not-refreshing', 'store-07/group-meal']],
      apart: ['store-19/no-ticket-printed'],
      exact: true,
    };
    expect(check(incidentCandidates, spec, await groupMeal())).toEqual([]);
    const joined = check(incidentCandidates, spec, await unpaidJoins());
    expect(joined).toContain('no candidate is exactly [store-07/group-meal, store-12/checkout-slow, store-31/status-not-refreshing]; candidates holding them: [store-07/group-meal, store-12/checkout-slow, store-19/no-ticket-printed, store-31/status-not-refreshing]');
    expect(joined).toContain("'store-19/no-ticket-printed' should stand apart but is in candidate [store-07/group-meal, store-12/checkout-slow, store-19/no-ticket-printed, store-31/status-not-refreshing]");
    // A candidate that claims to be a confirmed incident, or that names another tenant's task, fails.
    const world = await groupMeal();
    const forged = { ...world, incidents: world.incidents!.map((group) => ({ ...group, confirmedIncident: true as unknown as false, tenant: 'someone-else' })) };
    const messages = check(incidentCandidates, { kind: 'incident-candidates' as const, exact: true, groups: spec.groups }, forged);
    expect(messages.some((message) => /says confirmedIncident: true/.test(message))).toBe(true);
    expect(messages.some((message) => /of tenant someone-else names tasks of another tenant/.test(message))).toBe(true);
  });

  it('enqueue-result: queue_full when full and recorded, replaced and duplicate accepted; fails with room to spare or an unrecorded refusal', async () => {
    const full = { kind: 'enqueue-result' as const, label: 'e', occurrence: 1, error: 'queue_full' as const, recorded: true };
    const world = await queueFull();
    expect(check(enqueueResult, full, world)).toEqual([]);
    expect(check(enqueueResult, { kind: 'enqueue-result' as const, label: 'b-v2', status: 'replaced' as const }, world)).toEqual([]);
    expect(check(enqueueResult, { kind: 'enqueue-result' as const, label: 'a', occurrence: 2, status: 'duplicate' as const }, world)).toEqual([]);
    expect(check(enqueueResult, { kind: 'enqueue-result' as const, label: 'e', status: 'enqueued' as const }, world)).toEqual(["request 1 of 'e' at +5000 ms was refused queue_full, expected accepted enqueued"]);
    expect(check(enqueueResult, full, await roomy())).toEqual(["request 1 of 'e' at +5000 ms was accepted enqueued, expected refused queue_full"]);
    // A queue that refused without writing the rejection down fails `recorded`, not the refusal itself.
    const silent = { ...world, final: { ...world.final, rejections: [] } };
    expect(check(enqueueResult, { ...full, recorded: undefined }, silent)).toEqual([]);
    expect(check(enqueueResult, full, silent)).toEqual(["request 1 of 'e' at +5000 ms was refused queue_full but the queue recorded 0 such rejection(s) for 1 refusal(s) of globex/e v1"]);
  });

  it('mark: reached at least and at most so many times', async () => {
    expect(check(markReached, { kind: 'mark' as const, mark: 'queue_full' as const, atLeast: 2, atMost: 2 }, await queueFull())).toEqual([]);
    expect(check(markReached, { kind: 'mark' as const, mark: 'queue_full' as const, atMost: 1 }, await queueFull())).toEqual(['mark queue_full reached 2 time(s), expected at most 1']);
    expect(check(markReached, { kind: 'mark' as const, mark: 'queue_full' as const }, await roomy())).toEqual(['mark queue_full reached 0 time(s), expected at least 1']);
    expect(check(markReached, { kind: 'mark' as const, mark: 'aging_overtook' as const }, await agingTable())).toEqual([]);
  });

  it('peak-occupancy: one slot held at a time while A is uncertain; fails with two slots, or when a limit is never reached', async () => {
    const one = { kind: 'peak-occupancy' as const, measure: 'occupied' as const, max: 1, atLeast: 1 };
    expect(check(peakOccupancy, one, await leaseTable())).toEqual([]);
    expect(check(peakOccupancy, one, await twoSlots())).toEqual([expect.stringMatching(/^2 tasks were occupied at once globally \(first after event \d+\), expected at most 1$/)]);
    expect(check(peakOccupancy, { kind: 'peak-occupancy' as const, measure: 'live' as const, max: 4, atLeast: 4 }, await queueFull())).toEqual([]);
    expect(check(peakOccupancy, { kind: 'peak-occupancy' as const, measure: 'live' as const, atLeast: 5 }, await queueFull())).toEqual(['at most 4 tasks were live at once globally, expected the count to reach 5']);
    const acme = { kind: 'peak-occupancy' as const, measure: 'running' as const, tenant: 'acme', max: 2, atLeast: 2 };
    expect(check(peakOccupancy, acme, await claimers())).toEqual([]);
    expect(check(peakOccupancy, { ...acme, max: 1, atLeast: undefined }, await claimers())).toEqual([expect.stringMatching(/^2 tasks were running at once for tenant acme/)]);
  });

  it('task-path: the waiting v2 is superseded without running; fails when v3 comes after v2 ran', async () => {
    const spec = { kind: 'task-path' as const, task: 'v2', path: ['ready' as const, 'superseded' as const] };
    expect(check(taskPath, spec, await supersede())).toEqual([]);
    expect(check(taskPath, spec, await lateV3())).toEqual(["task 4 ('v2') went ready -> running -> done; expected exactly ready -> superseded"]);
    const lease = { kind: 'task-path' as const, task: 'A', path: ['ready' as const, 'uncertain' as const, 'ready' as const, 'done' as const], exact: false };
    expect(check(taskPath, lease, await leaseTable())).toEqual([]);
    expect(check(taskPath, lease, await noPause())).toEqual(["task 1 ('A') went ready -> running -> done; expected ready -> uncertain -> ready -> done in that order"]);
  });

  it('event-order: B is claimed only after the uncertain A was confirmed stopped; fails when B has a slot of its own', async () => {
    const spec = { kind: 'event-order' as const, first: { task: 'A', event: 'stop_confirmed' }, then: { task: 'B', event: 'claimed' } };
    expect(check(eventOrder, spec, await leaseTable())).toEqual([]);
    expect(check(eventOrder, spec, await twoSlots())).toEqual([expect.stringMatching(/^'A' stop_confirmed #1 \(event \d+ at \+\d+ ms\) came after 'B' claimed #1/)]);
    expect(check(eventOrder, spec, await noPause())).toEqual(["'A' stop_confirmed #1 never happened (task 1 has 0 stop_confirmed event(s))"]);
  });

  it('stale-write: the zombie of generation 1 is refused; fails when nobody was paused', async () => {
    const spec = { kind: 'stale-write' as const, task: 'A', generation: 1, zombie: true };
    expect(check(staleWrite, spec, await leaseTable())).toEqual([]);
    expect(check(staleWrite, spec, await noPause())).toEqual(["0 write(s) of generation 1 by a zombie to task 1 ('A') were refused stale_lease, expected at least 1"]);
    expect(check(staleWrite, spec, await noReplays())).toEqual([]);
    expect(check(staleWrite, { ...spec, generation: 2 }, await noReplays())).toEqual(["0 write(s) of generation 2 by a zombie to task 1 ('A') were refused stale_lease, expected at least 1"]);
  });

  it('final-task: outcome, attempts, generation and dead letter of the final row', async () => {
    expect(check(finalTask, { kind: 'final-task' as const, task: 'v1', outcome: 'stale_input' as const, attempts: 1 }, await supersede())).toEqual([]);
    const ran = { kind: 'final-task' as const, task: 'v2', outcome: 'done' as const };
    expect(check(finalTask, ran, await lateV3())).toEqual([]);
    expect(check(finalTask, ran, await supersede())).toEqual(["task 4 ('v2') ended superseded with outcome none, expected done"]);
    const world = await leaseTable();
    expect(check(finalTask, { kind: 'final-task' as const, task: 'C', attempts: 3, generation: [3, 3] as [number, number], deadLetter: true }, world)).toEqual([]);
    expect(check(finalTask, { kind: 'final-task' as const, task: 'A', attempts: 1, deadLetter: true, resultStatus: 'resolved' }, world)).toEqual([
      "task 1 ('A')'s result says needs_human, expected status resolved",
      "task 1 ('A') has attempts 2, expected 1",
      "task 1 ('A') is not in the dead-letter table, expected to be",
    ]);
  });

  it('every-task: every task done after the race; fails when one ended failed', async () => {
    expect(check(everyTask, { kind: 'every-task' as const, state: 'done' as const, outcome: 'done' as const, atLeast: 40 }, await claimers())).toEqual([]);
    expect(check(everyTask, { kind: 'every-task' as const, state: 'done' as const }, await leaseTable())).toEqual(["task 3 ('C') ended failed, expected done"]);
    expect(check(everyTask, { kind: 'every-task' as const, state: ['done' as const, 'failed' as const], tenant: 'acme', atLeast: 3 }, await leaseTable())).toEqual([]);
    expect(check(everyTask, { kind: 'every-task' as const, state: 'done' as const, tenant: 'nobody' }, await leaseTable())).toEqual(['0 task(s) of tenant nobody in the final database, expected at least 1']);
  });

  it('history-count: claims refused quota while many workers race; fails with one lone worker', async () => {
    const raced = { kind: 'history-count' as const, op: 'claim', outcome: 'quota', atLeast: 20 };
    expect(check(historyCount, raced, await claimers())).toEqual([]);
    expect(check(historyCount, { ...raced, atLeast: 1 }, await groupMeal())).toEqual(['claim failed quota 0 time(s), expected at least 1']);
    expect(check(historyCount, { kind: 'history-count' as const, op: 'enqueue', outcome: 'queue_full', actor: 'client', atLeast: 2, atMost: 2 }, await queueFull())).toEqual([]);
  });

  it('the schemas refuse what they cannot check, naming the field', () => {
    const bad: unknown[] = [
      { kind: 'claim-sequence', claims: [] },
      { kind: 'claim-sequence', claims: [{ waitMs: [9, 1] }] },
      { kind: 'claim-sequence', claims: [{ lable: 'x' }] },
      { kind: 'scores-at-claim', claim: 'L1', scores: {} },
      { kind: 'incident-candidates', groups: [['only-one']] },
      { kind: 'incident-candidates' },
      { kind: 'enqueue-result', label: 'e', status: 'enqueued', error: 'queue_full' },
      { kind: 'enqueue-result', label: 'e', status: 'enqueued', recorded: true },
      { kind: 'mark', mark: 'no_such_mark' },
      { kind: 'mark', mark: 'queue_full', atLeast: 3, atMost: 2 },
      { kind: 'peak-occupancy', measure: 'occupied' },
      { kind: 'peak-occupancy', measure: 'busy', max: 1 },
      { kind: 'task-path', task: 'A', path: ['ready', 'finished'] },
      { kind: 'event-order', first: { task: 'A', event: 'claimed', occurrence: 0 }, then: { task: 'B', event: 'claimed' } },
      { kind: 'stale-write', task: 'A', atLeast: 0 },
      { kind: 'final-task', task: 'A' },
      { kind: 'every-task', state: 'finished' },
      { kind: 'history-count', op: 'claim', outcome: 'quota' },
    ];
    for (const value of bad) expect({ value, ok: expectationSchema.safeParse(value).success }).toEqual({ value, ok: false });
    const issues = expectationSchema.safeParse({ kind: 'task-path', task: 'A', path: ['ready', 'finished'] }).error?.issues ?? [];
    expect(issues.map((issue) => issue.path.join('.'))).toContain('path.1');
  });
});
