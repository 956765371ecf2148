/**
 * The SPEC's formulas, written again from the SPEC for the checkers, on purpose: a checker that
 * imported src/queue/scoring.ts would agree with any bug planted there, so the claim and its judge
 * must not share code. If the SPEC changes, change this file by reading the SPEC, not src/.
 */

/** Q4: score = base + min(agingCap, floor(waitMs / agingPeriodMs)); a wait is never negative. */
export function specScore(base: number, enqueuedAt: number, now: number, config: { agingCap: number; agingPeriodMs: number }): number {
  const waited = now > enqueuedAt ? now - enqueuedAt : 0;
  const aging = Math.floor(waited / config.agingPeriodMs);
  return base + (aging < config.agingCap ? aging : config.agingCap);
}

/** Q4: the higher score wins; ties go to the earlier enqueue, then the smaller task id. Negative: `a` first. */
export function specOrder(a: { score: number; enqueuedAt: number; id: number }, b: { score: number; enqueuedAt: number; id: number }): number {
  if (a.score !== b.score) return a.score > b.score ? -1 : 1;
  if (a.enqueuedAt !== b.enqueuedAt) return a.enqueuedAt < b.enqueuedAt ? -1 : 1;
  return a.id - b.id;
}
