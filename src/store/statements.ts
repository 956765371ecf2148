import type { SqliteDatabase as Database, SqliteStatement as Statement } from './sqlite-handle.ts';
import { HOLD_IS_OPEN_SQL, HOLD_NOT_OPEN_SQL, HOLD_OPEN } from '../queue/holds.ts';
import { OPERATIONS, type OperationName } from './sql/index.ts';
import { FENCE } from './sql/holders.ts';
import { RUN_SIGNAL, signalBump } from './sql/signals.ts';
import { installOperations, type SqlRunner } from './sql/runner.ts';
import type { Params, Statement as Declared, Write } from './sql/statement.ts';
import type { HoldClosure, NewTask, StateWrite, Step, StoreTx } from './store.ts';

/**
 * SQLite's statements of the store interface, prepared once when the store opens. Time is always a
 * bound parameter (`:now`), never SQLite's clock, so the simulator's virtual time reaches every
 * decision. Integer maths uses CAST because better-sqlite3 binds JavaScript numbers as REAL. Every
 * method is a generator that returns at once: better-sqlite3 is synchronous, so a transaction body
 * runs to its end without yielding (store.ts).
 */

/** R4: the hold's columns, closed in the statement that ends the run. */
const CLOSE_HOLD = `hold_state = :holdState, hold_charged_credits = :charged, hold_usage = :usage, hold_reason = :holdReason, hold_closed_at = :now`;

/**
 * Each statement is prepared once, on its first use: a connection that never needs one (most open
 * only for a few calls, and a simulated run opens one per seed) does not pay for it.
 */
function lazily<T extends Record<string, () => Statement>>(makers: T): { readonly [K in keyof T]: Statement } {
  const statements = {} as Record<string, Statement>;
  for (const [name, make] of Object.entries(makers)) {
    Object.defineProperty(statements, name, {
      configurable: true,
      enumerable: true,
      get() {
        const statement = make();
        Object.defineProperty(statements, name, { value: statement, enumerable: true });
        return statement;
      },
    });
  }
  return statements as { readonly [K in keyof T]: Statement };
}

function prepare(db: Database) {
  const p = (sql: string, pluck?: 'pluck') => (): Statement => (pluck === undefined ? db.prepare(sql) : db.prepare(sql).pluck());
  return lazily({
    // ---- enqueue (Q1-Q3)
    insertTask: p(`INSERT INTO tasks (tenant, topic, version, input_hash, priority, input, store, tier, deadline, context,
                     state, enqueued_at, not_before, event_seq, hold_credits, hold_state, needs, critical)
                   VALUES (:tenant, :topic, :version, :inputHash, :priority, :inputJson, :store, :tier, :deadline, :contextJson,
                     :state, :now, :now, 1, :holdCredits, '${HOLD_OPEN}', :needsJson, :critical)
                   ON CONFLICT (tenant, topic, version) DO NOTHING
                   RETURNING id`, 'pluck'),
    // Q2: a late version is stored ended, its hold released in the same insert (the schema allows no
    // ended task that still holds).
    insertEndedTask: p(`INSERT INTO tasks (tenant, topic, version, input_hash, priority, input, store, tier, deadline, context,
                          state, enqueued_at, not_before, finished_at, event_seq, hold_credits,
                          hold_state, hold_charged_credits, hold_usage, hold_reason, hold_closed_at, needs, critical)
                        VALUES (:tenant, :topic, :version, :inputHash, :priority, :inputJson, :store, :tier, :deadline, :contextJson,
                          :state, :now, :now, :now, 1, :holdCredits, :holdState, :charged, :usage, :holdReason, :now, :needsJson, :critical)
                        ON CONFLICT (tenant, topic, version) DO NOTHING
                        RETURNING id`, 'pluck'),

    // ---- the state writes: only writeState() below runs these.
    // No RETURNING on the hot writes: SQLite buffers RETURNING rows in an ephemeral table, which cost
    // more than the UPDATE. The caller read the row in this transaction and computes the new values.
    claimTask: p(`UPDATE tasks SET state = 'running', worker_id = :workerId, generation = :generation,
                    attempts = attempts + 1, deliveries = deliveries + 1, lease_until = :leaseUntil,
                    claimed_at = :now, first_claimed_at = COALESCE(first_claimed_at, :now),
                    queue_wait_ms = :now - enqueued_at, event_seq = :eventSeq, deferred = NULL
                  WHERE id = :id AND state = 'ready' AND generation = :previousGeneration`),
    completeTask: p(`UPDATE tasks SET state = 'done', result = :result, finished_at = :now, run_ms = :now - claimed_at,
                       lease_until = NULL, event_seq = :eventSeq, outcome = :outcome, ${CLOSE_HOLD}
                     WHERE ${FENCE} AND ${HOLD_IS_OPEN_SQL}`),
    // R4: a run whose hold was released while it sat uncertain (holdTtlMs) ends without a settlement.
    completeTaskHoldClosed: p(`UPDATE tasks SET state = 'done', result = :result, finished_at = :now, run_ms = :now - claimed_at,
                                 lease_until = NULL, event_seq = :eventSeq, outcome = :outcome
                               WHERE ${FENCE} AND ${HOLD_NOT_OPEN_SQL}`),
    leaveRunning: p(`UPDATE tasks SET state = :state, outcome = :outcome, error_class = :errorClass, error_message = :errorMessage,
                       not_before = :notBefore, finished_at = :finishedAt, run_ms = :now - claimed_at,
                       lease_until = NULL, event_seq = :eventSeq
                     WHERE ${FENCE} AND (hold_state IS NULL OR hold_state <> '${HOLD_OPEN}' OR :state = 'ready')`),
    leaveRunningClosingHold: p(`UPDATE tasks SET state = :state, outcome = :outcome, error_class = :errorClass, error_message = :errorMessage,
                                  not_before = :notBefore, finished_at = :finishedAt, run_ms = :now - claimed_at,
                                  lease_until = NULL, event_seq = :eventSeq, ${CLOSE_HOLD}
                                WHERE ${FENCE} AND ${HOLD_IS_OPEN_SQL}`),
    // Moves that are not the holder's read rows from indexes that do not carry event_seq (the holding
    // index), so these bump it in SQL; they are off the hot path, where RETURNING's cost matters little.
    moveTask: p(`UPDATE tasks SET state = :state, outcome = COALESCE(:outcome, outcome), finished_at = :finishedAt,
                   lease_until = CASE WHEN :keepLease = 1 THEN lease_until ELSE NULL END, event_seq = event_seq + 1
                 WHERE id = :id AND state = :fromState AND generation = :generation
                 RETURNING event_seq`, 'pluck'),
    moveTaskClosingHold: p(`UPDATE tasks SET state = :state, outcome = COALESCE(:outcome, outcome), finished_at = :finishedAt,
                              lease_until = NULL, event_seq = event_seq + 1, ${CLOSE_HOLD}
                            WHERE id = :id AND state = :fromState AND generation = :generation AND ${HOLD_IS_OPEN_SQL}
                            RETURNING event_seq`, 'pluck'),

    savepoint: p('SAVEPOINT leasehold_step'),
    releaseSavepoint: p('RELEASE leasehold_step'),
    rollbackToSavepoint: p('ROLLBACK TO leasehold_step'),
  });
}

