import { REQUIRED_MARKS } from '../checkers/index.ts';
import { DEFAULT_SCENARIO } from '../scenarios/registry.ts';
import type { ScenarioTally } from './tally.ts';

/**
 * The S8 rule of `leasehold check`: REQUIRED_MARKS were measured on the `mixed` scenario, so they are
 * only demanded when this process ran `mixed` (alone, with others, or as part of the whole catalogue)
 * for at least COVERAGE_SEEDS_MIN seeds. Each required mark was reached in at least ~23% of mixed
 * seeds, so 50 seeds miss one by chance with probability below 1e-5; fewer seeds (a quick run, or a
 * shard of a small run) would make exit 4 a coin toss, so below the bound the rule is reported as not
 * applied. Marks are summed over every scenario of the run.
 */
export const COVERAGE_SEEDS_MIN = 50;

export type CoverageOutcome =
  | { enforced: false; reason: string; required: readonly string[] }
  | { enforced: true; required: readonly string[]; missing: string[] };

export function judgeCoverage(rows: readonly ScenarioTally[], marks: Record<string, number>): CoverageOutcome {
  const required = [...REQUIRED_MARKS];
  const anchor = rows.find((row) => row.scenario === DEFAULT_SCENARIO);
  if (anchor === undefined) {
    return { enforced: false, required, reason: `required marks apply to runs that include ${DEFAULT_SCENARIO} (or the whole catalogue)` };
  }
  if (anchor.seeds < COVERAGE_SEEDS_MIN) {
    return { enforced: false, required, reason: `${anchor.seeds} ${DEFAULT_SCENARIO} seeds ran here; required marks apply from ${COVERAGE_SEEDS_MIN}` };
  }
  return { enforced: true, required, missing: required.filter((mark) => (marks[mark] ?? 0) === 0) };
}
