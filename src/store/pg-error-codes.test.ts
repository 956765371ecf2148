/**
 * SPEC P4: which driver errors the PostgreSQL store treats as server or connection trouble (retryable,
 * a ConnectionError), and which it leaves as they are. The mapping is pure: no server is needed.
 */
import { describe, expect, it } from 'vitest';
import { connectionCodeOf } from './pg-store.ts';

const failure = (code: string, message = 'failed') => Object.assign(new Error(message), { code });

describe('connectionCodeOf', () => {
  it('maps the listed SQLSTATEs and socket codes to their kind', () => {
    expect(connectionCodeOf(failure('40001'))).toBe('serialization_failure');
    expect(connectionCodeOf(failure('40P01'))).toBe('deadlock');
    expect(connectionCodeOf(failure('57P01'))).toBe('connection_lost');
    expect(connectionCodeOf(failure('57P05', 'terminating connection due to idle-session timeout'))).toBe('connection_lost');
    expect(connectionCodeOf(failure('25P03', 'terminating connection due to idle-in-transaction timeout'))).toBe('connection_lost');
    expect(connectionCodeOf(failure('08001'))).toBe('server_unavailable');
    expect(connectionCodeOf(failure('ECONNREFUSED'))).toBe('server_unavailable');
    expect(connectionCodeOf(failure('ECONNRESET'))).toBe('connection_lost');
  });

  it('takes any other connection exception (SQLSTATE class 08) as a lost connection', () => {
    for (const code of ['08000', '08003', '08006', '08P01']) expect(connectionCodeOf(failure(code)), code).toBe('connection_lost');
  });

  it("recognises the driver's messages for a connection that went away, when there is no code", () => {
    expect(connectionCodeOf(new Error('Connection terminated unexpectedly'))).toBe('connection_lost');
    expect(connectionCodeOf(new Error('Client was closed and is not queryable'))).toBe('connection_lost');
  });

  it('leaves everything else alone: other SQLSTATEs, non-objects, errors without a code or a known message', () => {
    expect(connectionCodeOf(failure('23505', 'duplicate key value violates unique constraint'))).toBeUndefined();
    expect(connectionCodeOf(failure('0800', 'not a SQLSTATE'))).toBeUndefined();
    expect(connectionCodeOf(new Error('syntax error at or near "SELEC"'))).toBeUndefined();
    for (const value of [null, undefined, 'Connection terminated', 42]) expect(connectionCodeOf(value), String(value)).toBeUndefined();
    expect(connectionCodeOf({ code: 57 })).toBeUndefined();
  });
});
