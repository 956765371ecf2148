/**
 * The configuration space (issue 15 item 3): every configuration the configuration swarm draws
 * (sim/workloads/config-swarm.ts) opens a queue, with exactly the values drawn; and every invalid one,
 * made from a drawn valid configuration by one defect, is refused by openWorkQueue with a ConfigError
 * naming the offending option, before anything is created or changed: no database file appears for a
 * new path, and an existing database is left byte for byte as it was.
 *
 * The option lists and rules below are restated from the SPEC and the QueueConfig contract, not
 * imported from src/queue/config.ts, so a rule dropped there is caught here. No World runs: the cases
 * only open queues, so they are counted by numRuns, not by the simulation budget (budget.ts).
 */
import { fc, test } from '@fast-check/vitest';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { ConfigError } from '../src/queue/errors.ts';
import type { QueueConfig } from '../src/queue/types.ts';
import { openWorkQueue } from '../src/work-queue.ts';
import { catalogueScenario } from '../sim/scenarios/registry.ts';
import { scenarioForSeed } from '../sim/workloads/config-swarm.ts';
import { fastCheckSeed } from './budget.ts';

const POSITIVE = ['capacity', 'globalLimit', 'perTenantLimit', 'leaseMs', 'heartbeatMs', 'agingPeriodMs', 'maxAttempts', 'maxDeliveries', 'baseDelayMs', 'maxDelayMs', 'maxRetryAgeMs', 'maxInputBytes', 'incidentBucketMs', 'tokensPerCredit', 'holdTtlMs'] as const;
const NON_NEGATIVE = ['agingCap', 'busyTimeoutMs', 'busyRetries', 'graceMs'] as const;
const KNOWN = new Set<string>([...POSITIVE, ...NON_NEGATIVE, 'tenantLimits', 'tierHolds', 'reconciliation']);
const POLICIES = ['hold', 'auto'];
/** The SPEC defaults the relations need when an option is not drawn (Q6, Q9, Q16). */
const DEFAULTS = { capacity: 100, globalLimit: 2, perTenantLimit: 1, leaseMs: 30_000, heartbeatMs: 10_000, baseDelayMs: 1_000, maxDelayMs: 60_000 };

const NUM_RUNS = 300;
const seed = fastCheckSeed();
const params = { numRuns: NUM_RUNS, ...(seed === undefined ? {} : { seed }) };

const scenario = catalogueScenario('config-swarm');
const drawnQueue = (s: string): Partial<QueueConfig> => scenarioForSeed(scenario, s).scenario.queue;
const clock = { now: () => 1_700_000_000_000 };

/** A valid configuration: one the swarm draws for a seed. */
const validConfig = fc.string({ minLength: 1, maxLength: 12 }).map((s) => ({ seed: s, config: drawnQueue(s) }));

/** Values that are not an integer >= min. */
const notIntegerAtLeast = (min: number) =>
  fc.oneof(
    fc.integer({ min: -1_000_000, max: min - 1 }),
    fc.double({ min: -1e6, max: 1e6, noInteger: true, noNaN: true }),
    fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 2 ** 53, '5', '', true, false, null, [], [3], {}, { value: 3 }),
  );

interface Defect {
  config: Record<string, unknown>;
  /** The fields the ConfigError may name (a relation may be named by either side), and words its message must have. */
  fields: string[];
  says?: RegExp;
  what: string;
}

const effective = (config: Partial<QueueConfig>, field: keyof typeof DEFAULTS): number => (config[field] as number | undefined) ?? DEFAULTS[field];

