import type { SqliteDatabase as Database, SqliteStatement as Statement } from './sqlite-handle.ts';
import { OPERATIONS, type OperationName } from './sql/index.ts';
import { answer as finished, installOperations, type SqlRunner } from './sql/runner.ts';
import { paramValue, type Params, type SqlValue, type Statement as Declared, type Write } from './sql/statement.ts';
import type { Step, StoreTx } from './store.ts';

/**
 * SQLite's runner of the statement catalogue (sql/). Time is always a bound parameter (`:now`), never
 * SQLite's clock, so the simulator's virtual time reaches every decision. Integer maths uses CAST
 * because better-sqlite3 binds JavaScript numbers as REAL. Every statement answers at once: better-sqlite3
 * is synchronous, so a transaction body runs to its end without yielding (store.ts), and an answer is
 * a finished step (runner.ts answer), no generator.
 */

/** The values of `params` in the order the statement's `?` slots take them (statement.ts renderSqlite); a missing one is an error. */
function bound(declared: Declared<string, unknown>, params: Params<string>): SqlValue[] {
  const order = declared.sqlite.order;
  const values = new Array<SqlValue>(order.length);
  for (let i = 0; i < order.length; i++) values[i] = paramValue(declared, params, order[i]!);
  return values;
}

/** Runs a declared statement, prepared as `statement`, and answers in its result shape. */
function answerOf<K extends string, R>(statement: Statement, declared: Declared<K, R>, params: Params<K>): R {
  const values = bound(declared, params);
  switch (declared.result) {
    case 'rows':
      return statement.all(values) as R;
    case 'one':
    case 'pluck':
      return statement.get(values) as R;
    case 'changes':
      return statement.run(values).changes as R;
    case 'inserted': {
      const written = statement.run(values);
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
  /** The savepoint's three statements, prepared on its first use (most connections never take one). */
  private steps: { readonly begin: Statement; readonly release: Statement; readonly rollback: Statement } | undefined;
  /** The catalogue's statements this connection has prepared, by their index (each on its first use). */
  private readonly prepared: (Statement | undefined)[] = [];
  /**
   * The id of the newest event the transaction in progress inserted (and kept: one inside a savepoint
   * rolled back to is forgotten), or undefined; the store reads and resets it around each transaction.
   */
  lastEventId: number | undefined;
  /** W1: the transaction in progress made a task claimable; the store reads and resets it around each transaction. */
  claimable = false;

  constructor(private readonly db: Database) {}

  txMarkClaimable(): void {
    this.claimable = true;
  }

  /** A declared statement, prepared on this connection on its first use. */
  private statement(declared: Declared<string, unknown>): Statement {
    let statement = this.prepared[declared.index];
    if (statement === undefined) {
      statement = this.db.prepare(declared.sqlite.text);
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
    return finished(map === undefined ? answer : map(answer));
  }

  /** SQLite reads nothing ahead: it pays no round trip for the read when it comes. */
  answeredAhead(): void {}

  /** SQLite reads nothing ahead. */
  recalled(): undefined {
    return undefined;
  }

  /** A write that must change exactly one row, run now: whether it did. */
  sendOne<K extends string>(declared: Write<K>, params: Params<K>): boolean {
    return this.statement(declared).run(bound(declared, params)).changes === 1;
  }

  /** A write whose answer nobody waits for: run now (SQLite pays no round trip); `settled` is told its answer. */
  send<K extends string>(declared: Write<K>, params: Params<K>): void;
  send<K extends string, R>(declared: Declared<K, R>, params: Params<K>, settled: (answer: R) => void): void;
  send<K extends string, R>(declared: Declared<K, R>, params: Params<K>, settled?: (answer: R) => void): void {
    if (settled !== undefined) settled(answerOf(this.statement(declared), declared, params));
    else this.statement(declared).run(bound(declared, params));
  }

  *txSavepoint<T>(body: () => Step<T>): Step<T> {
    const steps = (this.steps ??= {
      begin: this.db.prepare('SAVEPOINT leasehold_step'),
      release: this.db.prepare('RELEASE leasehold_step'),
      rollback: this.db.prepare('ROLLBACK TO leasehold_step'),
    });
    steps.begin.run();
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
        steps.rollback.run();
        steps.release.run();
      }
      throw error;
    }
    steps.release.run();
    return result;
  }

}

installOperations(SqliteStatements.prototype, OPERATIONS);
