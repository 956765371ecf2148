/**
 * SPEC P2, P4 (issue 31 item 5): opening the PostgreSQL store against a deployment that cannot work
 * fails as a typed OpenError naming the cause and what to do, never as the driver's raw error. Against
 * the run's server (LEASEHOLD_PG_URL, or the throwaway one vitest's global setup starts): only its host
 * and port are used, with a database, a role or an sslmode that cannot work.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { LeaseholdError, OpenError, RetryableStoreError } from '../queue/errors.ts';
import { ManualClock } from '../queue/__test-helpers__/test-kit.ts';
import type { WorkQueue } from '../queue/types.ts';
import { openWorkQueue } from '../work-queue.ts';
import { PG_URL } from './__test-helpers__/pg-test-store.ts';
import { checkPostgresUrl, pgOpenErrorOf, redactPostgresUrl } from './pg-open-errors.ts';

const opened: WorkQueue[] = [];

afterEach(async () => {
  for (const queue of opened.splice(0)) await queue.close();
});

function open(db: string): WorkQueue {
  const queue = openWorkQueue({ db, clock: new ManualClock() });
  opened.push(queue);
  return queue;
}

/** The run's server URL with `change` applied. */
function serverUrl(change: (url: URL) => void): string {
  const url = new URL(PG_URL);
  change(url);
  return url.toString();
}

/** The error the queue's first call fails with (it connects and migrates then). */
async function firstCallError(queue: WorkQueue): Promise<unknown> {
  return await queue.schemaMigrations().then(
    () => undefined,
    (error: unknown) => error,
  );
}

function expectOpenError(error: unknown, reason: OpenError['reason'], message: RegExp): OpenError {
  expect(error).toBeInstanceOf(OpenError);
  expect(error).toBeInstanceOf(LeaseholdError);
  // A fact about the deployment, not a passing fault: a caller that retries store trouble does not loop on it.
  expect(error).not.toBeInstanceOf(RetryableStoreError);
  const open = error as OpenError;
  expect(open.reason).toBe(reason);
  expect(open.code).toBe('open_failed');
  expect(open.message).toMatch(message);
  return open;
}