/** One defect in an otherwise valid configuration. */
const defect = (config: Partial<QueueConfig>): fc.Arbitrary<Defect> =>
  fc.oneof(
    fc
      .tuple(fc.constantFrom(...POSITIVE), notIntegerAtLeast(1))
      .map(([field, value]) => ({ config: { ...config, [field]: value }, fields: [field], says: /expected an integer >= 1/, what: `${field} = ${JSON.stringify(value)}` })),
    fc
      .tuple(fc.constantFrom(...NON_NEGATIVE), notIntegerAtLeast(0))
      .map(([field, value]) => ({ config: { ...config, [field]: value }, fields: [field], says: /expected an integer >= 0/, what: `${field} = ${JSON.stringify(value)}` })),
    fc
      .stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,15}$/)
      .filter((key) => !KNOWN.has(key))
      .map((key) => ({ config: { ...config, [key]: 1 }, fields: [key], says: /unknown configuration field/, what: `unknown key ${key}` })),
    fc.constantFrom('leaseMS', 'heartbeat', 'max_attempts', 'Capacity', 'reconcilation').map((key) => ({ config: { ...config, [key]: 1 }, fields: [key], says: /unknown configuration field/, what: `typo ${key}` })),
    fc
      .oneof(fc.string().filter((value) => !POLICIES.includes(value)), fc.constantFrom(1, true, ['hold'], { auto: true }, 'Auto', 'HOLD', 'manual'))
      .map((value) => ({ config: { ...config, reconciliation: value }, fields: ['reconciliation'], says: /expected 'hold' or 'auto'/, what: `reconciliation ${JSON.stringify(value)}` })),
    // Q9: three heartbeats in a lease; one ms short of it, or a heartbeat as long as the lease or longer.
    fc.integer({ min: 1, max: 100_000 }).map((heartbeatMs) => ({ config: { ...config, heartbeatMs, leaseMs: 3 * heartbeatMs - 1 }, fields: ['leaseMs'], says: /at least 3 x heartbeatMs/, what: `lease one ms under 3 x ${heartbeatMs}` })),
    fc.integer({ min: 0, max: 10 }).map((longer) => {
      const leaseMs = effective(config, 'leaseMs');
      return { config: { ...config, heartbeatMs: leaseMs + longer }, fields: ['leaseMs'], says: /at least 3 x heartbeatMs/, what: `heartbeat ${leaseMs + longer} >= lease ${leaseMs}` };
    }),
    // Q6: perTenantLimit <= globalLimit <= capacity.
    fc.integer({ min: 1, max: 5 }).map((over) => {
      const globalLimit = effective(config, 'globalLimit');
      return { config: { ...config, perTenantLimit: globalLimit + over }, fields: ['perTenantLimit'], says: /must not exceed globalLimit/, what: `perTenantLimit ${globalLimit + over} > globalLimit ${globalLimit}` };
    }),
    fc.integer({ min: 1, max: 5 }).map((over) => {
      const capacity = effective(config, 'capacity');
      const perTenantLimit = Math.min(effective(config, 'perTenantLimit'), capacity);
      return { config: { ...config, perTenantLimit, globalLimit: capacity + over }, fields: ['globalLimit', 'capacity'], says: /capacity/, what: `globalLimit ${capacity + over} > capacity ${capacity}` };
    }),
    // Q16: maxDelayMs >= baseDelayMs.
    fc.integer({ min: 1, max: 1_000 }).map((under) => {
      const baseDelayMs = Math.max(effective(config, 'baseDelayMs'), under + 1);
      return { config: { ...config, baseDelayMs, maxDelayMs: baseDelayMs - under }, fields: ['maxDelayMs', 'baseDelayMs'], says: /baseDelayMs/, what: `maxDelayMs ${baseDelayMs - under} < baseDelayMs ${baseDelayMs}` };
    }),
    // Maps: not an object, an entry that is not an integer >= 0, a tier that does not exist.
    fc
      .tuple(fc.constantFrom('tenantLimits', 'tierHolds'), fc.constantFrom(5, 'standard', true, [1], [{ acme: 1 }]))
      .map(([field, value]) => ({ config: { ...config, [field]: value }, fields: [field], says: /expected an object/, what: `${field} = ${JSON.stringify(value)}` })),
    fc
      .tuple(fc.stringMatching(/^[a-z][a-z0-9-]{0,9}$/), notIntegerAtLeast(0))
      .map(([tenant, value]) => ({ config: { ...config, tenantLimits: { ...(config.tenantLimits ?? {}), [tenant]: value } }, fields: [`tenantLimits.${tenant}`], says: /expected an integer >= 0/, what: `tenantLimits.${tenant} = ${JSON.stringify(value)}` })),
    fc
      .tuple(fc.constantFrom('standard', 'long'), notIntegerAtLeast(0))
      .map(([tier, value]) => ({ config: { ...config, tierHolds: { ...(config.tierHolds ?? {}), [tier]: value } }, fields: [`tierHolds.${tier}`], says: /expected an integer >= 0/, what: `tierHolds.${tier} = ${JSON.stringify(value)}` })),
    fc
      .stringMatching(/^[A-Za-z]{1,10}$/)
      .filter((tier) => tier !== 'standard' && tier !== 'long')
      .map((tier) => ({ config: { ...config, tierHolds: { ...(config.tierHolds ?? {}), [tier]: 10 } }, fields: [`tierHolds.${tier}`], says: /unknown tier/, what: `tier ${tier}` })),
  );

