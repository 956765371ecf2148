/**
 * The writes of a task's row (Q1-Q3, Q8): its insert, and the state writes, the only statements of the
 * store that write tasks.state (transition() is taskWriteState's only caller). No RETURNING on the hot
 * writes: SQLite buffers RETURNING rows in an ephemeral table, which cost more than the UPDATE; the
 * caller read the row in this transaction and computes the new values. Moves that are not the holder's
 * read rows from indexes that do not carry event_seq (the holding index), so they bump it in SQL; they
 * are off the hot path, where RETURNING's cost matters little.
 *
 * Ids are one more than the largest (SQLite's rowid is taken the same way: tasks are never deleted, and
 * the table is not AUTOINCREMENT, so a refused insert burns none), so the ids are the same on both.
 */
import { HOLD_IS_OPEN_SQL, HOLD_NOT_OPEN_SQL, HOLD_OPEN } from '../../queue/holds.ts';
import type { HoldClosure, NewTask, StateWrite } from '../store.ts';
import { FENCE } from './holders.ts';
import { answer, type Operations } from './runner.ts';
import { RUN_SIGNAL, signalBump } from './signals.ts';
import { read, write } from './statement.ts';

/** R4: the hold's columns, closed (at `closedAt`, a parameter) in the statement that ends the run. */
const closedHoldColumns = (closedAt: string) =>
  `hold_state = :holdState, hold_charged_credits = :charged, hold_usage = :usage, hold_reason = :holdReason, hold_closed_at = ${closedAt}`;
const HOLD_PARAMS = ['holdState', 'charged', 'usage', 'holdReason'] as const;

const NEW_TASK_PARAMS = ['tenant', 'topic', 'version', 'inputHash', 'priority', 'inputJson', 'store', 'tier', 'deadline', 'contextJson', 'state', 'now', 'holdCredits', 'needsJson', 'critical'] as const;
const NEXT_ID = '(SELECT COALESCE(MAX(id), 0) + 1 FROM tasks)';

/** The columns and values of a new task, its id given by `id` (a parameter or NEXT_ID), its hold open. */
const insertNew = (id: string) => `INSERT INTO tasks (tenant, topic, version, input_hash, priority, input, store, tier, deadline, context,
                     state, enqueued_at, not_before, event_seq, hold_credits, hold_state, needs, critical, id)
                   VALUES (:tenant, :topic, :version, :inputHash, :priority, :inputJson, :store, :tier, :deadline, :contextJson,
                     :state, :now, :now, 1, :holdCredits, '${HOLD_OPEN}', :needsJson, :critical, ${id})
                   ON CONFLICT (tenant, topic, version) DO NOTHING`;

/** Q1: a new task, its hold open; its id, or undefined when its key is taken. */
export const taskInsert = write('taskInsert', NEW_TASK_PARAMS).pluck<number>(`${insertNew(NEXT_ID)}
                   RETURNING id`);

/**
 * What an enqueue's insert would take, read on PostgreSQL with the queue lock in its first round trip
 * (ReadsFirst.enqueue): the next id and whether the key is taken. Under the lock both hold until the
 * transaction's first write, so an insert of a free key can be sent without waiting for its id
 * (taskInsertAs). SQLite reads nothing ahead and never runs it.
 */
export const taskInsertSlot = read('taskInsertSlot', ['tenant', 'topic', 'version']).one<{ next_id: number; taken: boolean }>(
  `SELECT COALESCE(MAX(id), 0) + 1 AS next_id,
                   EXISTS (SELECT 1 FROM tasks AS k WHERE k.tenant = :tenant AND k.topic = :topic AND k.version = :version) AS taken
                 FROM tasks`,
);

/** taskInsert with the id read ahead (taskInsertSlot) and no answer awaited: sent as a write that must add its row. */
export const taskInsertAs = write('taskInsertAs', [...NEW_TASK_PARAMS, 'id']).changes(insertNew(':id'));

/**
 * Q2: a late version is stored ended, its hold released in the same insert (the schema allows no ended
 * task that still holds).
 */
