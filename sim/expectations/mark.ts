import { z } from 'zod';
import { ALL_MARKS, coverageMarks, type Mark } from '../checkers/marks.ts';
import type { ExpectationKind } from './types.ts';

interface MarkSpec {
  kind: 'mark';
  /** A coverage mark (S8), e.g. queue_full, zombie_write_rejected, aging_overtook. */
  mark: Mark;
  /** Reached at least this many times in the run; default 1. */
  atLeast?: number;
  /** And at most this many. */
  atMost?: number;
}

/**
 * S8 per run: a coverage mark reached at least (and at most) so many times. A scenario built to show
 * something states the mark it must reach on every seed, so a green run proves the thing happened.
 * Not reaching it is a liveness failure: the run did not get to what the scenario is for.
 */
export const markReached: ExpectationKind<MarkSpec> = {
  kind: 'mark',
  class: 'liveness',
  description: 'a coverage mark was reached at least (and at most) so many times in the run',
  schema: z
    .strictObject({
      kind: z.literal('mark'),
      mark: z.enum(ALL_MARKS),
      atLeast: z.number().int().min(0).optional(),
      atMost: z.number().int().min(0).optional(),
    })
    .refine((spec) => spec.atMost === undefined || spec.atMost >= (spec.atLeast ?? 1), { message: 'atMost is below atLeast', path: ['atMost'] }),
  check(spec, run) {
    const count = coverageMarks(run)[spec.mark] ?? 0;
    const atLeast = spec.atLeast ?? 1;
    const problems: string[] = [];
    if (count < atLeast) problems.push(`mark ${spec.mark} reached ${count} time(s), expected at least ${atLeast}`);
    if (spec.atMost !== undefined && count > spec.atMost) problems.push(`mark ${spec.mark} reached ${count} time(s), expected at most ${spec.atMost}`);
    return problems;
  },
};
