/**
 * How the store's operations run declared statements (statement.ts) without knowing the dialect: a
 * StoreTx method of a table file is written once, over `SqlRunner`, and both stores' statement classes
 * take it as their own (installOperations). SqliteStatements runs a statement at once and answers with a
 * finished step; PgStatements yields the statement's round trip (with the writes waiting before it), or
 * answers from what was read ahead.
 */
import type { Step, StoreTx } from '../store.ts';
import type { Params, Statement, Write } from './statement.ts';

/** The generic runner of one dialect: executes any declared statement in the transaction in progress. */
export interface SqlRunner {
  /** Runs the statement and answers in its result shape, or as `map` makes of it. */
  run<K extends string, R>(statement: Statement<K, R>, params: Params<K>): Step<R>;
  run<K extends string, R, M>(statement: Statement<K, R>, params: Params<K>, map: (answer: R) => M): Step<M>;
  /**
   * A write whose answer nobody waits for. SQLite runs it now; PostgreSQL sends it with the
   * transaction's next round trip or its COMMIT, and a failure surfaces there. It yields nothing.
   */
  send<K extends string>(statement: Write<K>, params: Params<K>): void;
  /** The same, and `settled` is told the write's answer (in its result shape) once it has run. */
  send<K extends string, R>(statement: Statement<K, R>, params: Params<K>, settled: (answer: R) => void): void;
  /**
   * A write decided on a row the transaction read under the queue lock, which must change exactly that
   * row. SQLite runs it now and answers whether it changed one row. PostgreSQL sends it with the next
   * round trip or COMMIT as a statement that fails its batch when it changes none (an InvariantError
   * naming `what`, as transition() raises for a write that misses), and answers true.
   */
  sendOne<K extends string>(statement: Write<K>, params: Params<K>, what: () => string): boolean;
  /**
   * The statement's answer for `params` if it was read ahead and still holds (`{ answer }`), without
   * running it: PostgreSQL forgets it once used; SQLite reads nothing ahead, and answers undefined.
   */
  recalled<K extends string, R>(statement: Statement<K, R>, params: Params<K>): { answer: R } | undefined;
  /**
   * Tells the runner what `statement` answers for `params`, read with another statement: PostgreSQL
   * keeps it, and answers the statement's call from it until the transaction writes anything; SQLite,
   * which pays no round trip, reads nothing ahead and ignores it.
   */
  answeredAhead<K extends string, R>(statement: Statement<K, R>, params: Params<K>, answer: R): void;
  /**
   * The id of the newest event the transaction in progress inserted and kept (a savepoint rolled back
   * to forgets its own), or undefined: the store reads it after COMMIT to know its event cursor.
   */
  lastEventId: number | undefined;
}

/** The StoreTx methods `M`, written over a runner: each with StoreTx's own signature. */
export type Operations<M extends keyof StoreTx> = {
  [N in M]: StoreTx[N] extends (...args: infer A) => infer R ? (this: SqlRunner, ...args: A) => R : never;
};

/** A step that is already finished with no answer: what an operation that only sent its writes returns. */
export const NOTHING: Step<void> = {
  next: () => ({ done: true, value: undefined }),
  [Symbol.iterator]() {
    return NOTHING;
  },
};

/**
 * A step that is already finished with `value`: what an operation answers without running anything.
 * One iterator is reused for every answer, as SqliteStatements' own are: a body consumes each step where
 * it is made (`yield* tx.operation(...)`) before it makes the next.
 */
export function answer<T>(value: T): Step<T> {
  answered.value = value;
  return finished as Step<T>;
}
const answered: IteratorReturnResult<unknown> = { done: true, value: undefined };
const finished: Step<unknown> = {
  next: () => answered,
  [Symbol.iterator]: () => finished,
};

/**
 * Makes `operations` methods of a statement class (its prototype), as if written in it: the class
 * declares them by merging `Pick<StoreTx, ...>` into its interface. A name the class defines already is
 * an error: an operation moves into a table file, it is not written twice.
 */
export function installOperations(prototype: object, operations: Readonly<Record<string, unknown>>): void {
  for (const [name, method] of Object.entries(operations)) {
    if (Object.prototype.hasOwnProperty.call(prototype, name)) throw new TypeError(`${name} is defined by the statement class and by a table file`);
    Object.defineProperty(prototype, name, { value: method, writable: true, configurable: true, enumerable: false });
  }
}
