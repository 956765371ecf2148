import { cancelAt, cancelAtFault } from './cancel-at.ts';
import { errorAt, errorAtFault } from './error-at.ts';
import { expireAt, expireAtFault } from './expire-at.ts';
import { clockJumpAt, clockJumpAtFault } from './clock-jump-at.ts';
import { z } from 'zod';
import type { SeededRandom } from '../random.ts';
import type { ScenarioSpec } from '../scenario.ts';
import { roundsPartOf } from '../workloads/index.ts';
import { list, part } from '../schema-kit.ts';
import { busy, busyFault } from './busy.ts';
import { clockJump, clockJumpFault } from './clock-jump.ts';
import { diskFull, diskFullFault } from './disk-full.ts';
import { drain, drainFault } from './drain.ts';
import { duplicateDelivery, duplicateDeliveryFault } from './duplicate-delivery.ts';
import { hungTool, hungToolFault } from './hung-tool.ts';
import type { FaultProblem, PointInjector, RateInjector, TimedInjector } from './injector.ts';
import { ioError, ioErrorFault } from './io-error.ts';
import { killAt, killAtFault } from './kill-at.ts';
import { kill, killFault } from './kill.ts';
import { lostResponse, lostResponseFault } from './lost-response.ts';
import { pauseAt, pauseAtFault } from './pause-at.ts';
import { pause, pauseFault } from './pause.ts';
import { NO_RATES, pointFaultSchema, ratesSchema, timedFaultSchema, type FaultPlan, type FaultRates, type PointFault, type TimedFault } from './plan.ts';
import { powerLoss, powerLossFault } from './power-loss.ts';
import { restart, restartFault } from './restart.ts';
import { drawRoundPlan, killPerRoundPart, pausePerRoundPart, roundFaultSpecOf } from './rounds.ts';
import { slowTool, slowToolFault } from './slow-tool.ts';
import { staleWrite, staleWriteFault } from './stale-write.ts';
import { drawSwarmPlan, swarmPart, swarmSpecOf } from './swarm.ts';
import { toolError, toolErrorFault } from './tool-error.ts';
import { pauseTenant, pauseTenantFault, resumeTenant, resumeTenantFault } from './tenant-pause.ts';

/**
 * The fault kinds, one file each, and the fault parts a scenario file lists under `faults`: every
 * kind as a part of its own (`{ "kind": "kill", "atMs": 20000 }`, `{ "kind": "tool-error",
 * "probability": 0.25 }`), a whole plan (`fault-plan`, e.g. pasted from a counterexample), or faults
 * drawn per seed (`swarm`, `kill-per-round`, `pause-per-round`), which stand alone.
 */
export const TIMED_FAULTS: { [Kind in TimedFault['kind']]: TimedInjector<Extract<TimedFault, { kind: Kind }>> } = {
  kill,
  pause,
  restart,
  'clock-jump': clockJump,
  busy,
  'power-loss': powerLoss,
  'disk-full': diskFull,
  'io-error': ioError,
  'pause-tenant': pauseTenant,
  'resume-tenant': resumeTenant,
  drain,
};

export const POINT_FAULTS: { [Kind in PointFault['kind']]: PointInjector<Extract<PointFault, { kind: Kind }>> } = { 'kill-at': killAt, 'pause-at': pauseAt, 'clock-jump-at': clockJumpAt, 'cancel-at': cancelAt, 'expire-at': expireAt, 'error-at': errorAt };

export const RATE_FAULTS: RateInjector<keyof FaultRates>[] = [slowTool, hungTool, lostResponse, duplicateDelivery, toolError, staleWrite];

/** `{ "kind": "fault-plan", "timed": [...], "points": [...], "rates": {...} }`: a plan as a counterexample records it. */
export const faultPlanPart = part(
  'fault-plan',
  { timed: list(timedFaultSchema).default([]), points: list(pointFaultSchema).default([]), rates: ratesSchema.partial().default({}) },
  'A whole fault plan (timed faults, faults at await points, rates), e.g. the plan of a counterexample file.',
);

export const faultPartSchema = z.discriminatedUnion('kind', [
  killFault,
  pauseFault,
  restartFault,
  clockJumpFault,
  busyFault,
  powerLossFault,
  diskFullFault,
  ioErrorFault,
  pauseTenantFault,
  resumeTenantFault,
  drainFault,
  killAtFault,
  pauseAtFault,
  clockJumpAtFault,
  cancelAtFault,
  expireAtFault,
  errorAtFault,
  slowToolFault,
  hungToolFault,
  lostResponseFault,
  duplicateDeliveryFault,
  toolErrorFault,
  staleWriteFault,
  faultPlanPart,
  swarmPart,
  killPerRoundPart,
  pausePerRoundPart,
]);
export type FaultPart = z.output<typeof faultPartSchema>;

export const faultPartsSchema = list(faultPartSchema, 0, 'a list of fault parts').meta({
  description: 'Fault parts: faults of one kind each, a whole fault-plan, or faults drawn per seed (swarm, kill-per-round, pause-per-round, each alone). Default: none.',
});

