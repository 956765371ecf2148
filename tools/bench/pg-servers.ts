/**
 * Local servers for the PostgreSQL sections: where they are (LEASEHOLD_BENCH_PG_URL, LEASEHOLD_BENCH_REDIS_URL,
 * defaulting to the local PostgreSQL and Redis), whether they answer, and unique names for what a run
 * creates on them (schemas, a Redis key prefix), so a run never touches anything it did not make.
 */
import { Redis } from 'ioredis';
import pg from 'pg';

export const PG_URL = process.env.LEASEHOLD_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.LEASEHOLD_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** undefined when the server answers, else why not. */
export async function pgUnreachable(url = PG_URL): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return undefined;
  } catch (e) {
    return `PostgreSQL at ${url} is unreachable: ${e instanceof Error ? e.message : String(e)}`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function redisUnreachable(url = REDIS_URL): Promise<string | undefined> {
  const redis = new Redis(url, { lazyConnect: true, connectTimeout: 3000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    return undefined;
  } catch (e) {
    return `Redis at ${url} is unreachable: ${e instanceof Error ? e.message : String(e)}`;
  } finally {
    redis.disconnect();
  }
}

export function redisHostPort(url = REDIS_URL): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname || '127.0.0.1', port: Number(u.port || 6379) };
}

/** A name unique to this run (pid + a counter), safe as a PostgreSQL identifier and a Redis prefix. */
let counter = 0;
export function runTag(prefix: string): string {
  return `${prefix}_${process.pid}_${(counter++).toString(36)}`;
}

export async function dropSchemas(url: string, schemas: readonly string[]): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    for (const s of schemas) await client.query(`drop schema if exists "${s}" cascade`);
  } finally {
    await client.end();
  }
}

/** Deletes every key under `prefix:` (SCAN, never KEYS). */
export async function flushPrefix(url: string, prefix: string): Promise<number> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  redis.on('error', () => undefined);
  let removed = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) removed += await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return removed;
}

/**
 * ANALYZE every table of the given schemas. A server with autovacuum off (as a test server may be) never
 * refreshes the planner's statistics, so after a bulk fill it plans as if the tables were empty; this is
 * what autovacuum's analyze would do on a default server. It reads table contents only to sample them.
 */
export async function analyzeSchemas(url: string, schemas: readonly string[]): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    for (const s of schemas) {
      const tables = (await client.query(`select tablename from pg_tables where schemaname = $1`, [s])).rows as { tablename: string }[];
      for (const t of tables) await client.query(`analyze "${s}"."${t.tablename}"`);
    }
  } finally {
    await client.end();
  }
}

/** The server's autovacuum setting ('on' or 'off'), for the report. */
export async function autovacuumSetting(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return String((await client.query('show autovacuum')).rows[0].autovacuum);
  } finally {
    await client.end();
  }
}
