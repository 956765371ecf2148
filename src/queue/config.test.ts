import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, LeaseholdError } from './errors.ts';
import { DEFAULT_CONFIG, resolveConfig } from './config.ts';
import { openWorkQueue } from '../work-queue.ts';
import { ManualClock, checkAndCloseQueues, openTestQueue } from './__test-helpers__/test-kit.ts';
import type { QueueConfig } from './types.ts';

afterEach(checkAndCloseQueues);

/** Opens a queue with `config` and returns the ConfigError it threw (failing the test if none). */
async function configError(config: Record<string, unknown>): Promise<ConfigError> {
  try {
    const queue = openWorkQueue({ db: ':memory:', clock: new ManualClock(), config: config as Partial<QueueConfig> });
    await queue.close();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error(`config ${JSON.stringify(config)} was accepted`);
}

describe('config defaults', () => {
  it('uses the SPEC defaults when nothing is overridden', () => {
    const { queue } = openTestQueue();
    expect(queue.config).toMatchObject({
      capacity: 100,
      globalLimit: 2,
      perTenantLimit: 1,
      leaseMs: 30_000,
      heartbeatMs: 10_000,
      agingPeriodMs: 60_000,
      agingCap: 30,
      maxAttempts: 3,
      maxInputBytes: 256 * 1024,
      incidentBucketMs: 5 * 60_000,
    });
  });

  it('applies overrides and keeps the other defaults', () => {
    const { queue } = openTestQueue({ config: { leaseMs: 90_000, heartbeatMs: 30_000, capacity: 7 } });
    expect(queue.config.leaseMs).toBe(90_000);
    expect(queue.config.heartbeatMs).toBe(30_000);
    expect(queue.config.capacity).toBe(7);
    expect(queue.config.agingCap).toBe(DEFAULT_CONFIG.agingCap);
  });
});

describe('Q9 lease must cover three heartbeats', () => {
  it('rejects leaseMs < 3 * heartbeatMs, naming leaseMs', async () => {
    const error = await configError({ leaseMs: 29_999, heartbeatMs: 10_000 });
    expect(error.field).toBe('leaseMs');
    expect(error.code).toBe('invalid_config');
    expect(error).toBeInstanceOf(LeaseholdError);
  });

  it('rejects a heartbeat raised above a third of the default lease', async () => {
    expect((await configError({ heartbeatMs: 10_001 })).field).toBe('leaseMs');
  });

  it('accepts leaseMs exactly 3 * heartbeatMs', () => {
    expect(resolveConfig({ leaseMs: 30_000, heartbeatMs: 10_000 }).leaseMs).toBe(30_000);
    expect(resolveConfig({ leaseMs: 3, heartbeatMs: 1 }).leaseMs).toBe(3);
  });
});

describe('config validation names the bad field', () => {
  const positiveFields = [
    'capacity',
    'globalLimit',
    'perTenantLimit',
    'leaseMs',
    'heartbeatMs',
    'agingPeriodMs',
    'maxAttempts',
    'maxDeliveries',
    'baseDelayMs',
    'maxDelayMs',
    'maxRetryAgeMs',
    'maxInputBytes',
    'incidentBucketMs',
  ];

  it.each(positiveFields)('rejects %s = 0 and negative values', async (field) => {
    expect((await configError({ [field]: 0 })).field).toBe(field);
    expect((await configError({ [field]: -5 })).field).toBe(field);
  });

  it.each(positiveFields)('rejects a non-integer %s', async (field) => {
    for (const bad of [1.5, Number.NaN, Number.POSITIVE_INFINITY, '10', null, true]) {
      expect((await configError({ [field]: bad })).field, `${field} = ${String(bad)}`).toBe(field);
    }
  });

  it('rejects capacity 0 in particular', async () => {
    const error = await configError({ capacity: 0 });
    expect(error.field).toBe('capacity');
    expect(error.message).toContain('capacity');
  });

  it.each(['agingCap', 'busyTimeoutMs', 'busyRetries'])('allows %s = 0 but rejects a negative or fractional one', async (field) => {
    expect(() => resolveConfig({ [field]: 0 } as Partial<QueueConfig>)).not.toThrow();
    expect((await configError({ [field]: -1 })).field).toBe(field);
    expect((await configError({ [field]: 0.5 })).field).toBe(field);
  });

  it('rejects an unknown field by its name', async () => {
    expect((await configError({ leaseMillis: 30_000 })).field).toBe('leaseMillis');
    expect((await configError({ capacity: 5, globalLimit: 2, nonsense: 1 })).field).toBe('nonsense');
  });

  it('rejects a per-tenant limit above the global limit', async () => {
    expect((await configError({ globalLimit: 2, perTenantLimit: 3 })).field).toBe('perTenantLimit');
  });

  it('rejects a global limit above the capacity', async () => {
    expect((await configError({ capacity: 1, globalLimit: 2 })).field).toBe('globalLimit');
  });

  it('rejects maxDelayMs below baseDelayMs', async () => {
    expect((await configError({ baseDelayMs: 5_000, maxDelayMs: 4_999 })).field).toBe('maxDelayMs');
  });

  it('rejects a negative or fractional tenant limit, naming the tenant', async () => {
    expect((await configError({ tenantLimits: { acme: -1 } })).field).toBe('tenantLimits.acme');
    expect((await configError({ tenantLimits: { ok: 1, globex: 0.5 } })).field).toBe('tenantLimits.globex');
  });

  it('rejects tenantLimits or tierHolds that are not objects', async () => {
    expect((await configError({ tenantLimits: 5 })).field).toBe('tenantLimits');
    expect((await configError({ tenantLimits: [1] })).field).toBe('tenantLimits');
    expect((await configError({ tierHolds: 'standard' })).field).toBe('tierHolds');
  });

  it('rejects a config that is not an object, an array included', async () => {
    expect(() => resolveConfig('capacity=5' as never)).toThrow(ConfigError);
    // An array used to pass as an empty override: every field silently at its default.
    expect((await configError([{ capacity: 5 }] as never)).field).toBe('config');
    expect(() => resolveConfig([] as never)).toThrow(/invalid config field 'config': expected an object/);
  });

  it('rejects a hold for a tier that does not exist, naming it, and keeps the known tiers', async () => {
    // A typo used to be kept as a hold no task could draw on, while the tier meant kept its default.
    const error = await configError({ tierHolds: { Long: 90 } });
    expect(error.field).toBe('tierHolds.Long');
    expect(error.message).toMatch(/unknown tier; known: standard, long/);
    expect(resolveConfig({ tierHolds: { long: 90 } as QueueConfig['tierHolds'] }).tierHolds).toEqual({ standard: 20, long: 90 });
  });

  it('accepts a tenant limit of 0 (a paused tenant)', () => {
    expect(resolveConfig({ tenantLimits: { acme: 0 } }).tenantLimits).toEqual({ acme: 0 });
  });

  it('rejects a negative tier hold', async () => {
    expect((await configError({ tierHolds: { standard: -1, long: 60 } })).field).toBe('tierHolds.standard');
  });

  it('rejects a missing clock, a bad random and an empty db path', async () => {
    const attempt = async (options: Record<string, unknown>) => {
      try {
        await openWorkQueue(options as never).close();
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as ConfigError).field;
      }
      return 'accepted';
    };
    expect(await attempt({ db: ':memory:' })).toBe('clock');
    expect(await attempt({ db: ':memory:', clock: { now: 5 } })).toBe('clock');
    expect(await attempt({ db: ':memory:', clock: new ManualClock(), random: { next: 1 } })).toBe('random');
    expect(await attempt({ db: '', clock: new ManualClock() })).toBe('db');
    expect(await attempt({ db: 42, clock: new ManualClock() })).toBe('db');
  });

});