const DRAWN = new Set(['swarm', 'kill-per-round', 'pause-per-round']);
const RATE_FIELDS = new Map(RATE_FAULTS.map((injector) => [injector.kind, injector.field]));

/** The faults a list of parts resolves to: the one drawn source, or one explicit plan of every other part, in file order. */
export function resolveFaults(parts: readonly FaultPart[]): ScenarioSpec['faults'] {
  const [first] = parts;
  if (first?.kind === 'swarm') return { swarm: swarmSpecOf(first) };
  if (first?.kind === 'kill-per-round' || first?.kind === 'pause-per-round') return { perRound: roundFaultSpecOf(first) };
  const plan: FaultPlan = { timed: [], points: [], rates: { ...NO_RATES } };
  for (const item of parts) {
    if (item.kind === 'fault-plan') {
      plan.timed.push(...item.timed);
      plan.points.push(...item.points);
      Object.assign(plan.rates, item.rates);
    } else if (item.kind in TIMED_FAULTS) plan.timed.push(item as TimedFault);
    else if (item.kind in POINT_FAULTS) plan.points.push(item as PointFault);
    else {
      const field = RATE_FIELDS.get(item.kind);
      if (field !== undefined) plan.rates[field] = (item as { probability: number }).probability;
    }
  }
  return { plan };
}

/** The plan one seed of a scenario runs: its explicit plan, or the one this seed draws (a swarm, or one fault per round). */
export function planOf(scenario: ScenarioSpec, random: SeededRandom): FaultPlan {
  const { faults } = scenario;
  if ('plan' in faults) return structuredClone(faults.plan);
  if ('swarm' in faults) return drawSwarmPlan(random.fork('swarm'), faults.swarm, scenario.workers.count, scenario.phases.safetyMs);
  const rounds = roundsPartOf(scenario.workload);
  if (rounds === undefined) throw new RangeError(`scenario ${scenario.name}: per-round faults need a rounds workload`);
  return drawRoundPlan(random.fork('round-faults'), faults.perRound, rounds, { modelMs: scenario.model.latencyMs, toolMs: scenario.tools.latencyMs });
}

/** Problems of the parts as a list (paths inside `faults`): a drawn source not alone, a rate given twice. */
export function faultListProblems(parts: readonly FaultPart[]): FaultProblem[] {
  const problems: FaultProblem[] = [];
  const drawnAt = parts.findIndex((item) => DRAWN.has(item.kind));
  if (drawnAt >= 0 && parts.length > 1) {
    const other = drawnAt === 0 ? 1 : 0;
    problems.push({ path: [other, 'kind'], message: `cannot be combined with the ${parts[drawnAt]!.kind} at faults[${drawnAt}], which draws every fault per seed: keep one or the other` });
  }
  const rateAt = new Map<string, number>();
  parts.forEach((item, index) => {
    const fields = item.kind === 'fault-plan' ? Object.keys(item.rates) : RATE_FIELDS.has(item.kind) ? [RATE_FIELDS.get(item.kind)!] : [];
    for (const field of fields) {
      const earlier = rateAt.get(field);
      if (earlier !== undefined) problems.push({ path: item.kind === 'fault-plan' ? [index, 'rates', field] : [index, 'kind'], message: `${field} is already given at faults[${earlier}]` });
      else rateAt.set(field, index);
    }
  });
  return problems;
}

/** The timed faults of the parts with their paths inside `faults`, for the checks against the pool and the phases. */
export function timedFaultsOf(parts: readonly FaultPart[]): { fault: TimedFault; path: (string | number)[] }[] {
  return parts.flatMap((item, index) => {
    if (item.kind === 'fault-plan') return item.timed.map((fault, inner) => ({ fault, path: [index, 'timed', inner] }));
    return item.kind in TIMED_FAULTS ? [{ fault: item as TimedFault, path: [index] }] : [];
  });
}

/** A timed fault against the pool and the safety phase (faults act only in it, S5). */
export function timedFaultProblems(fault: TimedFault, workerCount: number, safetyMs: number): FaultProblem[] {
  const injector = TIMED_FAULTS[fault.kind] as TimedInjector<TimedFault>;
  const problems = injector.problems?.(fault, workerCount) ?? [];
  if (fault.atMs >= safetyMs) problems.push({ path: ['atMs'], message: `must be below phases.safetyMs (${safetyMs}): faults act only in the safety phase, got ${fault.atMs}` });
  return problems;
}

/** Cross-field problems of a fault plan against a pool of workerCount workers, with paths inside the plan. */
export function planProblems(plan: FaultPlan, workerCount: number): FaultProblem[] {
  return plan.timed.flatMap((fault, index) => ((TIMED_FAULTS[fault.kind] as TimedInjector<TimedFault>).problems?.(fault, workerCount) ?? []).map((problem) => ({ ...problem, path: ['timed', index, ...problem.path] })));
}

/** The explicit form's `faults`: exactly one of plan, swarm and perRound (checked in scenario-explicit.ts). */
export const FAULT_SOURCES = ['plan', 'swarm', 'perRound'] as const;
