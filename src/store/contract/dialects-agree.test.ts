/**
 * The store contract, across kinds: one history written by the same body on every store kind, then
 * every read of StoreTx over it, compared kind against kind (issue 36 item 4: "the same answer on every
 * store kind"). The per-table files check each method's answer against literals; this one compares
 * whole rows, columns no per-table case names included (a task row's hold and service columns), and the
 * order of every answer whose statement promises one.
 */
import { describe, expect, it } from 'vitest';
import type { StoreTx } from '../store.ts';
import { AT, STORE_KINDS, claim, contractStore, endByHolder, failedTask, makeUncertain, readyTask, sortedBy } from './__test-helpers__/harness.ts';

/** A history that leaves a row in most tables and a task in most states (every key given: the fixtures' own counter differs per run). */
function* history(tx: StoreTx): Generator<unknown, void, unknown> {
  const tenants = ['b', 'a', 'C'];
  const ids: number[] = [];
  for (let i = 0; i < 12; i++) {
    const tenant = tenants[i % 3]!;
    const id = yield* readyTask(tx, { tenant, topic: `s${i % 4}`, version: 1 + Math.floor(i / 4), inputHash: `h${i}`, priority: (i * 7) % 31, now: AT + (i % 5), deadline: i % 2 === 0 ? AT + 1_000 : null, contextJson: i % 3 === 0 ? '{"c":1}' : null });
    ids.push(id);
    yield* tx.eventAppend(id, 1, 'enqueued', AT + i, `{"to":"ready","i":${i}}`, null, null);
  }
  yield* tx.counterLiveAdjust(12);
  for (const [i, id] of [ids[0]!, ids[4]!, ids[5]!, ids[7]!].entries()) {
    yield* claim(tx, id, { workerId: `w${i}`, leaseUntil: AT + 100 + ((i * 13) % 4) * 10, now: AT + 10 + i });
    yield* tx.eventAppend(id, 2, 'claimed', AT + 10 + i, '{"from":"ready","to":"running"}', `w${i}`, 1);
  }
  yield* makeUncertain(tx, ids[5]!);
  yield* tx.taskRequestCancel(ids[4]!);
  const done = yield* endByHolder(tx, { id: ids[0]!, workerId: 'w0', generation: 1, now: AT + 20 }, 'done', { hold: { state: 'settled', charged: 3, usage: '{"tokens":3}', reason: 'checkpointed' } });
  if (done === undefined) throw new Error('history: the completion missed');
  yield* tx.creditInsert(ids[0]!, 'b', 'charge', 3, AT + 20);
  yield* tx.creditInsert(ids[0]!, 'b', 'release', 7, AT + 20);
  const failed = yield* failedTask(tx, { tenant: 'a', topic: 'failing', inputHash: 'hf', now: AT + 30 });
  yield* tx.deadLetterInsert(failed, 'exhausted', '[{"type":"failed"}]', AT + 31, 10);
  yield* tx.checkpointInsert({ id: ids[7]!, generation: 1, kind: 'A', step: 1, state: '{}', usage: '{"tokens":1}', now: AT + 40, eventSeq: 3, requeueSafe: 1 });
  yield* tx.effectInsert({ requestKey: 'k', id: ids[7]!, tenant: 'a', action: 'mail', generation: 1, result: '"ok"', now: AT + 41 });
  yield* tx.budgetLevelPut('tokens', '', 9, AT);
  yield* tx.reservationInsert({ taskId: ids[7]!, generation: 1, budget: 'tokens', scope: '', reserved: 5, baseline: 0, at: AT });
  yield* tx.serviceAdd('a', 4);
  yield* tx.taskAddServiceCharged(ids[7]!, 4);
  yield* tx.tenantPause('C', 'manual', AT);
  yield* tx.admissionInsert({ at: AT, action: 'PAUSE', reason: 'manual', tenant: 'C', task_id: null, retry_at: null, budget: null });
  yield* tx.taskDefer(ids[2]!, 'budget:tokens');
  yield* tx.rejectionInsert('a', 'late', 1, 'capacity', AT + 50);
}

