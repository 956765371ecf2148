import Database from 'better-sqlite3';
import type { Database as DatabaseHandle } from 'better-sqlite3';
import { ConfigError } from './errors.ts';

/**
 * Opens (or adopts) the SQLite handle. A path gets WAL with synchronous NORMAL: a commit survives a
 * process crash, and readers never block the single writer. A handle passed in keeps its own
 * settings except the busy timeout, which the queue needs (Q18).
 */
export function openDatabase(target: string | DatabaseHandle, busyTimeoutMs: number): { db: DatabaseHandle; owned: boolean } {
  if (typeof target === 'string') {
    if (target === '') throw new ConfigError('db', 'expected a path, ":memory:" or a better-sqlite3 handle');
    if (target.startsWith('file:')) {
      throw new ConfigError('db', 'better-sqlite3 cannot open file: URIs; pass a plain path so several connections share a real file');
    }
    const db = new Database(target, { timeout: busyTimeoutMs });
    if (target !== ':memory:') {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
    }
    return { db, owned: true };
  }
  if (target === null || typeof target !== 'object' || typeof (target as DatabaseHandle).prepare !== 'function') {
    throw new ConfigError('db', 'expected a path, ":memory:" or a better-sqlite3 handle');
  }
  target.pragma(`busy_timeout = ${busyTimeoutMs}`);
  return { db: target, owned: false };
}
