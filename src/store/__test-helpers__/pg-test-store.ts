/**
 * Test-only: a PostgreSQL store on a fresh schema of LEASEHOLD_PG_URL (the run's server), dropped
 * when the store closes, so every queue of the contract suite starts from an empty database.
 */
import { randomBytes } from 'node:crypto'; // allow-ambient: test schema names unique across processes, never a decision
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { PgStore, withPgliteConnection } from '../pg-store.ts';
import type { Step, Store, StoreTx, TransactionBody } from '../store.ts';

/** The run's server: vitest's global setup (pg-global-setup.ts) sets LEASEHOLD_PG_URL, starting a throwaway server when it was not given. */
export const PG_URL = requiredUrl();

function requiredUrl(): string {
  const url = process.env.LEASEHOLD_PG_URL;
  if (url === undefined || url === '') throw new Error('LEASEHOLD_PG_URL is not set: run the tests through vitest (its global setup starts a throwaway PostgreSQL)');
  return url;
}

/** A schema name no other test uses. */
export function freshSchemaName(): string {
  return `lh_${randomBytes(6).toString('hex')}`; // allow-ambient: a test schema name unique across processes, never a decision
}

/** Drops a test's schema and everything in it. */
export async function dropSchema(schema: string, url: string = PG_URL): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/** A PgStore whose close() also drops its schema. */
export class DroppingPgStore implements Store {
  readonly kind = 'postgres';
  constructor(
    readonly inner: PgStore,
    readonly schema: string,
  ) {}

  write<T>(operation: string, readClock: () => number, body: TransactionBody<T>): Promise<T> {
    return this.inner.write(operation, readClock, body);
  }

  read<T>(operation: string, body: (tx: StoreTx) => Step<T>): Promise<T> {
    return this.inner.read(operation, body);
  }

  async close(): Promise<void> {
    await this.inner.close();
    await dropSchema(this.schema);
  }
}

export function freshPgStore(options: { busyRetries?: number } = {}): DroppingPgStore {
  const schema = freshSchemaName();
  return new DroppingPgStore(PgStore.open(PG_URL, { busyRetries: options.busyRetries ?? 3, schema }, () => 0), schema);
}

/** The process's PGlite database for the contract suite's `pglite` store: started once, shared by every queue (each in a fresh schema). */
let pglite: PGlite | undefined;
let pgliteSchemas = 0;

/** A PgStore on PGlite (the PostgreSQL store's production driver, in-process) on a fresh schema, dropped when the store closes. */
export function freshPgliteStore(options: { busyRetries?: number } = {}): Store {
  pglite ??= new PGlite();
  const db = pglite;
  const schema = `lh_pglite_${++pgliteSchemas}`;
  const inner = PgStore.open(db, { busyRetries: options.busyRetries ?? 3, schema }, () => 0);
  return {
    kind: 'pglite',
    write: (operation, readClock, body) => inner.write(operation, readClock, body),
    read: (operation, body) => inner.read(operation, body),
    async close() {
      await inner.close();
      // Through the database's queue of leases: other queues of the test may still be running transactions on it.
      await withPgliteConnection(db, () => db.exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
    },
  };
}
