/**
 * Test-only: the SQLite store behind an asynchronous driver, the way a PostgreSQL store will drive its
 * transactions. Every statement yields a promise and the driver awaits it before resuming the body, so
 * each statement is an await point; transactions on the connection are taken one at a time, as a pool
 * hands each its own connection. The contract suite runs against it (TEST_STORES, 'sqlite-yielding') to
 * prove that the queue's decisions run unchanged on a driver whose statements are asynchronous: the
 * store interface is one interface, not a synchronous one with an asynchronous fork.
 */
import type { Database as DatabaseHandle } from 'better-sqlite3';
import { SqliteStore } from '../sqlite-store.ts';
import { SqliteStatements } from '../statements.ts';
import type { Step, Store, StoreTx, TransactionBody } from '../store.ts';

/** Wraps each statement of `tx` in a generator that yields its answer as a promise and returns what the driver sends back. */
function yielding(tx: StoreTx): StoreTx {
  return new Proxy(tx, {
    get(target, name) {
      const method = Reflect.get(target, name) as (...args: unknown[]) => Step<unknown>;
      if (typeof method !== 'function') return method;
      // A savepoint only brackets the body's own statements; its generator passes their yields through.
      if (name === 'txSavepoint') return method.bind(target);
      return function* (...args: unknown[]): Step<unknown> {
        const finished = method.apply(target, args).next();
        if (finished.done !== true) throw new TypeError(`statement ${String(name)} yielded on the synchronous connection`);
        return yield Promise.resolve(finished.value);
      };
    },
  });
}

export class YieldingSqliteStore implements Store {
  readonly kind = 'sqlite-yielding';
  private readonly tx: StoreTx;
  private turn: Promise<unknown> = Promise.resolve();

  constructor(private readonly sqlite: SqliteStore) {
    this.tx = yielding(new SqliteStatements(sqlite.db));
  }

  static open(target: string | DatabaseHandle): YieldingSqliteStore {
    return new YieldingSqliteStore(SqliteStore.open(target, { busyTimeoutMs: 1_000, busyRetries: 0 }, () => 0));
  }

  write<T>(operation: string, readClock: () => number, body: TransactionBody<T>): Promise<T> {
    return this.exclusive(() => this.drive(operation, body(this.tx, this.begin(readClock)), true));
  }

  read<T>(operation: string, body: (tx: StoreTx) => Step<T>): Promise<T> {
    return this.exclusive(() => this.drive(operation, body(this.tx), false));
  }

  close(): Promise<void> {
    return this.exclusive(() => this.sqlite.close());
  }

  private begin(readClock: () => number): number {
    this.sqlite.db.exec('BEGIN IMMEDIATE');
    return readClock();
  }

  /** Runs a body to its end, awaiting every statement it yields; commits or rolls back a write. */
  private async drive<T>(_operation: string, body: Step<T>, writing: boolean): Promise<T> {
    const db = this.sqlite.db;
    try {
      let step = body.next();
      while (step.done !== true) step = body.next(await step.value);
      if (writing) db.exec('COMMIT');
      return step.value;
    } catch (error) {
      if (writing && db.inTransaction) db.exec('ROLLBACK');
      throw error;
    }
  }

  /** One transaction at a time on the connection: the next starts once the one before has settled. */
  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const next = this.turn.then(work);
    this.turn = next.catch(() => undefined);
    return next;
  }
}
