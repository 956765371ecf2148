import { z } from 'zod';
import { list, probability, strict } from '../schema-kit.ts';
import { busyFault, type BusyFault } from './busy.ts';
import { cancelAtFault, type CancelAtFault } from './cancel-at.ts';
import { errorAtFault, type ErrorAtFault } from './error-at.ts';
import { expireAtFault, type ExpireAtFault } from './expire-at.ts';
import { clockJumpAtFault, type ClockJumpAtFault } from './clock-jump-at.ts';
import { clockJumpFault, type ClockJumpFault } from './clock-jump.ts';
import { diskFullFault, type DiskFullFault } from './disk-full.ts';
import { drainFault, type DrainFault } from './drain.ts';
import type { DuplicateDeliveryRate } from './duplicate-delivery.ts';
import type { HungToolRate } from './hung-tool.ts';
import { ioErrorFault, type IoErrorFault } from './io-error.ts';
import { killAtFault, type KillAtFault } from './kill-at.ts';
import { killFault, type KillFault } from './kill.ts';
import type { LostResponseRate } from './lost-response.ts';
import { pauseAtFault, type PauseAtFault } from './pause-at.ts';
import { pauseFault, type PauseFault } from './pause.ts';
import { powerLossFault, type PowerLossFault } from './power-loss.ts';
import { restartFault, type RestartFault } from './restart.ts';
import { pauseTenantFault, resumeTenantFault, type PauseTenantFault, type ResumeTenantFault } from './tenant-pause.ts';
import type { SlowToolRate } from './slow-tool.ts';
import type { StaleWriteRate } from './stale-write.ts';
import type { ToolErrorRate } from './tool-error.ts';

export { KILL_POINTS, type KillPoint, type PointFaultScope } from './point-scope.ts';

/**
 * A fault plan (S4) is data: timed faults, faults at await points, and per-event rates, each entry the
 * fault of one kind's file. A swarm or per-round plan is drawn per seed into this same shape, so a
 * failing seed's plan can be written out (counterexample files), replayed and shrunk fault by fault;
 * that JSON shape is the replay format, kept readable across versions.
 */

/** Faults that act at a time (`atMs` from the start of the run). */
export type TimedFault = KillFault | PauseFault | RestartFault | ClockJumpFault | BusyFault | PowerLossFault | DiskFullFault | IoErrorFault | PauseTenantFault | ResumeTenantFault | DrainFault;

/** Faults that act when a worker reaches an await point (point-scope.ts). */
export type PointFault = KillAtFault | PauseAtFault | ClockJumpAtFault | CancelAtFault | ExpireAtFault | ErrorAtFault;

/** Probabilities per event, one field per rate kind. */
export type FaultRates = SlowToolRate & HungToolRate & LostResponseRate & DuplicateDeliveryRate & ToolErrorRate & Partial<StaleWriteRate>;

export interface FaultPlan {
  timed: TimedFault[];
  points: PointFault[];
  rates: FaultRates;
}

export const timedFaultSchema = z.discriminatedUnion('kind', [killFault, pauseFault, restartFault, clockJumpFault, busyFault, powerLossFault, diskFullFault, ioErrorFault, pauseTenantFault, resumeTenantFault, drainFault]);
export const pointFaultSchema = z.discriminatedUnion('kind', [killAtFault, pauseAtFault, clockJumpAtFault, cancelAtFault, expireAtFault, errorAtFault]);

/** The rates of a plan: every field but staleWriteProbability (newer than the first counterexample files) is required. */
export const ratesSchema = strict({
  slowToolProbability: probability(),
  hungToolProbability: probability(),
  lostResponseProbability: probability(),
  duplicateDeliveryProbability: probability(),
  toolErrorProbability: probability(),
  staleWriteProbability: probability().optional(),
} satisfies Record<keyof FaultRates, z.ZodType>);

/** An explicit fault plan, as the explicit scenario form and a counterexample file hold it. Worker indexes are checked against the pool separately. */
export const faultPlanSchema = strict(
  { timed: list(timedFaultSchema), points: list(pointFaultSchema), rates: ratesSchema },
  'An explicit fault plan: timed faults, faults at await points, and per-event rates.',
);

export const NO_RATES: FaultRates = Object.freeze({
  slowToolProbability: 0,
  hungToolProbability: 0,
  lostResponseProbability: 0,
  duplicateDeliveryProbability: 0,
  toolErrorProbability: 0,
});

export function emptyPlan(): FaultPlan {
  return { timed: [], points: [], rates: { ...NO_RATES } };
}

/** Faults only count in the safety phase (S5); this is how many a plan holds, for reports and shrinking. */
export function faultCount(plan: FaultPlan): number {
  const rateCount = Object.values(plan.rates).filter((rate) => rate > 0).length;
  return plan.timed.length + plan.points.length + rateCount;
}
