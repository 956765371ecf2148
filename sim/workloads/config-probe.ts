import Database from 'better-sqlite3';
import { resolveConfig } from '../../src/queue/config.ts';
import { ConfigError } from '../../src/queue/errors.ts';
import type { QueueConfig } from '../../src/queue/types.ts';
import { openWorkQueue } from '../../src/work-queue.ts';
import { SeededRandom, type Seed } from '../random.ts';

/**
 * Invalid configurations, drawn too (issue 35 item 1). The configuration swarm draws only from the valid
 * space, so a validation rule that is lost (the lease/heartbeat ratio of Q9, say) would never be seen:
 * every configuration the gate runs is one the lost rule would have accepted anyway. So every seed of
 * the swarm also takes its drawn configuration, breaks each rule of BREAKAGES in turn (what a broken
 * value is comes from the seed's own stream `config-swarm-invalid`, so no other draw of the seed
 * moves), and opens a queue with each through the public `openWorkQueue` on a fresh in-memory
 * database: a few milliseconds a seed, and a rule lost is seen in the first seed. The refusal must be
 * a ConfigError naming the option the rule is about, and the database must hold nothing afterwards
 * (the schema is created only for a configuration that passed). Each outcome is a `config-probe` note
 * of the history, judged by checkers/config-probe.ts; the run itself goes on with the valid
 * configuration.
 */

/** One rule of resolveConfig, and how to break it from a valid configuration. */
interface Breakage {
  rule: string;
  /** The option the refusal must name. */
  field: string;
  /** What to pass: the valid configuration with the rule broken (a fresh object). */
  broken(valid: QueueConfig, random: SeededRandom): Record<string, unknown>;
}

/** The options whose value must be a positive integer (src/queue/config.ts), each breakable by 0 or a fraction. */
const POSITIVE_OPTIONS = ['capacity', 'globalLimit', 'perTenantLimit', 'leaseMs', 'heartbeatMs', 'agingPeriodMs', 'maxAttempts', 'maxDeliveries', 'baseDelayMs', 'maxDelayMs', 'maxRetryAgeMs', 'maxInputBytes', 'incidentBucketMs', 'tokensPerCredit', 'holdTtlMs', 'stuckAfterMs'] as const;

export const BREAKAGES: readonly Breakage[] = [
  { rule: 'Q9: a lease holds at least three heartbeats', field: 'leaseMs', broken: (valid) => ({ ...valid, heartbeatMs: Math.floor(valid.leaseMs / 3) + 1 }) },
  { rule: 'Q6: the per-tenant limit is within the global limit', field: 'perTenantLimit', broken: (valid) => ({ ...valid, perTenantLimit: valid.globalLimit + 1 }) },
  { rule: 'Q3: the global limit is within the capacity', field: 'globalLimit', broken: (valid) => ({ ...valid, globalLimit: valid.capacity + 1 }) },
  {
    rule: 'Q16: the largest backoff is at least the base delay',
    field: 'maxDelayMs',
    broken: (valid) => (valid.baseDelayMs >= 2 ? { ...valid, maxDelayMs: valid.baseDelayMs - 1 } : { ...valid, baseDelayMs: 2, maxDelayMs: 1 }),
  },
  {
    rule: 'a count or a duration is a positive integer',
    field: '(the option drawn)',
    broken: (valid, random) => {
      const option = random.pick(POSITIVE_OPTIONS);
      return { ...valid, [option]: random.chance(0.5) ? 0 : valid[option] + 0.5 };
    },
  },
  { rule: 'an unknown option is refused, not ignored', field: 'leaseMS', broken: (valid) => ({ ...valid, leaseMS: valid.leaseMs }) },
  { rule: "reconciliation is 'hold' or 'auto'", field: 'reconciliation', broken: (valid) => ({ ...valid, reconciliation: 'manual' }) },
];

/** What one probe found: the `config-probe` note's data. */
export interface ConfigProbe {
  rule: string;
  /** The option the refusal had to name. */
  expected: string;
  /** refused: a ConfigError; accepted: the queue opened; error: something else was thrown. */
  outcome: 'refused' | 'accepted' | 'error';
  /** The ConfigError's field, or the other error's name. */
  named?: string;
  message?: string;
  /** Tables in the database after the attempt (sqlite_master). */
  tables: number;
}

/** The probes of one seed of the configuration swarm: each rule of BREAKAGES broken in turn, in order. */
export function probeInvalidConfigs(seed: Seed, valid: Partial<QueueConfig>): ConfigProbe[] {
  const random = new SeededRandom(seed).fork('config-swarm-invalid');
  const resolved = resolveConfig(valid);
  return BREAKAGES.map((breakage) => {
    const config = breakage.broken(resolved, random);
    const expected = breakage.field === '(the option drawn)' ? (POSITIVE_OPTIONS.find((option) => config[option] !== resolved[option]) ?? breakage.field) : breakage.field;
    return probe(breakage.rule, expected, config);
  });
}

function probe(rule: string, expected: string, config: Record<string, unknown>): ConfigProbe {
  const db = new Database(':memory:');
  try {
    let outcome: ConfigProbe['outcome'] = 'accepted';
    let named: string | undefined;
    let message: string | undefined;
    try {
      openWorkQueue({ db, config: config as Partial<QueueConfig>, clock: { now: () => 0 }, random: { next: () => 0 } });
    } catch (error) {
      outcome = error instanceof ConfigError ? 'refused' : 'error';
      named = error instanceof ConfigError ? error.field : error instanceof Error ? error.name : typeof error;
      message = error instanceof Error ? error.message : String(error);
    }
    const tables = (db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number }).n;
    return { rule, expected, outcome, ...(named === undefined ? {} : { named }), ...(message === undefined ? {} : { message }), tables };
  } finally {
    db.close();
  }
}
