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
    yield* tx.insertEvent(id, 1, 'enqueued', AT + i, `{"to":"ready","i":${i}}`, null, null);
  }
  yield* tx.adjustLive(12);
  for (const [i, id] of [ids[0]!, ids[4]!, ids[5]!, ids[7]!].entries()) {
    yield* claim(tx, id, { workerId: `w${i}`, leaseUntil: AT + 100 + ((i * 13) % 4) * 10, now: AT + 10 + i });
    yield* tx.insertEvent(id, 2, 'claimed', AT + 10 + i, '{"from":"ready","to":"running"}', `w${i}`, 1);
  }
  yield* makeUncertain(tx, ids[5]!);
  yield* tx.requestCancel(ids[4]!);
  const done = yield* endByHolder(tx, { id: ids[0]!, workerId: 'w0', generation: 1, now: AT + 20 }, 'done', { hold: { state: 'settled', charged: 3, usage: '{"tokens":3}', reason: 'checkpointed' } });
  if (done === undefined) throw new Error('history: the completion missed');
  yield* tx.insertCredit(ids[0]!, 'b', 'charge', 3, AT + 20);
  yield* tx.insertCredit(ids[0]!, 'b', 'release', 7, AT + 20);
  const failed = yield* failedTask(tx, { tenant: 'a', topic: 'failing', inputHash: 'hf', now: AT + 30 });
  yield* tx.insertDeadLetter(failed, 'exhausted', '[{"type":"failed"}]', AT + 31, 10);
  yield* tx.insertCheckpoint({ id: ids[7]!, generation: 1, kind: 'A', step: 1, state: '{}', usage: '{"tokens":1}', now: AT + 40, eventSeq: 3, requeueSafe: 1 });
  yield* tx.insertEffect({ requestKey: 'k', id: ids[7]!, tenant: 'a', action: 'mail', generation: 1, result: '"ok"', now: AT + 41 });
  yield* tx.writeBudgetLevel('tokens', '', 9, AT);
  yield* tx.insertReservation({ taskId: ids[7]!, generation: 1, budget: 'tokens', scope: '', reserved: 5, baseline: 0, at: AT });
  yield* tx.addService('a', 4);
  yield* tx.addServiceCharged(ids[7]!, 4);
  yield* tx.pauseTenant('C', 'manual', AT);
  yield* tx.insertAdmission({ at: AT, action: 'PAUSE', reason: 'manual', tenant: 'C', task_id: null, retry_at: null, budget: null });
  yield* tx.deferTask(ids[2]!, 'budget:tokens');
  yield* tx.insertRejection('a', 'late', 1, 'capacity', AT + 50);
}

/** Every read of StoreTx over the history (the reads that take arguments, with a few of them). */
function* everyRead(tx: StoreTx) {
  const tasks = yield* tx.allTasks();
  const ids = tasks.map((task) => task.id);
  const now = AT + 20;
  return {
    tasks,
    byKey: yield* tx.taskByKey('a', 's1', 1),
    forTenant: yield* tx.tasksForTenant('a'),
    inState: { ready: yield* tx.tasksInState('ready'), running: yield* tx.tasksInState('running'), uncertain: yield* tx.tasksInState('uncertain'), done: yield* tx.tasksInState('done') },
    enqueuedBetween: yield* tx.tasksEnqueuedBetween(AT, AT + 3),
    latest: yield* tx.latestVersionOfTopic('a', 's1'),
    newer: yield* tx.newerVersionExists('a', 's1', 1),
    older: yield* tx.olderUnstartedVersions('b', 's0', 9),
    live: yield* tx.liveCount(),
    overdue: yield* tx.overdueLeases(AT + 130),
    anyReady: yield* tx.anyReady(),
    firstReady: yield* tx.firstReadyTenant(),
    nextReady: yield* tx.nextReadyTenant('C'),
    levelHead: yield* tx.levelHead({ tenant: 'a', maxPriority: 30, minPriority: 0, now }),
    readyHeads: yield* tx.readyHeads(now),
    levelNext: yield* tx.levelNext({ tenant: 'a', priority: 0, enqueuedAt: AT, id: 0, now }),
    olderHolders: yield* tx.olderSessionHolders('b', 's0', 9),
    sessionBusy: yield* tx.sessionBusy('a', 's1', 0),
    candidates: yield* sequence(ids, (id) => tx.candidateById(id)),
    completing: yield* sequence(ids, (id) => tx.completingRow(id)),
    events: yield* tx.allEvents(),
    eventsOf: yield* tx.eventsForTask(ids[4]!),
    cursor: yield* tx.eventCursor(),
    since: yield* tx.eventsSince(3, 4),
    rejections: yield* tx.rejections(),
    checkpoint: yield* tx.lastCheckpoint(ids[7]!),
    flags: yield* tx.lastCheckpointFlags(ids[7]!),
    usage: yield* tx.lastCheckpointUsage(ids[7]!),
    holds: yield* tx.holds(),
    effect: yield* tx.effectByKey('k'),
    effects: yield* tx.effects(),
    failureReasons: yield* tx.failureReasons(ids.at(-1)!),
    deadLetters: yield* tx.deadLetters(),
    deadLetterTask: yield* tx.deadLetterTask(ids.at(-1)!),
    budgetLevel: yield* tx.budgetLevel('tokens', ''),
    budgetLevels: yield* tx.budgetLevels(),
    held: yield* tx.heldReservations(ids[7]!),
    reservations: yield* tx.reservations(),
    service: yield* tx.serviceOf('a'),
    charged: yield* sequence(ids, (id) => tx.serviceCharged(id)),
    hasLive: yield* tx.tenantHasLive('C', 0),
    services: yield* tx.tenantServices(),
    paused: yield* tx.pausedTenants(),
    decisions: yield* tx.admissionDecisions(),
    signals: yield* tx.signalCounters(),
    readyDepth: yield* tx.readyDepth(),
    oldestReady: yield* tx.oldestReady(),
    oldestEligible: yield* tx.oldestEligibleReady('a', now),
    recent: yield* tx.recentTasks(5),
    ledger: yield* tx.creditLedger(),
    migrations: (yield* tx.schemaMigrations()).map((row) => [row.version, row.name]),
    // These statements promise no order (SQLite's have no ORDER BY): compared as sets.
    unordered: {
      counts: sortedBy(yield* tx.countsByState(), (row) => row.state),
      occupied: sortedBy(yield* tx.occupiedByTenant(), (row) => row.tenant),
      holding: sortedBy(yield* tx.holding(), (row) => row.id),
      holdingSince: sortedBy(yield* tx.holdingSince(), (row) => row.id),
      staleHolds: sortedBy(yield* tx.staleHolds(AT + 1_000), (row) => row.task_id),
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