describe('P2/P4 opening PostgreSQL: typed errors that say what to do', () => {
  it('names a database that does not exist (3D000), on the first call and again on the next', async () => {
    const queue = open(serverUrl((url) => void (url.pathname = '/no_such_db_xyz')));
    const error = expectOpenError(await firstCallError(queue), 'no_such_database', /database "no_such_db_xyz" does not exist.*CREATE DATABASE/);
    expect(error.sqlState).toBe('3D000');
    expect((error.cause as { code?: unknown }).code).toBe('3D000');
    // Each call tries to open again (the database may have been created meanwhile), and fails the same way.
    expectOpenError(await firstCallError(queue), 'no_such_database', /no_such_db_xyz/);
  });

  it('names a role that does not exist or may not log in (28000, or 28P01 where the server asks a password)', async () => {
    const queue = open(
      serverUrl((url) => {
        url.username = 'no_such_role_xyz';
        url.password = 'not-a-secret';
      }),
    );
    const error = expectOpenError(await firstCallError(queue), 'access_denied', /no_such_role_xyz.*CREATE ROLE/);
    expect(['28000', '28P01']).toContain(error.sqlState);
    // The password is never echoed.
    expect(error.message).not.toContain('not-a-secret');
    expect(error.path).toContain('***');
  });

  it('refuses a malformed URL synchronously, as SQLite refuses a missing folder', () => {
    for (const db of ['postgres://%%%', 'postgres://[::1/leasehold', 'postgres://user:pa%zzss@localhost/db', 'postgres://exa mple/db']) {
      let thrown: unknown;
      try {
        open(db);
      } catch (error) {
        thrown = error;
      }
      expectOpenError(thrown, 'invalid_url', /cannot open .*(does not parse|percent-encoding|no host name)/);
    }
  });

  it('accepts the URL forms the driver takes: a host name, an address, IPv6, a socket folder, no host', () => {
    for (const db of ['postgres://localhost/db', 'postgres://u:p@10.0.0.7:6543/db', 'postgresql://[::1]:5432/db', 'postgres://%2Fvar%2Frun%2Fpostgresql/db', 'postgres:///db', 'postgres://db.internal.example./x?sslmode=disable']) {
      expect(() => checkPostgresUrl(db), db).not.toThrow();
    }
  });

  it('says SSL is asked of a server without it (sslmode=require), or that its certificate is not trusted', async () => {
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    const ssl = (await admin.query('SHOW ssl')).rows[0].ssl as string;
    await admin.end();
    const queue = open(serverUrl((url) => url.searchParams.set('sslmode', 'require')));
    const error = await firstCallError(queue);
    if (ssl === 'off') {
      const refused = expectOpenError(error, 'ssl_unavailable', /does not support SSL.*sslmode=disable/);
      expect(refused.cause).toBeInstanceOf(Error);
    } else if (error !== undefined) {
      // A server with SSL: the connection works, or the certificate is one this client does not trust.
      expectOpenError(error, 'ssl_rejected', /certificate/);
    }
  });

  it('leaves other failures to the caller: a connection fault stays retryable, an unknown error as it was', () => {
    expect(pgOpenErrorOf('x', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }))).toBeUndefined();
    expect(pgOpenErrorOf('x', Object.assign(new Error('deadlock detected'), { code: '40P01' }))).toBeUndefined();
    expect(pgOpenErrorOf('x', 'a string')).toBeUndefined();
    const denied = pgOpenErrorOf('x', Object.assign(new Error('permission denied for schema public'), { code: '42501' }));
    expect(denied).toMatchObject({ reason: 'permission_denied', sqlState: '42501' });
    expect(redactPostgresUrl('postgres://u:secret@h/db')).toBe('postgres://u:***@h/db');
    expect(redactPostgresUrl('postgres://[::1/db')).toBe('the PostgreSQL URL');
  });

  it('refuses a host that parses but names no host (a character no host name has), and accepts a URL with no database', () => {
    for (const db of ['postgres://a!b/db', 'postgres://host$x:5432/db']) {
      let thrown: unknown;
      try {
        open(db);
      } catch (error) {
        thrown = error;
      }
      expectOpenError(thrown, 'invalid_url', /is no host name, address or socket folder/);
    }
    // No database in the path: the driver's default (the user's name), nothing to decode.
    for (const db of ['postgres://localhost', 'postgres://u:p@localhost:5432']) expect(() => checkPostgresUrl(db), db).not.toThrow();
  });

  it('keeps an OpenError as it is, describes a message that is not a string by the error, and names an untrusted certificate', () => {
    const already = new OpenError('x', 'no_such_database', 'gone');
    expect(pgOpenErrorOf('y', already)).toBe(already);
    // A driver error with no message string: the text is the error's own description.
    const bare = { code: '3D000', toString: () => 'database "q" does not exist' };
    const missing = pgOpenErrorOf('x', bare);
    expectOpenError(missing, 'no_such_database', /^cannot open .*database "q" does not exist \(SQLSTATE 3D000\)/);
    expect(missing).toMatchObject({ sqlState: '3D000', cause: bare });
    for (const code of ['DEPTH_ZERO_SELF_SIGNED_CERT', 'CERT_HAS_EXPIRED', 'ERR_TLS_CERT_ALTNAME_INVALID']) {
      const rejected = pgOpenErrorOf('x', Object.assign(new Error('certificate problem'), { code }));
      expectOpenError(rejected, 'ssl_rejected', new RegExp(`certificate problem \\(${code}\\): the server's certificate is not trusted`));
      // Not a SQLSTATE: the error carries none.
      expect(rejected?.sqlState).toBeUndefined();
    }
  });
});
