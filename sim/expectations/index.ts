import { z } from 'zod';
import type { Violation } from '../report-types.ts';
import type { WorldResult } from '../world.ts';
import { finalState } from './final-state.ts';
import { claimSequence } from './claim-sequence.ts';
import { enqueueResult } from './enqueue-result.ts';
import { eventOrder } from './event-order.ts';
import { everyTask } from './every-task.ts';
import { finalTask } from './final-task.ts';
import { historyCount } from './history-count.ts';
import { incidentCandidates } from './incident-candidates.ts';
import { markReached } from './mark.ts';
import { peakOccupancy } from './peak-occupancy.ts';
import { scoresAtClaim } from './scores-at-claim.ts';
import { staleWrite } from './stale-write.ts';
import { taskPath } from './task-path.ts';
import { maxWait } from './max-wait.ts';
import { agingOvertake } from './aging-overtake.ts';
import { tenantProgress } from './tenant-progress.ts';
import { eventCount } from './event-count.ts';
import { retryBackoff } from './retry-backoff.ts';
import { retryBounds } from './retry-bounds.ts';
import { statesAtRestart } from './states-at-restart.ts';
import { restartDurable } from './restart-durable.ts';
import { drainHandback } from './drain-handback.ts';
import { budgetRestart, claimsReserve, deferredThenRan, reservationsOnce, tenantPaused } from './admission.ts';
import type { ExpectationKind, ExpectationSpec } from './types.ts';

/** Every kind of expectation a scenario may state. A new kind is one file and one line here. */
export const EXPECTATION_KINDS: readonly ExpectationKind<any>[] = [
  finalState,
  maxWait,
  agingOvertake,
  tenantProgress,
  eventCount,
  retryBackoff,
  retryBounds,
  statesAtRestart,
  restartDurable,
  claimSequence,
  scoresAtClaim,
  incidentCandidates,
  enqueueResult,
  markReached,
  peakOccupancy,
  taskPath,
  eventOrder,
  staleWrite,
  finalTask,
  everyTask,
  historyCount,
  deferredThenRan,
  tenantPaused,
  reservationsOnce,
  claimsReserve,
  budgetRestart,
  drainHandback,
];

const byKind = new Map(EXPECTATION_KINDS.map((kind) => [kind.kind as string, kind]));

/** The zod schema of one expectation: a union discriminated by `kind`, built from the kinds above. */
export const expectationSchema: z.ZodType<ExpectationSpec> = z.discriminatedUnion(
  'kind',
  EXPECTATION_KINDS.map((kind) => kind.schema) as unknown as [z.ZodObject<any>, ...z.ZodObject<any>[]],
) as unknown as z.ZodType<ExpectationSpec>;

/** Checks the scenario's expectations against one finished run; a failed one is a violation named `expect:<kind>`. */
export function checkExpectations(run: WorldResult): Violation[] {
  const violations: Violation[] = [];
  for (const [index, spec] of (run.scenario.expect ?? []).entries()) {
    const kind = byKind.get(spec.kind);
    if (kind === undefined) {
      violations.push({ invariant: `expect:${spec.kind}`, kind: 'safety', message: `expect[${index}]: unknown expectation kind '${spec.kind}'` });
      continue;
    }
    for (const message of kind.check(spec, run)) {
      violations.push({ invariant: `expect:${spec.kind}`, kind: kind.class, message: `expect[${index}] ${spec.kind}: ${message}` });
    }
  }
  return violations;
}

export type { ExpectationKind, ExpectationSpec } from './types.ts';
export { oneTaskOf, taskIdsOf } from './tasks.ts';
