import { REQUIRED_MARKS, SCENARIO_MARKS } from '../checkers/index.ts';
import { DEFAULT_SCENARIO } from '../scenarios/registry.ts';
import type { ScenarioTally } from './tally.ts';
import { SQLITE_ONLY_MARKS, type SimStore } from '../store/pglite.ts';

/**
 * The S8 rule of `leasehold check`: REQUIRED_MARKS were measured on the `mixed` scenario, so they are
 * only demanded when this process ran `mixed` (alone, with others, or as part of the whole catalogue)
 * for at least COVERAGE_SEEDS_MIN seeds. Each required mark was reached in at least ~23% of mixed
 * seeds, so 50 seeds miss one by chance with probability below 1e-5; fewer seeds (a quick run, or a
 * shard of a small run) would make exit 4 a coin toss, so below the bound the rule is reported as not
 * applied. Marks are summed over every scenario of the run.
 *
 * SCENARIO_MARKS are anchored the same way to their own scenario: demanded when it ran at least
 * COVERAGE_SEEDS_MIN seeds here, whether or not mixed did.
 */
export const COVERAGE_SEEDS_MIN = 50;

export type CoverageOutcome =
  | { enforced: false; reason: string; required: readonly string[] }
  | { enforced: true; required: readonly string[]; missing: string[] };

export function judgeCoverage(rows: readonly ScenarioTally[], marks: Record<string, number>, store: SimStore = 'sqlite'): CoverageOutcome {
  const seedsOf = (scenario: string) => rows.find((row) => row.scenario === scenario)?.seeds;
  const anchored = Object.entries(SCENARIO_MARKS)
    .filter(([scenario]) => (seedsOf(scenario) ?? 0) >= COVERAGE_SEEDS_MIN)
    .flatMap(([, scenarioMarks]) => scenarioMarks);
  const mixedSeeds = seedsOf(DEFAULT_SCENARIO);
  const mixedApplies = mixedSeeds !== undefined && mixedSeeds >= COVERAGE_SEEDS_MIN;
  const required = [...new Set([...(mixedApplies ? REQUIRED_MARKS : []), ...anchored])];
  if (required.length === 0) {
    const allRequired = [...new Set([...REQUIRED_MARKS, ...Object.values(SCENARIO_MARKS).flat()])];
    const reason =
      mixedSeeds === undefined
        ? `required marks apply to runs that include ${DEFAULT_SCENARIO} (or the whole catalogue)`
        : `${mixedSeeds} ${DEFAULT_SCENARIO} seeds ran here; required marks apply from ${COVERAGE_SEEDS_MIN}`;
    return { enforced: false, required: allRequired, reason };
  }
  // On another store the marks of faults that act beneath SQLite cannot be reached (sim/store/pglite.ts).
  const demanded = store === 'sqlite' ? required : required.filter((mark) => !SQLITE_ONLY_MARKS.has(mark));
  return { enforced: true, required: demanded, missing: demanded.filter((mark) => (marks[mark] ?? 0) === 0) };
}