/** The whole config of the wrong type. */
const notAnObject = fc.constantFrom<unknown>(5, 'capacity=5', true, [], [{ capacity: 5 }]).map((config) => ({ config, fields: ['config'], says: /expected an object/, what: `config ${JSON.stringify(config)}` }));

const invalid = fc.oneof({ weight: 12, arbitrary: validConfig.chain(({ config }) => defect(config)) }, { weight: 1, arbitrary: notAnObject });

/** The error `open` threw; a queue it opened instead is closed and its files removed, so the next case starts clean. */
async function refusal(open: () => { close(): Promise<void> }, path?: string): Promise<ConfigError> {
  let queue: { close(): Promise<void> };
  try {
    queue = open();
  } catch (error) {
    return error as ConfigError;
  }
  await queue.close();
  if (path !== undefined) for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
  throw new Error('the configuration was accepted');
}

let directory: string;
let existing: string;
let existingState: () => string;

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'leasehold-config-space-'));
  existing = join(directory, 'existing.sqlite');
  const queue = openWorkQueue({ db: existing, clock });
  await queue.enqueue({ tenant: 'acme', topic: 'topic-1', version: 1, priority: 5, input: { note: 'kept' } });
  await queue.close();
  existingState = () =>
    readdirSync(directory)
      .filter((file) => file.startsWith('existing'))
      .sort()
      .map((file) => `${file}:${createHash('sha256').update(readFileSync(join(directory, file))).digest('hex')}`)
      .join(',');
});

afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('the configuration space', () => {
  test.prop([validConfig], params)('every configuration the swarm draws opens a queue with exactly the values drawn', async ({ config }) => {
    const queue = openWorkQueue({ db: ':memory:', clock, config });
    try {
      for (const [field, value] of Object.entries(config)) {
        if (field === 'tierHolds') expect(queue.config.tierHolds).toMatchObject(value as object);
        else expect(queue.config[field as keyof QueueConfig]).toEqual(value);
      }
      expect(queue.config.leaseMs).toBeGreaterThanOrEqual(3 * queue.config.heartbeatMs);
      expect(queue.config.perTenantLimit).toBeLessThanOrEqual(queue.config.globalLimit);
      expect(queue.config.globalLimit).toBeLessThanOrEqual(queue.config.capacity);
      expect(POLICIES).toContain(queue.config.reconciliation);
    } finally {
      await queue.close();
    }
  });

  test.prop([invalid, fc.nat()], params)('an invalid configuration is refused with a ConfigError naming the option, and no database file is created', async (bad, n) => {
    const path = join(directory, `new-${n}.sqlite`);
    const error = await refusal(() => openWorkQueue({ db: path, clock, config: bad.config as Partial<QueueConfig> }), path);
    expect(error, bad.what).toBeInstanceOf(ConfigError);
    expect(error.code, bad.what).toBe('invalid_config');
    expect(bad.fields, `${bad.what}: named ${error.field}`).toContain(error.field);
    expect(error.message, bad.what).toContain(`'${error.field}'`);
    if (bad.says !== undefined) expect(error.message, bad.what).toMatch(bad.says);
    expect(existsSync(path), `${bad.what}: ${path} was created`).toBe(false);
    expect(readdirSync(directory).filter((file) => file.startsWith('new-')), bad.what).toEqual([]);
  });

  test.prop([invalid], { ...params, numRuns: 100 })('an invalid configuration leaves an existing database as it was', async (bad) => {
    const before = existingState();
    const error = await refusal(() => openWorkQueue({ db: existing, clock, config: bad.config as Partial<QueueConfig> }));
    expect(error, bad.what).toBeInstanceOf(ConfigError);
    expect(existingState(), bad.what).toBe(before);
  });
});
