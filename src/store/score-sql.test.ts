import { PGlite } from '@electric-sql/pglite';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { PRIORITY_RANGE, score, scoreSql } from '../queue/scoring.ts';

/**
 * Q4's score is written twice on purpose only in the simulator's checker; in src/ it is one formula in
 * two notations, side by side in scoring.ts: `score` for the claim, `scoreSql` for the PostgreSQL
 * store's read-ahead hint. This evaluates the SQL on PostgreSQL (PGlite) and holds it to the function.
 */
const db = new PGlite();
afterAll(() => db.close());

const EXPRESSION = scoreSql({ base: '$1::bigint', enqueuedAt: '$2::bigint', now: '$3::bigint', agingCap: '$4::bigint', agingPeriodMs: '$5::bigint' });

async function sqlScore(base: number, enqueuedAt: number, now: number, agingCap: number, agingPeriodMs: number): Promise<number> {
  const { rows } = await db.query<{ s: string | number }>(`SELECT (${EXPRESSION})::text AS s`, [base, enqueuedAt, now, agingCap, agingPeriodMs]);
  return Number(rows[0]!.s);
}

describe('scoreSql', () => {
  it('is score(), on PostgreSQL, for waits forward and clocks stepped back', async () => {
    const at = 1_700_000_000_000;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: PRIORITY_RANGE.min, max: PRIORITY_RANGE.max }),
        fc.integer({ min: -3_600_000, max: 10 * 86_400_000 }),
        fc.integer({ min: 0, max: 100 }),
        fc.integer({ min: 1, max: 3_600_000 }),
        async (base, waited, agingCap, agingPeriodMs) => {
          const expected = score(base, at, at + waited, { agingCap, agingPeriodMs });
          expect(await sqlScore(base, at, at + waited, agingCap, agingPeriodMs)).toBe(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('floors at whole periods and caps at agingCap', async () => {
    expect(await sqlScore(0, 0, 59_999, 30, 60_000)).toBe(0);
    expect(await sqlScore(0, 0, 60_000, 30, 60_000)).toBe(1);
    expect(await sqlScore(5, 0, 10 * 3_600_000, 30, 60_000)).toBe(35);
    expect(await sqlScore(5, 1_000, 0, 30, 60_000)).toBe(5);
  });
});
