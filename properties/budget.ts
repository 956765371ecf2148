/**
 * How many simulated runs the property suites make. One World run counts once; the determinism suite
 * runs each case twice and so spends two per case.
 *
 * Default: 2,000 simulated runs in total across properties/*.property.test.ts: safety 800,
 * durability 600, priority 400, determinism 100 cases (200 runs). Measured wall times are in
 * properties/README.md (56 s with two vitest workers, 133 s with one, on a two-core machine).
 * LEASEHOLD_RUNS=N sets the total instead, e.g. LEASEHOLD_RUNS=20000 for a nightly run; each suite
 * keeps its share. (properties/queue-model.test.ts reads the same variable as its own per-property
 * count.)
 */
export const DEFAULT_TOTAL_RUNS = 2_000;

export type SuiteName = 'safety' | 'durability' | 'priority' | 'determinism';

/** Each suite's share of the total, and the World runs one case costs. */
const SHARES: Record<SuiteName, { share: number; runsPerCase: number }> = {
  safety: { share: 0.4, runsPerCase: 1 },
  durability: { share: 0.3, runsPerCase: 1 },
  priority: { share: 0.2, runsPerCase: 1 },
  determinism: { share: 0.1, runsPerCase: 2 },
};

export function totalRuns(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.LEASEHOLD_RUNS;
  if (raw === undefined || raw === '') return DEFAULT_TOTAL_RUNS;
  const total = Number(raw);
  if (!Number.isSafeInteger(total) || total < 1) throw new Error(`LEASEHOLD_RUNS must be a positive integer, got ${JSON.stringify(raw)}`);
  return total;
}

/** Cases (fast-check numRuns) for one suite: its share of the total, at least one. */
export function casesFor(suite: SuiteName, env: NodeJS.ProcessEnv = process.env): number {
  const { share, runsPerCase } = SHARES[suite];
  return Math.max(1, Math.round((totalRuns(env) * share) / runsPerCase));
}

/** The simulated runs `casesFor` adds up to across all suites (without shrinking). */
export function plannedRuns(env: NodeJS.ProcessEnv = process.env): number {
  return (Object.keys(SHARES) as SuiteName[]).reduce((sum, suite) => sum + casesFor(suite, env) * SHARES[suite].runsPerCase, 0);
}

/**
 * The fast-check seed: LEASEHOLD_SEED when set (to regenerate the same cases), otherwise fast-check
 * draws one and the test name shows it. A failure needs neither: its counterexample file replays it.
 */
export function fastCheckSeed(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env.LEASEHOLD_SEED;
  if (raw === undefined || raw === '') return undefined;
  const seed = Number(raw);
  if (!Number.isSafeInteger(seed)) throw new Error(`LEASEHOLD_SEED must be an integer, got ${JSON.stringify(raw)}`);
  return seed;
}
