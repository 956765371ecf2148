/**
 * The SQL floor of a simulated run: how long the SQLite statements a run issued take when they run
 * alone, with none of the simulator, worker, history or checker work around them. It bounds the
 * simulator's speed from below for this core: however lean the JavaScript became, a seed cannot take
 * less than the SQL it makes the core run (SPEC: src/ is exactly what the simulator runs).
 *
 * recordSqlCalls() runs a function while every call of a better-sqlite3 statement (get, run, all,
 * iterate) and every `exec` is recorded in order: the database it went to, the SQL, the method and a
 * copy of its arguments, and whether a transaction was open. The hooks are on better-sqlite3's
 * prototypes, installed for the call only and removed after it, so nothing outside the bench sees them.
 *
 * replaySqlCalls() replays the calls on fresh in-memory databases (one per database of the run, from the
 * world's migrated image when the run's database started from it; a
 * reopened file, as after a scheduler restart, maps to the same one), each statement prepared on first
 * use, and times them: the calls made inside write transactions (the core's own writes, BEGIN and
 * COMMIT included) apart from the rest (reads outside transactions, mostly the simulator observing the
 * queue, and the schema set-up). PRAGMAs are skipped: file settings mean nothing in memory.
 */
import Database from 'better-sqlite3';
import { freshMemoryDatabase } from '../../sim/memory-image.ts';
import { elapsedNs, nowNs } from './timing.ts';

export interface SqlCall {
  db: number;
  sql: string;
  method: 'get' | 'run' | 'all' | 'iterate' | 'exec';
  args: unknown[];
  inTransaction: boolean;
}

type StatementMethod = (this: Database.Statement, ...args: unknown[]) => unknown;
const METHODS = ['get', 'run', 'all', 'iterate'] as const;

export async function recordSqlCalls<T>(work: () => Promise<T>): Promise<{ result: T; calls: SqlCall[] }> {
  const statementProto = Object.getPrototypeOf(new Database(':memory:').prepare('SELECT 1')) as Record<string, StatementMethod>;
  const databaseProto = Database.prototype as unknown as Record<string, (this: Database.Database, sql: string) => unknown>;
  const originals = Object.fromEntries(METHODS.map((m) => [m, statementProto[m]!])) as Record<(typeof METHODS)[number], StatementMethod>;
  const originalExec = databaseProto.exec!;
  const calls: SqlCall[] = [];
  const ids = new WeakMap<object, number>();
  const byFile = new Map<string, number>();
  let nextId = 0;
  const idOf = (db: Database.Database): number => {
    let id = ids.get(db) ?? (db.memory ? undefined : byFile.get(db.name));
    if (id === undefined) id = nextId++;
    ids.set(db, id);
    if (!db.memory) byFile.set(db.name, id);
    return id;
  };
  // BEGIN opens the transaction it belongs to: count it with the calls inside.
  const inTransaction = (db: Database.Database, sql: string) => db.inTransaction || /^\s*BEGIN/i.test(sql);
  for (const method of METHODS) {
    const original = originals[method];
    statementProto[method] = function (this: Database.Statement, ...args: unknown[]) {
      const db = this.database;
      calls.push({ db: idOf(db), sql: this.source, method, args: structuredClone(args), inTransaction: inTransaction(db, this.source) });
      return original.apply(this, args);
    };
  }
  databaseProto.exec = function (this: Database.Database, sql: string) {
    calls.push({ db: idOf(this), sql, method: 'exec', args: [], inTransaction: inTransaction(this, sql) });
    return originalExec.call(this, sql);
  };
  try {
    return { result: await work(), calls };
  } finally {
    for (const method of METHODS) statementProto[method] = originals[method];
    databaseProto.exec = originalExec;
  }
}

export interface ReplayTiming {
  /** Every replayed call, schema set-up included, in nanoseconds. */
  totalNs: number;
  /** Calls made inside a transaction: the core's writes (BEGIN and COMMIT are in here too). */
  inTransactionNs: number;
  calls: number;
  /** Calls that threw on replay (an injected failure the recording saw, or a refused write). */
  threw: number;
}

export function replaySqlCalls(calls: readonly SqlCall[]): ReplayTiming {
  const byDb = new Map<number, SqlCall[]>();
  for (const call of calls) {
    const list = byDb.get(call.db);
    if (list === undefined) byDb.set(call.db, [call]);
    else list.push(call);
  }
  const timing: ReplayTiming = { totalNs: 0, inTransactionNs: 0, calls: 0, threw: 0 };
  for (const list of byDb.values()) {
    // A run's in-memory database starts from the migrated image (sim/memory-image.ts), so its calls never
    // create the schema; replay those on a copy of the same image. A file migrates itself, as recorded.
    const migratesItself = list.some((call) => call.method === 'exec' && /CREATE TABLE tasks\b/.test(call.sql));
    const db = migratesItself ? new Database(':memory:') : freshMemoryDatabase();
    const statements = new Map<string, Database.Statement>();
    try {
      for (const call of list) {
        if (/^\s*PRAGMA/i.test(call.sql)) continue;
        const start = nowNs();
        try {
          if (call.method === 'exec') db.exec(call.sql);
          else {
            let statement = statements.get(call.sql);
            if (statement === undefined) {
              statement = db.prepare(call.sql);
              statements.set(call.sql, statement);
            }
            const result = (statement[call.method] as (...args: unknown[]) => unknown)(...call.args);
            if (call.method === 'iterate') for (const _ of result as Iterable<unknown>);
          }
        } catch {
          timing.threw++;
        }
        const ns = elapsedNs(start);
        timing.totalNs += ns;
        if (call.inTransaction) timing.inTransactionNs += ns;
        timing.calls++;
      }
    } finally {
      db.close();
    }
  }
  return timing;
}
