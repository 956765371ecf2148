import type { Database } from 'better-sqlite3';
import { BusyError } from './errors.ts';

const BUSY_CODES = new Set(['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_RECOVERY', 'SQLITE_LOCKED']);

export function isBusy(error: unknown): boolean {
  return typeof error === 'object' && error !== null && BUSY_CODES.has((error as { code?: string }).code ?? '');
}

/**
 * Runs `work` in one BEGIN IMMEDIATE transaction (Q5): the write lock is taken up front, so two
 * claimers can never both read the same ready row and then both write it. SQLite already waits up to
 * the busy timeout for the lock; on top of that a bounded number of retries (Q18). When they are
 * spent the caller gets a BusyError; the transaction was rolled back, so nothing was half-written.
 * `work` must be synchronous: no transaction ever spans an await or an external call.
 */
export function makeWriter(db: Database, retries: number, readClock: () => number) {
  const runner = db.transaction((work: (at: number) => unknown) => work(readClock()));
  return function write<T>(operation: string, work: (at: number) => T): T {
    for (let attempt = 1; ; attempt++) {
      try {
        return runner.immediate(work) as T;
      } catch (error) {
        if (!isBusy(error)) throw error;
        if (attempt > retries) throw new BusyError(operation, attempt);
      }
    }
  };
}

/** Reads need no write lock, but a WAL read can still meet SQLITE_BUSY during recovery. */
export function readWithRetry<T>(operation: string, retries: number, read: () => T): T {
  for (let attempt = 1; ; attempt++) {
    try {
      return read();
    } catch (error) {
      if (!isBusy(error)) throw error;
      if (attempt > retries) throw new BusyError(operation, attempt);
    }
  }
}
