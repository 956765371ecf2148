import type { QueueConfig } from './types.ts';

/**
 * Q4: score = base + min(agingCap, floor(waitMs / agingPeriodMs)). A clock that stepped backwards
 * gives no negative aging. The same formula is written in SQL in store/statements.ts (claim); the
 * simulator's I5 checker uses this one, so the two are tested against each other.
 */
export function score(basePriority: number, enqueuedAt: number, now: number, config: Pick<QueueConfig, 'agingCap' | 'agingPeriodMs'>): number {
  const waitMs = Math.max(0, now - enqueuedAt);
  return basePriority + Math.min(config.agingCap, Math.floor(waitMs / config.agingPeriodMs));
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