type Prepared = ReturnType<typeof prepare>;

function holdParameters(hold: HoldClosure) {
  return { holdState: hold.state, charged: hold.charged, usage: hold.usage, holdReason: hold.reason };
}

/**
 * A statement's answer as a finished step. better-sqlite3 answers at once, so a step needs no generator:
 * one iterator, already done, is reused for every answer. That is safe because a synchronous body
 * consumes each step where it is made (`yield* tx.statement(...)`) before it makes the next.
 */
const answer: IteratorReturnResult<unknown> = { done: true, value: undefined };
const finished: Step<unknown> = {
  next: () => answer,
  [Symbol.iterator]: () => finished,
};
function done<T>(value: T): Step<T> {
  answer.value = value;
  return finished as Step<T>;
}

/** Runs a declared statement, prepared as `statement`, and answers in its result shape. */
function answerOf<K extends string, R>(statement: Statement, declared: Declared<K, R>, params: Params<K>): R {
  // better-sqlite3 refuses a parameters object for a statement that has none.
  const none = declared.params.length === 0;
  switch (declared.result) {
    case 'rows':
      return (none ? statement.all() : statement.all(params)) as R;
    case 'one':
    case 'pluck':
      return (none ? statement.get() : statement.get(params)) as R;
    case 'changes':
      return (none ? statement.run() : statement.run(params)).changes as R;
    case 'inserted': {
      const written = none ? statement.run() : statement.run(params);
      return (written.changes === 0 ? undefined : Number(written.lastInsertRowid)) as R;
    }
  }
}

/**
 * The statements of the store interface over one better-sqlite3 connection: the catalogue's operations
 * (sql/index.ts, installed below) over its generic runner (run, send), and the methods not moved there yet.
 */
export interface SqliteStatements extends Pick<StoreTx, OperationName> {}
export class SqliteStatements implements StoreTx, SqlRunner {
  private readonly s: Prepared;
  /** The catalogue's statements this connection has prepared, by their index (each on its first use). */
  private readonly prepared: (Statement | undefined)[] = [];
  /**
   * The id of the newest event the transaction in progress inserted (and kept: one inside a savepoint
   * rolled back to is forgotten), or undefined; the store reads and resets it around each transaction.
   */
  lastEventId: number | undefined;
  /** W1: the transaction in progress made a task claimable; the store reads and resets it around each transaction. */
  claimable = false;

