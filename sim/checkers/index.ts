import { i1NoDoubleClaim } from './i1-no-double-claim.ts';
import { i2StaleLeases } from './i2-stale-leases.ts';
import { i3Quotas } from './i3-quotas.ts';
import { i4Capacity } from './i4-capacity.ts';
import { i5Priority, i5Starvation } from './i5-priority.ts';
import { i6BoundedRetries } from './i6-bounded-retries.ts';
import { i7HoldsClosed, i7Settlement } from './i7-settlement.ts';
import { i8EffectsOnce } from './i8-effects-once.ts';
import { i9OneTaskPerKey } from './i9-one-task-per-key.ts';
import { i10Supersede } from './i10-supersede.ts';
import { i11Contiguous, i11Drained } from './i11-no-lost-task.ts';
import { i12UncertainHeld } from './i12-uncertain-held.ts';
import { i13Isolation } from './i13-isolation.ts';
import { i18Sessions } from './i18-sessions.ts';
import { i19FairShare } from './i19-fair-share.ts';
import { i15Budgets } from './i15-budgets.ts';
import { i16Released, i16Reservations } from './i16-reservations.ts';
import { i17PausedTenant } from './i17-paused-tenant.ts';
import { i20Admission, i20DeferredNotLost } from './i20-admission.ts';
import { i21ToolGraph } from './i21-tool-graph.ts';
import { i22Signals } from './i22-signals.ts';
import { storageAtomic } from './storage-atomic.ts';
import { configRefused } from './config-probe.ts';
import { q9LeaseKept } from './q9-lease-kept.ts';
import type { Checker } from './types.ts';

/**
 * Every invariant checker that is a pure function of one finished run (S7), safety first. I14
 * (determinism) needs two runs and lives in i14-determinism.ts.
 */
export const allCheckers: Checker[] = [
  i1NoDoubleClaim,
  i2StaleLeases,
  i3Quotas,
  i4Capacity,
  i5Priority,
  i6BoundedRetries,
  i7Settlement,
  i8EffectsOnce,
  i9OneTaskPerKey,
  i10Supersede,
  i11Contiguous,
  i12UncertainHeld,
  i13Isolation,
  i15Budgets,
  i16Reservations,
  i17PausedTenant,
  i18Sessions,
  i19FairShare,
  i20Admission,
  i21ToolGraph,
  i22Signals,
  storageAtomic,
  configRefused,
  i5Starvation,
  i7HoldsClosed,
  i11Drained,
  i16Released,
  i20DeferredNotLost,
  q9LeaseKept,
];

export {
  i18Sessions,
  i19FairShare,
  i22Signals,
  i1NoDoubleClaim,
  i2StaleLeases,
  i3Quotas,
  i4Capacity,
  i5Priority,
  i5Starvation,
  i6BoundedRetries,
  i7Settlement,
  i7HoldsClosed,
  i8EffectsOnce,
  i9OneTaskPerKey,
  i10Supersede,
  i11Contiguous,
  i11Drained,
  i12UncertainHeld,
  i13Isolation,
  i15Budgets,
  i16Reservations,
  i16Released,
  i17PausedTenant,
  i20Admission,
  i20DeferredNotLost,
  i21ToolGraph,
  storageAtomic,
};
export { checkDeterminism, sameSeedSameTrace } from './i14-determinism.ts';
export { claimDecisions } from './i5-priority.ts';
export { coverageMarks, REQUIRED_MARKS, SCENARIO_MARKS } from './marks.ts';
export type { Checker } from './types.ts';
