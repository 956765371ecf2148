import { validateBudgets } from './budgets.ts';
import { ConfigError } from './errors.ts';
import { SESSION_POLICIES, type QueueConfig } from './types.ts';

/** Defaults from SPEC Q3, Q4, Q6, Q7, Q9, Q11, Q16, Q17, R4, R6 and A1, A2. Every one can be overridden. */
export const DEFAULT_CONFIG: Readonly<QueueConfig> = Object.freeze({
  capacity: 100,
  globalLimit: 2,
  perTenantLimit: 1,
  tenantLimits: {},
  leaseMs: 30_000,
  heartbeatMs: 10_000,
  agingPeriodMs: 60_000,
  agingCap: 30,
  maxAttempts: 3,
  maxDeliveries: 3,
  baseDelayMs: 1_000,
  maxDelayMs: 60_000,
  maxRetryAgeMs: 3_600_000,
  maxInputBytes: 256 * 1024,
  incidentBucketMs: 5 * 60_000,
  tierHolds: { standard: 20, long: 60 },
  tokensPerCredit: 1_000,
  holdTtlMs: 15 * 60_000,
  reconciliation: 'hold',
  graceMs: 10_000,
  busyTimeoutMs: 5_000,
  busyRetries: 3,
  budgets: {},
  criticalHeadroom: 10,
  sessionPolicy: 'serial',
  fairness: 'priority',
  tenantWeights: {},
  stuckAfterMs: 600_000,
});

const POSITIVE_INTEGER_FIELDS = [
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
  'tokensPerCredit',
  'holdTtlMs',
  'stuckAfterMs',
] as const;

const NON_NEGATIVE_INTEGER_FIELDS = ['agingCap', 'busyTimeoutMs', 'busyRetries', 'graceMs', 'criticalHeadroom'] as const;

/**
 * Merges overrides into the defaults and rejects anything that would make the queue unsafe or
 * meaningless. The first problem found is thrown as a ConfigError naming the field.
 */
export function resolveConfig(overrides: Partial<QueueConfig> = {}): QueueConfig {
  // An array is an object too, and its indexes would pass as no field at all: refused like any non-object.
  if (overrides === null || typeof overrides !== 'object' || Array.isArray(overrides)) {
    throw new ConfigError('config', 'expected an object');
  }
  const known = new Set(Object.keys(DEFAULT_CONFIG));
  for (const key of Object.keys(overrides)) {
    if (!known.has(key)) throw new ConfigError(key, 'unknown configuration field');
  }
  // A map given as a number or an array would otherwise spread into {} and be silently dropped.
  for (const field of ['tenantLimits', 'tierHolds', 'tenantWeights'] as const) {
    const value: unknown = overrides[field];
    if (value !== undefined && value !== null && (typeof value !== 'object' || Array.isArray(value))) {
      throw new ConfigError(field, 'expected an object keyed by name');
    }
  }
  const config: QueueConfig = {
    ...DEFAULT_CONFIG,
    ...stripUndefined(overrides),
    tenantLimits: { ...(overrides.tenantLimits ?? DEFAULT_CONFIG.tenantLimits) },
    tierHolds: { ...DEFAULT_CONFIG.tierHolds, ...(overrides.tierHolds ?? {}) },
    budgets: validateBudgets(overrides.budgets ?? DEFAULT_CONFIG.budgets),
    tenantWeights: { ...(overrides.tenantWeights ?? DEFAULT_CONFIG.tenantWeights) },
  };
  for (const field of POSITIVE_INTEGER_FIELDS) requireInteger(field, config[field], 1);
  for (const field of NON_NEGATIVE_INTEGER_FIELDS) requireInteger(field, config[field], 0);
  if (config.fairness !== 'priority' && config.fairness !== 'fair_share') {
    throw new ConfigError('fairness', `expected 'priority' or 'fair_share', got ${JSON.stringify(config.fairness)}`);
  }
  for (const [tenant, weight] of Object.entries(config.tenantWeights)) requireInteger(`tenantWeights.${tenant}`, weight, 1);
  if (!SESSION_POLICIES.includes(config.sessionPolicy)) {
    throw new ConfigError('sessionPolicy', `expected one of ${SESSION_POLICIES.map((policy) => `'${policy}'`).join(', ')}, got ${JSON.stringify(config.sessionPolicy)}`);
  }
  if (config.reconciliation !== 'hold' && config.reconciliation !== 'auto') {
    throw new ConfigError('reconciliation', `expected 'hold' or 'auto', got ${JSON.stringify(config.reconciliation)}`);
  }
  // Q9: three heartbeats fit in one lease, so one lost or late heartbeat does not cost the lease.
  if (config.leaseMs < 3 * config.heartbeatMs) {
    throw new ConfigError('leaseMs', `must be at least 3 x heartbeatMs (${3 * config.heartbeatMs}), got ${config.leaseMs}`);
  }
  if (config.perTenantLimit > config.globalLimit) {
    throw new ConfigError('perTenantLimit', `must not exceed globalLimit (${config.globalLimit})`);
  }
  if (config.globalLimit > config.capacity) {
    throw new ConfigError('globalLimit', `must not exceed capacity (${config.capacity})`);
  }
  if (config.maxDelayMs < config.baseDelayMs) {
    throw new ConfigError('maxDelayMs', `must be at least baseDelayMs (${config.baseDelayMs})`);
  }
  for (const [tenant, limit] of Object.entries(config.tenantLimits)) {
    requireInteger(`tenantLimits.${tenant}`, limit, 0);
  }
  for (const [tier, credits] of Object.entries(config.tierHolds)) {
    // A hold for a tier no task can have is a typo (`tierHolds.Long`), not a setting: refused, named.
    if (!Object.hasOwn(DEFAULT_CONFIG.tierHolds, tier)) {
      throw new ConfigError(`tierHolds.${tier}`, `unknown tier; known: ${Object.keys(DEFAULT_CONFIG.tierHolds).join(', ')}`);
    }
    requireInteger(`tierHolds.${tier}`, credits, 0);
  }
  return config;
}

/**
 * Q6: a tenant's slot limit, its own entry in tenantLimits or else perTenantLimit. The tenant is the
 * caller's string: read as a plain property, `constructor` or `toString` would find Object.prototype's
 * function and `__proto__` the prototype itself (A5/I22, issue 31), so only an own entry counts.
 */
export function tenantLimitOf(config: QueueConfig, tenant: string): number {
  return Object.hasOwn(config.tenantLimits, tenant) ? (config.tenantLimits[tenant] as number) : config.perTenantLimit;
}

function requireInteger(field: string, value: unknown, min: number): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new ConfigError(field, `expected an integer >= ${min}, got ${JSON.stringify(value)}`);
  }
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