  constructor(private readonly db: Database) {
    this.s = prepare(db);
  }

  markClaimable(): void {
    this.claimable = true;
  }

  /** A declared statement, prepared on this connection on its first use. */
  private statement(declared: Declared<string, unknown>): Statement {
    let statement = this.prepared[declared.index];
    if (statement === undefined) {
      statement = this.db.prepare(declared.sqlite);
      if (declared.result === 'pluck') statement = statement.pluck();
      this.prepared[declared.index] = statement;
    }
    return statement;
  }

  /** The generic runner (sql/runner.ts): any declared statement, at once; its answer as a finished step. */
  run<K extends string, R>(declared: Declared<K, R>, params: Params<K>): Step<R>;
  run<K extends string, R, M>(declared: Declared<K, R>, params: Params<K>, map: (answer: R) => M): Step<M>;
  run<K extends string, R, M>(declared: Declared<K, R>, params: Params<K>, map?: (answer: R) => M): Step<R | M> {
    const answer = answerOf(this.statement(declared), declared, params);
    return done(map === undefined ? answer : map(answer));
  }

  /** SQLite reads nothing ahead: it pays no round trip for the read when it comes. */
  answeredAhead(): void {}

  /** A write whose answer nobody waits for: run now (SQLite pays no round trip); `settled` is told its answer. */
  send<K extends string>(declared: Write<K>, params: Params<K>): void;
  send<K extends string, R>(declared: Declared<K, R>, params: Params<K>, settled: (answer: R) => void): void;
  send<K extends string, R>(declared: Declared<K, R>, params: Params<K>, settled?: (answer: R) => void): void {
    if (settled !== undefined) settled(answerOf(this.statement(declared), declared, params));
    else if (declared.params.length === 0) this.statement(declared).run();
    else this.statement(declared).run(params);
  }

  *savepoint<T>(body: () => Step<T>): Step<T> {
    this.s.savepoint.run();
    const eventsBefore = this.lastEventId;
    let result: T;
    try {
      result = yield* body();
    } catch (error) {
      this.lastEventId = eventsBefore;
      // A full disk or an I/O error may make SQLite roll the whole transaction back on its own, and the
      // savepoint with it: nothing is left to undo, and the error is what the caller must see (a
      // ROLLBACK TO would throw "no such savepoint" in its place).
      if (this.db.inTransaction) {
        this.s.rollbackToSavepoint.run();
        this.s.releaseSavepoint.run();
      }
      throw error;
    }
    this.s.releaseSavepoint.run();
    return result;
  }

  insertTask(task: NewTask): Step<number | undefined> {
    const { hold, ...columns } = task;
    if (hold === null) return done(this.s.insertTask.get(columns) as number | undefined);
    return done(this.s.insertEndedTask.get({ ...columns, ...holdParameters(hold) }) as number | undefined);
  }

  /** The only code of this store that writes tasks.state; transition() is its only caller. */
  writeState(change: StateWrite): Step<number | undefined> {
    return done(this.stateWrite(change));
  }

  private stateWrite(change: StateWrite): number | undefined {
    const { s } = this;
    if (change.kind === 'claim') {
      const { kind: _kind, ...parameters } = change;
      if (s.claimTask.run(parameters).changes !== 1) return undefined;
      // A5: every claim is a RUN decision, counted in the claim's own transaction.
      this.send(signalBump, { name: RUN_SIGNAL, delta: 1 });
      return change.eventSeq;
    }
    if (change.kind === 'holder') {
      const { fence, hold } = change;
      let written;
      if (change.to === 'done') {
        const parameters = { ...fence, result: change.result, eventSeq: change.eventSeq, outcome: change.outcome };
        written = hold === null ? s.completeTaskHoldClosed.run(parameters) : s.completeTask.run({ ...parameters, ...holdParameters(hold) });
      } else {
        const parameters = {
          ...fence,
          state: change.to,
          outcome: change.outcome,
          errorClass: change.errorClass,
          errorMessage: change.errorMessage,
          notBefore: change.notBefore,
          finishedAt: change.finishedAt,
          eventSeq: change.eventSeq,
        };
        written = hold === null ? s.leaveRunning.run(parameters) : s.leaveRunningClosingHold.run({ ...parameters, ...holdParameters(hold) });
      }
      return written.changes === 1 ? change.eventSeq : undefined;
    }
    const parameters = {
      id: change.id,
      fromState: change.from,
      generation: change.generation,
      state: change.to,
      outcome: change.outcome,
      finishedAt: change.finishedAt,
    };
    return (
      change.hold === null
        ? s.moveTask.get({ ...parameters, keepLease: change.keepLease ? 1 : 0 })
        : s.moveTaskClosingHold.get({ ...parameters, ...holdParameters(change.hold), now: change.finishedAt })
    ) as number | undefined;
  }
}

installOperations(SqliteStatements.prototype, OPERATIONS);
