import { existsSync, statSync } from 'node:fs';
import { ConnectionError, OpenError, RetryableStoreError } from '../queue/errors.ts';
import type { Clock } from '../ports.ts';
import type { WorkQueue } from '../queue/types.ts';
import { isPostgresUrl } from '../store/pg-store.ts';
import { openWorkQueue } from '../work-queue.ts';
import { OpsError } from './errors.ts';

/** What `--db` named, for headers and messages: the path, or the URL without its password. */
export function describeDb(db: string): string {
  if (!isPostgresUrl(db)) return db;
  try {
    const url = new URL(db);
    if (url.password !== '') url.password = '***';
    return url.toString();
  } catch {
    return 'postgres://(malformed URL)';
  }
}

/**
 * O1: opens the queue an operator names with `--db FILE|URL`, and proves it answers before anything is
 * shown: a SQLite file that does not exist is refused (a look at a queue must never create an empty
 * one), as is ':memory:' (private to one process); a file that is not a queue, a schema newer than this
 * Leasehold, a database or role the server refuses, and a server that does not answer each become an
 * OpsError whose message says what to change, never a stack.
 */
export async function openOpsQueue(db: string, clock: Clock, schema?: string): Promise<WorkQueue> {
  if (typeof db !== 'string' || db === '') throw new OpsError('invalid_input', '--db expects a SQLite file or a postgres:// URL');
  if (db === ':memory:') throw new OpsError('invalid_input', "--db ':memory:' is private to one process: name the queue's SQLite file or its postgres:// URL");
  const postgres = isPostgresUrl(db);
  if (!postgres && !(existsSync(db) && statSync(db).isFile())) {
    throw new OpsError('missing_database', `no database at ${db}: name the SQLite file your workers open (a look never creates one)`);
  }
  let queue: WorkQueue | undefined;
  try {
    queue = openWorkQueue({ db, clock, ...(schema === undefined ? {} : { schema }) });
    await queue.liveCount();
    return queue;
  } catch (error) {
    await queue?.close().catch(() => undefined);
    throw opsErrorOf(error, describeDb(db));
  }
}

/** The OpsError an error of opening or reading a queue stands for; anything else is returned as it is (a bug: a crash). */
export function opsErrorOf(error: unknown, where: string): unknown {
  if (error instanceof OpsError) return error;
  if (error instanceof OpenError) return new OpsError('cannot_open', error.message, { cause: error });
  if (error instanceof ConnectionError) return new OpsError('unreachable', `cannot reach ${where}: ${error.message}`, { cause: error });
  if (error instanceof RetryableStoreError) return new OpsError('unreachable', `${where} is not answering: ${error.message}`, { cause: error });
  return error;
}
