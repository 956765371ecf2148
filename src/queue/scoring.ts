import type { QueueConfig } from './types.ts';

/**
 * Q4: a base priority is an integer in this range, from trusted rules. The one place the range is
 * written: enqueue's validation, the claim's walk over a tenant's levels and the stores' level seeks read
 * it from here; the migrations keep their literal CHECK, which src/store/derived-predicates.test.ts
 * holds to it.
 */
export const PRIORITY_RANGE = { min: 0, max: 30 } as const;

/** SQL: the CHECK on a base priority column, from PRIORITY_RANGE. */
export function priorityCheckSql(column = 'priority'): string {
  return `${column} BETWEEN ${PRIORITY_RANGE.min} AND ${PRIORITY_RANGE.max}`;
}

/**
 * Q4: score = base + min(agingCap, floor(waitMs / agingPeriodMs)). A clock that stepped backwards
 * gives no negative aging. The claim (claim.ts) computes every candidate's score with this function
 * after the store's index seeks found the level heads. The one other place the formula is evaluated is
 * SQL: the PostgreSQL store's read-ahead hint (ReadsFirst.claim) orders the heads by `scoreSql`, written
 * here beside it and checked against it on PGlite (src/store/score-sql.test.ts); the hint only chooses
 * which head's row is read ahead, never the claim. The simulator's I5 checker judges each claim with the same formula
 * written again from the SPEC (sim/checkers/spec-formulas.ts, on purpose not this file), over the whole
 * ready set, so both this function and the claim's pruned walk are tested against the plain definition.
 */
export function score(basePriority: number, enqueuedAt: number, now: number, config: Pick<QueueConfig, 'agingCap' | 'agingPeriodMs'>): number {
  const waitMs = Math.max(0, now - enqueuedAt);
  return basePriority + Math.min(config.agingCap, Math.floor(waitMs / config.agingPeriodMs));
}

/**
 * `score` as a PostgreSQL expression over SQL operands (columns or parameters; each a bigint): the
 * division is integral and its dividend never negative, so it floors as Math.floor does.
 */
export function scoreSql(operands: { base: string; enqueuedAt: string; now: string; agingCap: string; agingPeriodMs: string }): string {
  const { base, enqueuedAt, now, agingCap, agingPeriodMs } = operands;
  return `${base} + LEAST(${agingCap}, GREATEST(0, ${now} - ${enqueuedAt}) / ${agingPeriodMs})`;
}

/** Claim order: higher score first, then earlier enqueue, then smaller id. Negative means `a` goes first. */
export function compareCandidates(
  a: { score: number; enqueuedAt: number; id: number },
  b: { score: number; enqueuedAt: number; id: number },
): number {
  return b.score - a.score || a.enqueuedAt - b.enqueuedAt || a.id - b.id;
}

/** Q16: min(baseDelayMs * 2^attempts, maxDelayMs), times a jitter factor in [0.8, 1.2]. */
export function retryBackoffMs(attempts: number, jitterUnit: number, config: Pick<QueueConfig, 'baseDelayMs' | 'maxDelayMs'>): number {
  const exponential = Math.min(config.baseDelayMs * 2 ** Math.min(attempts, 52), config.maxDelayMs);
  return Math.round(exponential * (0.8 + 0.4 * jitterUnit));
}
