import { z } from 'zod';
import type { ExpectationKind } from './types.ts';
import { describeRange, inRange, labelsById, nameOf, numberOrRange, type NumberOrRange } from './values.ts';

interface ClaimRow {
  /** The label of the task this claim took; absent: any task. */
  label?: string;
  /** The score the claim recorded (Q4: base + capped aging), exact or [min, max]. */
  score?: NumberOrRange;
  /** The queue wait the claim recorded (Q7: claim time - enqueue time), exact or [min, max]. */
  waitMs?: NumberOrRange;
  /** The generation the claim granted, exact or [min, max]. */
  generation?: NumberOrRange;
}

interface ClaimSequence {
  kind: 'claim-sequence';
  /** The run's claims in commit order, from the first: row k describes the k-th claim. */
  claims: ClaimRow[];
  /** Count every claim, takeovers included; default false: only each task's first claim. */
  allClaims?: boolean;
  /** The run has exactly as many (counted) claims as rows; default false: the rows are a prefix. */
  exhaustive?: boolean;
}

/**
 * The order of claims, and what each claim recorded: e.g. seed 000's "the group meal is claimed
 * first, waits 5, 8, 11 and 14 s", or seed 003's "L1, then H1, then M1". Read from the `claimed`
 * events in commit order, so it checks what the queue decided and recorded, not what was planned.
 */
export const claimSequence: ExpectationKind<ClaimSequence> = {
  kind: 'claim-sequence',
  class: 'safety',
  description: "the run's first claims, in commit order, took these tasks, with these recorded scores, queue waits and generations",
  schema: z.strictObject({
    kind: z.literal('claim-sequence'),
    claims: z
      .array(
        z.strictObject({
          label: z.string().min(1).optional(),
          score: numberOrRange.optional(),
          waitMs: numberOrRange.optional(),
          generation: numberOrRange.optional(),
        }),
      )
      .min(1),
    allClaims: z.boolean().optional(),
    exhaustive: z.boolean().optional(),
  }),
  check(spec, run) {
    const labels = labelsById(run);
    const seen = new Set<number>();
    const claims = run.events.filter((event) => {
      if (event.type !== 'claimed') return false;
      if (spec.allClaims === true) return true;
      if (seen.has(event.taskId)) return false;
      seen.add(event.taskId);
      return true;
    });
    const problems: string[] = [];
    const counted = spec.allClaims === true ? 'claims' : 'first claims';
    spec.claims.forEach((row, index) => {
      const event = claims[index];
      const where = `claim #${index + 1}`;
      if (event === undefined) {
        problems.push(`${where}: the run made only ${claims.length} ${counted}`);
        return;
      }
      const label = labels.get(event.taskId);
      const what = `${where} took ${nameOf(labels, event.taskId)} at +${event.at - run.startMs} ms`;
      if (row.label !== undefined && label !== row.label) problems.push(`${what}, expected '${row.label}'`);
      if (row.score !== undefined && !inRange(event.data.score, row.score)) problems.push(`${what} with score ${String(event.data.score)}, expected ${describeRange(row.score)}`);
      if (row.waitMs !== undefined && !inRange(event.data.queueWaitMs, row.waitMs)) problems.push(`${what} after a wait of ${String(event.data.queueWaitMs)} ms, expected ${describeRange(row.waitMs)}`);
      if (row.generation !== undefined && !inRange(event.data.generation, row.generation)) problems.push(`${what} as generation ${String(event.data.generation)}, expected ${describeRange(row.generation)}`);
    });
    if (spec.exhaustive === true && claims.length !== spec.claims.length) problems.push(`the run made ${claims.length} ${counted}, expected exactly ${spec.claims.length}`);
    return problems;
  },
};