export const taskInsertEnded = write('taskInsertEnded', [...NEW_TASK_PARAMS, ...HOLD_PARAMS]).pluck<number>(
  `INSERT INTO tasks (tenant, topic, version, input_hash, priority, input, store, tier, deadline, context,
                          state, enqueued_at, not_before, finished_at, event_seq, hold_credits,
                          hold_state, hold_charged_credits, hold_usage, hold_reason, hold_closed_at, needs, critical, id)
                        VALUES (:tenant, :topic, :version, :inputHash, :priority, :inputJson, :store, :tier, :deadline, :contextJson,
                          :state, :now, :now, :now, 1, :holdCredits, :holdState, :charged, :usage, :holdReason, :now, :needsJson, :critical, ${NEXT_ID})
                        ON CONFLICT (tenant, topic, version) DO NOTHING
                        RETURNING id`,
);

/** Q6: the claim of a ready task, in the generation it was read in. */
export const taskClaim = write('taskClaim', ['workerId', 'generation', 'leaseUntil', 'now', 'eventSeq', 'id', 'previousGeneration']).changes(
  `UPDATE tasks SET state = 'running', worker_id = :workerId, generation = :generation,
                    attempts = attempts + 1, deliveries = deliveries + 1, lease_until = :leaseUntil,
                    claimed_at = :now, first_claimed_at = COALESCE(first_claimed_at, :now),
                    queue_wait_ms = :now - enqueued_at, event_seq = :eventSeq, deferred = NULL
                  WHERE id = :id AND state = 'ready' AND generation = :previousGeneration`,
);

const FENCE_PARAMS = ['id', 'workerId', 'generation', 'now'] as const;

/** Q8: a holder's completion, its hold settled or released in the same write. */
export const holderComplete = write('holderComplete', ['result', ...FENCE_PARAMS, 'eventSeq', 'outcome', ...HOLD_PARAMS]).changes(
  `UPDATE tasks SET state = 'done', result = :result, finished_at = :now, run_ms = :now - claimed_at,
                       lease_until = NULL, event_seq = :eventSeq, outcome = :outcome, ${closedHoldColumns(':now')}
                     WHERE ${FENCE} AND ${HOLD_IS_OPEN_SQL}`,
);

/** R4: a run whose hold was released while it sat uncertain (holdTtlMs) ends without a settlement. */
export const holderCompleteHoldClosed = write('holderCompleteHoldClosed', ['result', ...FENCE_PARAMS, 'eventSeq', 'outcome']).changes(
  `UPDATE tasks SET state = 'done', result = :result, finished_at = :now, run_ms = :now - claimed_at,
                                 lease_until = NULL, event_seq = :eventSeq, outcome = :outcome
                               WHERE ${FENCE} AND ${HOLD_NOT_OPEN_SQL}`,
);

const LEAVE_PARAMS = ['state', 'outcome', 'errorClass', 'errorMessage', 'notBefore', 'finishedAt', 'eventSeq'] as const;

/** Q8: a holder's run leaves running (a failure, a retry, a cancel, an interrupt), its hold left as it is: a retry keeps it open. */
export const holderLeave = write('holderLeave', [...LEAVE_PARAMS, ...FENCE_PARAMS]).changes(
  `UPDATE tasks SET state = :state, outcome = :outcome, error_class = :errorClass, error_message = :errorMessage,
                       not_before = :notBefore, finished_at = :finishedAt, run_ms = :now - claimed_at,
                       lease_until = NULL, event_seq = :eventSeq
                     WHERE ${FENCE} AND (${HOLD_NOT_OPEN_SQL} OR :state = 'ready')`,
);

export const holderLeaveClosingHold = write('holderLeaveClosingHold', [...LEAVE_PARAMS, ...FENCE_PARAMS, ...HOLD_PARAMS]).changes(
  `UPDATE tasks SET state = :state, outcome = :outcome, error_class = :errorClass, error_message = :errorMessage,
                                  not_before = :notBefore, finished_at = :finishedAt, run_ms = :now - claimed_at,
                                  lease_until = NULL, event_seq = :eventSeq, ${closedHoldColumns(':now')}
                                WHERE ${FENCE} AND ${HOLD_IS_OPEN_SQL}`,
);

const MOVE_PARAMS = ['state', 'outcome', 'finishedAt', 'id', 'fromState', 'generation'] as const;

