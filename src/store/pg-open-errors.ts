import { OpenError } from '../queue/errors.ts';

/**
 * SPEC P2 and P4: opening the PostgreSQL store fails as a typed OpenError naming the cause and what to
 * do, as the SQLite store's open does, never as the driver's raw error. Two moments:
 *
 * - The URL, checked by openWorkQueue itself before any connection (`checkPostgresUrl`): a URL that
 *   does not parse, or whose host is no host name, no address and no socket folder, is refused at once,
 *   synchronously, as SQLite refuses a path in a folder that does not exist. Left to the driver it
 *   would surface at the first call, as a bare TypeError (ERR_INVALID_URL) or as a DNS failure that
 *   looks retryable (ENOTFOUND for the host `%%%`) though no retry can ever succeed.
 * - The server's refusals at the first connection and the migration (`pgOpenErrorOf`): a database that
 *   does not exist (3D000), a role that does not exist or may not log in (28000, 28P01), SSL asked of a
 *   server without it (`sslmode=require`), a certificate the client does not trust, a role that may not
 *   create the queue's tables (42501). Each is a fact about the deployment, not a passing fault: not
 *   retryable (P4's retryable errors stay ConnectionError, mapped in pg-store.ts).
 *
 * Messages never carry the password: `path` is the URL with it masked.
 */

/** The URL as messages show it: the password masked. */
export function redactPostgresUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the PostgreSQL URL';
  }
}

/** A host name (letters of any script, digits, dots, hyphens, underscores), an IPv4 address, or a bracketed IPv6 one. */
const HOST = /^(?:[\p{L}\p{N}_-]+(?:\.[\p{L}\p{N}_-]+)*\.?|\[[0-9A-Fa-f:.]+(?:%[\w.]+)?\])$/u;

/** Throws OpenError `invalid_url` unless `url` is a PostgreSQL URL the driver can connect with. */
export function checkPostgresUrl(url: string): void {
  const path = redactPostgresUrl(url);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (error) {
    throw new OpenError(path, 'invalid_url', 'the URL does not parse (expected postgres://user:password@host:port/database, with any reserved character percent-encoded)', { cause: error });
  }
  // An empty host means the driver's default (a local socket or localhost); a percent-encoded host that
  // decodes to an absolute path is a socket folder (postgres://%2Fvar%2Frun%2Fpostgresql/db).
  let host: string;
  try {
    host = decodeURIComponent(parsed.hostname);
  } catch (error) {
    throw new OpenError(path, 'invalid_url', `the host ${JSON.stringify(parsed.hostname)} is not valid percent-encoding: encode a literal % as %25`, { cause: error });
  }
  if (host !== '' && !host.startsWith('/') && !HOST.test(host)) {
    throw new OpenError(path, 'invalid_url', `the host ${JSON.stringify(host)} is no host name, address or socket folder: check the URL's host part`);
  }
  try {
    if (parsed.pathname.length > 1) decodeURIComponent(parsed.pathname.slice(1));
    decodeURIComponent(parsed.username);
    decodeURIComponent(parsed.password);
  } catch (error) {
    throw new OpenError(path, 'invalid_url', 'the user, password or database name is not valid percent-encoding: encode a literal % as %25', { cause: error });
  }
}

/** Node's TLS verification failures: the server's certificate is not one this client trusts. */
const CERTIFICATE_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * The OpenError for a failure of the first connection or the migration whose cause is the deployment
 * (see above), or undefined for any other error (the caller maps connection faults as retryable).
 */
export function pgOpenErrorOf(path: string, error: unknown): OpenError | undefined {
  if (error instanceof OpenError) return error;
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, message } = error as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : String(error);
  const sqlState = typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
  const detail = { cause: error, ...(sqlState === undefined ? {} : { sqlState }) };
  switch (code) {
    case '3D000':
      return new OpenError(path, 'no_such_database', `${text} (SQLSTATE 3D000): create it (CREATE DATABASE) or name an existing database in the URL`, detail);
    case '28000':
    case '28P01':
      return new OpenError(path, 'access_denied', `${text} (SQLSTATE ${code}): check the URL's user and password, that the role exists (CREATE ROLE ... LOGIN) and that pg_hba.conf lets it connect from here`, detail);
    case '42501':
      return new OpenError(path, 'permission_denied', `${text} (SQLSTATE 42501): the role may not create or use the queue's tables; grant it CREATE on the database or schema, or name a schema it owns`, detail);
  }
  if (/server does not support SSL/i.test(text)) {
    return new OpenError(path, 'ssl_unavailable', `${text}: the URL asks for SSL (sslmode=require or stricter) and the server offers none; enable SSL on the server, or use sslmode=disable on a network you trust`, detail);
  }
  if (typeof code === 'string' && CERTIFICATE_CODES.has(code)) {
    return new OpenError(path, 'ssl_rejected', `${text} (${code}): the server's certificate is not trusted; give its CA in the connection's ssl options, or fix the host name in the URL`, detail);
  }
  return undefined;
}