/** Every read of StoreTx over the history (the reads that take arguments, with a few of them). */
function* everyRead(tx: StoreTx) {
  const tasks = yield* tx.taskList();
  const ids = tasks.map((task) => task.id);
  const now = AT + 20;
  return {
    tasks,
    byKey: yield* tx.taskByKey('a', 's1', 1),
    forTenant: yield* tx.taskListForTenant('a'),
    inState: { ready: yield* tx.taskListInState('ready'), running: yield* tx.taskListInState('running'), uncertain: yield* tx.taskListInState('uncertain'), done: yield* tx.taskListInState('done') },
    enqueuedBetween: yield* tx.taskListEnqueuedBetween(AT, AT + 3),
    latest: yield* tx.taskLatestVersion('a', 's1'),
    newer: yield* tx.taskNewerVersionExists('a', 's1', 1),
    older: yield* tx.taskOlderUnstarted('b', 's0', 9),
    live: yield* tx.counterLive(),
    overdue: yield* tx.claimOverdueLeases(AT + 130),
    anyReady: yield* tx.claimAnyReady(),
    firstReady: yield* tx.claimFirstReadyTenant(),
    nextReady: yield* tx.claimNextReadyTenant('C'),
    claimLevelHead: yield* tx.claimLevelHead({ tenant: 'a', maxPriority: 30, minPriority: 0, now }),
    claimReadyHeads: yield* tx.claimReadyHeads(now),
    claimLevelNext: yield* tx.claimLevelNext({ tenant: 'a', priority: 0, enqueuedAt: AT, id: 0, now }),
    olderHolders: yield* tx.sessionOlderHolders('b', 's0', 9),
    sessionBusy: yield* tx.sessionBusy('a', 's1', 0),
    candidates: yield* sequence(ids, (id) => tx.claimCandidate(id)),
    completing: yield* sequence(ids, (id) => tx.holderRow(id)),
    events: yield* tx.eventList(),
    eventsOf: yield* tx.eventListForTask(ids[4]!),
    cursor: yield* tx.eventCursor(),
    since: yield* tx.eventListSince(3, 4),
    rejections: yield* tx.rejectionList(),
    checkpoint: yield* tx.checkpointLast(ids[7]!),
    flags: yield* tx.checkpointLastFlags(ids[7]!),
    usage: yield* tx.checkpointLastUsage(ids[7]!),
    holds: yield* tx.holdList(),
    effect: yield* tx.effectByKey('k'),
    effects: yield* tx.effectList(),
    taskFailureReasons: yield* tx.taskFailureReasons(ids.at(-1)!),
    deadLetters: yield* tx.deadLetterList(),
    deadLetterTask: yield* tx.deadLetterTask(ids.at(-1)!),
    budgetLevel: yield* tx.budgetLevelGet('tokens', ''),
    budgetLevels: yield* tx.budgetLevelList(),
    held: yield* tx.reservationListHeld(ids[7]!),
    reservations: yield* tx.reservationList(),
    service: yield* tx.serviceGet('a'),
    charged: yield* sequence(ids, (id) => tx.taskServiceCharged(id)),
    hasLive: yield* tx.tenantHasLive('C', 0),
    services: yield* tx.serviceList(),
    paused: yield* tx.tenantPauseList(),
    decisions: yield* tx.admissionList(),
    signals: yield* tx.signalList(),
    readyDepth: yield* tx.taskReadyDepth(),
    taskOldestReady: yield* tx.taskOldestReady(),
    oldestEligible: yield* tx.taskOldestEligibleReady('a', now),
    recent: yield* tx.taskListRecent(5),
    ledger: yield* tx.creditList(),
    migrations: (yield* tx.migrationList()).map((row) => [row.version, row.name]),
    // These statements promise no order (SQLite's have no ORDER BY): compared as sets.
    unordered: {
      counts: sortedBy(yield* tx.taskCountsByState(), (row) => row.state),
      occupied: sortedBy(yield* tx.taskOccupiedByTenant(), (row) => row.tenant),
      holding: sortedBy(yield* tx.claimHolding(), (row) => row.id),
      taskHoldingSince: sortedBy(yield* tx.taskHoldingSince(), (row) => row.id),
      holdListStale: sortedBy(yield* tx.holdListStale(AT + 1_000), (row) => row.task_id),
    },
  };
}

function* sequence<T>(ids: readonly number[], read: (id: number) => Generator<unknown, T, unknown> | Iterator<unknown, T, unknown>) {
  const answers: T[] = [];
  for (const id of ids) answers.push(yield* read(id) as Generator<unknown, T, unknown>);
  return answers;
}

describe('every store kind answers the same', () => {
  const stores = STORE_KINDS.map((kind) => contractStore(kind));

  it('to every read of StoreTx, over one history written by the same body', async () => {
    const answers = [];
    for (const db of stores) {
      answers.push(
        await db.scratch(function* (tx) {
          yield* history(tx);
          return yield* everyRead(tx);
        }),
      );
    }
    const [first, ...rest] = answers;
    expect(first!.tasks).toHaveLength(13);
    expect(first!.unordered.holding).toHaveLength(3);
    for (const [i, answer] of rest.entries()) expect({ kind: STORE_KINDS[i + 1], ...answer }).toEqual({ kind: STORE_KINDS[i + 1], ...first });
  });
});