/** A move that is not the holder's, from the state and generation it was read in; its new event_seq. */
export const taskMove = write('taskMove', [...MOVE_PARAMS, 'keepLease']).pluck<number>(
  `UPDATE tasks SET state = :state, outcome = COALESCE(:outcome, outcome), finished_at = :finishedAt,
                   lease_until = CASE WHEN CAST(:keepLease AS INTEGER) = 1 THEN lease_until ELSE NULL END, event_seq = event_seq + 1
                 WHERE id = :id AND state = :fromState AND generation = :generation
                 RETURNING event_seq`,
);

export const taskMoveClosingHold = write('taskMoveClosingHold', [...MOVE_PARAMS, ...HOLD_PARAMS]).pluck<number>(
  `UPDATE tasks SET state = :state, outcome = COALESCE(:outcome, outcome), finished_at = :finishedAt,
                              lease_until = NULL, event_seq = event_seq + 1, ${closedHoldColumns(':finishedAt')}
                            WHERE id = :id AND state = :fromState AND generation = :generation AND ${HOLD_IS_OPEN_SQL}
                            RETURNING event_seq`,
);

function holdParams(hold: HoldClosure) {
  return { holdState: hold.state, charged: hold.charged, usage: hold.usage, holdReason: hold.reason };
}

export const taskWriteOperations = {
  taskCreate(task: NewTask) {
    const { hold, ...columns } = task;
    if (hold !== null) return this.run(taskInsertEnded, { ...columns, ...holdParams(hold) });
    // On PostgreSQL, the key read free with the lock and nothing written since: the insert waits with
    // the next statement, and its id is the one read ahead.
    const slot = this.recalled(taskInsertSlot, columns)?.answer;
    if (slot !== undefined && slot.taken === false) {
      const id = Number(slot.next_id);
      this.sendOne(taskInsertAs, { ...columns, id }, () => `the insert of task ${id}`);
      return answer(id);
    }
    return this.run(taskInsert, columns);
  },

  /**
   * The only statement of the store that writes tasks.state; transition() is its only caller. A claim's
   * and a holder's write are decided on the row this transaction read under the queue lock, so they
   * must change it (sendOne): a miss answers undefined on SQLite, and fails the transaction as an
   * InvariantError on PostgreSQL, where the write rides with the next statement, as transition() would.
   */
  taskWriteState(change: StateWrite) {
    if (change.kind === 'claim') {
      if (!this.sendOne(taskClaim, change, () => `task ${change.id}'s claim`)) return answer(undefined);
      // A5: every claim is a RUN decision, counted in the claim's own transaction.
      this.send(signalBump, { name: RUN_SIGNAL, delta: 1 });
      return answer(change.eventSeq);
    }
    if (change.kind === 'holder') {
      const { fence, hold } = change;
      const what = () => `task ${fence.id}'s ${change.to === 'done' ? 'completion' : `move to ${change.to}`} by its holder`;
      let written: boolean;
      if (change.to === 'done') {
        // The hot path of every run's end: one object, no spreads (they cost a completion about a
        // microsecond). The hold's values are null when it is closed already; that statement takes none of them.
        const params = {
          id: fence.id,
          workerId: fence.workerId,
          generation: fence.generation,
          now: fence.now,
          result: change.result,
          eventSeq: change.eventSeq,
          outcome: change.outcome,
          holdState: hold?.state ?? null,
          charged: hold?.charged ?? null,
          usage: hold?.usage ?? null,
          holdReason: hold?.reason ?? null,
        };
        written = this.sendOne(hold === null ? holderCompleteHoldClosed : holderComplete, params, what);
      } else {
        const params = {
          ...fence,
          state: change.to,
          outcome: change.outcome,
          errorClass: change.errorClass,
          errorMessage: change.errorMessage,
          notBefore: change.notBefore,
          finishedAt: change.finishedAt,
          eventSeq: change.eventSeq,
        };
        written = hold === null ? this.sendOne(holderLeave, params, what) : this.sendOne(holderLeaveClosingHold, { ...params, ...holdParams(hold) }, what);
      }
      return answer(written ? change.eventSeq : undefined);
    }
    const params = { id: change.id, fromState: change.from, generation: change.generation, state: change.to, outcome: change.outcome, finishedAt: change.finishedAt };
    return change.hold === null
      ? this.run(taskMove, { ...params, keepLease: change.keepLease ? 1 : 0 })
      : this.run(taskMoveClosingHold, { ...params, ...holdParams(change.hold) });
  },
} satisfies Operations<'taskCreate' | 'taskWriteState'>;
