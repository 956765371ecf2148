/**
 * Arbitraries for the simulation properties: scenario parameters derived from `mixed`, an explicit
 * fault plan, and a seed. Everything that can be removed is an array or a count that shrinks toward
 * empty or one, so a failing case shrinks to the fewest faults and the fewest tasks that still fail.
 *
 * Dependent values (a fault's time inside the safety window, a worker index below the worker count,
 * perTenantLimit <= globalLimit <= capacity, leaseMs >= 3 * heartbeatMs) are generated independently
 * and fitted in a `map`, never with `chain`: `map` keeps every part shrinking on its own.
 */
import fc from 'fast-check';
import type { QueueConfig } from '../src/queue/types.ts';
import { KILL_POINTS, type FaultPlan, type FaultRates, type PointFault, type TimedFault } from '../sim/faults/plan.ts';
import type { ScenarioSpec } from '../sim/scenario.ts';
import { catalogueScenario } from '../sim/scenarios/registry.ts';

const mixed = catalogueScenario('mixed');

/** One simulated run: the full scenario (its faults are the plan), the plan the World is given, and the seed. */
export interface SimulationCase {
  scenario: ScenarioSpec;
  plan: FaultPlan;
  seed: string;
}

const TENANTS = ['acme', 'globex', 'initech'] as const;
/** Bounds of the generated safety phase: a short one, so a run stays cheap (S5). */
export const SAFETY_MS_MIN = 60_000;
export const SAFETY_MS_MAX = 120_000;
export const WORKERS_MAX = 4;

/** Upper bounds on how many faults of each kind a plan holds; 0 leaves that kind out. */
export interface FaultPlanConstraints {
  /** Faults fire in [0, safetyMs). */
  safetyMs: number;
  /** Worker indexes are drawn below this. */
  workers: number;
  kills?: number;
  pauses?: number;
  restarts?: number;
  clockJumps?: number;
  busyWindows?: number;
  killsAt?: number;
  pausesAt?: number;
  /** Whether the per-event rates may be non-zero (each rate is off or on, swarm style). */
  rates?: boolean;
}

/** A mix of every kind, about as many as a swarm seed of `mixed` draws. */
export const BALANCED_FAULTS = { kills: 3, pauses: 2, restarts: 1, clockJumps: 1, busyWindows: 1, killsAt: 3, pausesAt: 1, rates: true } as const;
/** Kills and pauses of both forms, and restarts: what durability (retries, settlement, effects, uncertain) must survive. */
export const CRASH_HEAVY_FAULTS = { kills: 5, pauses: 4, restarts: 2, clockJumps: 1, busyWindows: 1, killsAt: 5, pausesAt: 3, rates: true } as const;
/** Few faults: priority order is judged at every claim, faults only reshuffle the ready set. */
export const LIGHT_FAULTS = { kills: 2, pauses: 1, restarts: 0, clockJumps: 1, busyWindows: 1, killsAt: 1, pausesAt: 0, rates: true } as const;

const atMs = (safetyMs: number) => fc.integer({ min: 0, max: safetyMs - 1 });
const workerIndex = (workers: number) => fc.integer({ min: 0, max: workers - 1 });
const reviveAfterMs = fc.integer({ min: 500, max: 20_000 });

function timedFaults(constraints: FaultPlanConstraints): fc.Arbitrary<TimedFault[]> {
  const { safetyMs, workers } = constraints;
  const kill = fc.record({ kind: fc.constant('kill' as const), atMs: atMs(safetyMs), worker: workerIndex(workers), reviveAfterMs });
  // Pauses past the 30 s default lease make zombies; short ones only delay heartbeats.
  const pause = fc.record({ kind: fc.constant('pause' as const), atMs: atMs(safetyMs), worker: workerIndex(workers), durationMs: fc.integer({ min: 2_000, max: 60_000 }) });
  const restart = fc.record({ kind: fc.constant('restart' as const), atMs: atMs(safetyMs), downMs: fc.integer({ min: 100, max: 3_000 }) });
  const clockJump = fc.record({ kind: fc.constant('clock-jump' as const), atMs: atMs(safetyMs), deltaMs: fc.integer({ min: -5_000, max: 45_000 }) });
  const busy = fc.record({
    kind: fc.constant('busy' as const),
    atMs: atMs(safetyMs),
    durationMs: fc.integer({ min: 1_000, max: 30_000 }),
    probability: fc.integer({ min: 5, max: 50 }).map((percent) => percent / 100),
  });
  const kinds: [fc.Arbitrary<TimedFault>, number | undefined][] = [
    [kill, constraints.kills],
    [pause, constraints.pauses],
    [restart, constraints.restarts],
    [clockJump, constraints.clockJumps],
    [busy, constraints.busyWindows],
  ];
  const arrays = kinds.map(([fault, maxLength = 0]) => fc.array(fault, { maxLength }));
  return fc.tuple(...arrays).map((lists) => lists.flat().sort((a, b) => a.atMs - b.atMs));
}

function pointFaults(constraints: FaultPlanConstraints): fc.Arbitrary<PointFault[]> {
  const scope = { point: fc.constantFrom(...KILL_POINTS), occurrence: fc.integer({ min: 1, max: 12 }) };
  const killAt = fc.record({ kind: fc.constant('kill-at' as const), ...scope, reviveAfterMs });
  const pauseAt = fc.record({ kind: fc.constant('pause-at' as const), ...scope, durationMs: fc.integer({ min: 2_000, max: 60_000 }) });
  return fc
    .tuple(fc.array(killAt, { maxLength: constraints.killsAt ?? 0 }), fc.array(pauseAt, { maxLength: constraints.pausesAt ?? 0 }))
    .map(([kills, pauses]) => [...kills, ...pauses]);
}

/** A rate that is off (0) or on; shrinking turns it off, then lowers it. */
function rate(maxPerMille: number, allowed: boolean): fc.Arbitrary<number> {
  if (!allowed) return fc.constant(0);
  return fc.tuple(fc.boolean(), fc.integer({ min: 1, max: maxPerMille })).map(([on, perMille]) => (on ? perMille / 1000 : 0));
}

function faultRates(allowed: boolean): fc.Arbitrary<FaultRates> {
  return fc.record({
    slowToolProbability: rate(200, allowed),
    hungToolProbability: rate(50, allowed),
    lostResponseProbability: rate(50, allowed),
    duplicateDeliveryProbability: rate(200, allowed),
    toolErrorProbability: rate(100, allowed),
  });
}

/** An explicit fault plan: each kind an array of timed or point faults, every time inside the safety window. */
export function faultPlanArbitrary(constraints: FaultPlanConstraints): fc.Arbitrary<FaultPlan> {
  return fc.record({ timed: timedFaults(constraints), points: pointFaults(constraints), rates: faultRates(constraints.rates ?? false) });
}

/** Seeds for the World's streams: short strings, so a counterexample file stays readable. */
export const seedArbitrary: fc.Arbitrary<string> = fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789'), minLength: 1, maxLength: 8 });

/** Knobs a suite turns to bias the generated scenarios toward what it checks. */
export interface ScenarioConstraints {
  topicsMax?: number;
  /** Base priorities spread over 0..30 with aging fast enough to matter within the run (I5). */
  agingHeavy?: boolean;
}

interface ScenarioParameters {
  tenants: number;
  topics: number;
  workers: number;
  slots: number;
  newVersionPercent: number;
  writePercent: number;
  stepsMax: number;
  globalLimit: number;
  perTenantLimit: number;
  capacityExtra: number;
  heartbeatMs: number;
  leaseHeartbeats: number;
  reconciliation: QueueConfig['reconciliation'];
  graceMs: number;
  maxAttempts: number;
  agingPeriodMs: number;
  agingCap: number;
  priorityLow: number;
  priorityHigh: number;
  arrivalPercent: number;
  safetyMs: number;
  budgets: { seats: number; bucketCapacity: number; bucketRefillPerMinute: number; runTotal: number };
  criticalPercent: number;
  sessionPolicy: QueueConfig['sessionPolicy'];
}

function scenarioParameters(constraints: ScenarioConstraints): fc.Arbitrary<ScenarioParameters> {
  const aging = constraints.agingHeavy === true;
  return fc.record({
    tenants: fc.integer({ min: 1, max: TENANTS.length }),
    topics: fc.integer({ min: 1, max: constraints.topicsMax ?? 12 }),
    workers: fc.integer({ min: 1, max: WORKERS_MAX }),
    slots: fc.integer({ min: 1, max: 2 }),
    newVersionPercent: fc.integer({ min: 0, max: 50 }),
    writePercent: fc.integer({ min: 0, max: 100 }),
    stepsMax: fc.integer({ min: 1, max: 4 }),
    globalLimit: fc.integer({ min: 1, max: aging ? 2 : 4 }),
    perTenantLimit: fc.integer({ min: 1, max: 4 }),
    // Small capacities reach queue_full (Q3, I4); large ones never do.
    capacityExtra: fc.integer({ min: 0, max: 20 }),
    heartbeatMs: fc.integer({ min: 2, max: 10 }).map((seconds) => seconds * 1_000),
    leaseHeartbeats: fc.integer({ min: 3, max: 5 }),
    reconciliation: fc.constantFrom<QueueConfig['reconciliation']>('hold', 'auto'),
    graceMs: fc.integer({ min: 0, max: 20 }).map((seconds) => seconds * 1_000),
    maxAttempts: fc.integer({ min: 1, max: 5 }),
    // Aging-heavy: one point per 1-10 s, so a base-0 task catches a base-30 one inside the run.
    agingPeriodMs: aging ? fc.integer({ min: 1, max: 10 }).map((seconds) => seconds * 1_000) : fc.constant(60_000),
    agingCap: aging ? fc.integer({ min: 0, max: 30 }) : fc.constant(30),
    priorityLow: aging ? fc.integer({ min: 0, max: 5 }) : fc.integer({ min: 0, max: 30 }),
    priorityHigh: aging ? fc.integer({ min: 25, max: 30 }) : fc.integer({ min: 0, max: 30 }),
    arrivalPercent: fc.integer({ min: 0, max: 60 }),
    safetyMs: fc.integer({ min: SAFETY_MS_MIN / 1_000, max: SAFETY_MS_MAX / 1_000 }).map((seconds) => seconds * 1_000),
    // A1, A2, A6 (issues 16, 17): budgets every task needs (none at 0), critical work, the session policy.
    budgets: fc.record({
      seats: fc.integer({ min: 0, max: 3 }),
      bucketCapacity: fc.integer({ min: 0, max: 5 }),
      bucketRefillPerMinute: fc.integer({ min: 0, max: 6 }),
      runTotal: fc.integer({ min: 0, max: 8 }),
    }),
    criticalPercent: fc.integer({ min: 0, max: 30 }),
    sessionPolicy: fc.constantFrom<QueueConfig['sessionPolicy']>('serial', 'cancel_in_progress', 'versioned'),
  });
}

/**
 * A1: the drawn budgets and each task's needs. A 0 draws no such budget: seats, a global semaphore of
 * 1..3 units (one per task); a token bucket of capacity 1..5 units refilled 0..6 a minute (one per
 * task, at least one a minute, so a waiting task always gets its unit in the end); a per-run total of 1..8 model calls, metered (runs that need more end budget_exhausted).
 */
function budgetsOf(drawn: ScenarioParameters['budgets']): { budgets: NonNullable<QueueConfig['budgets']>; needs: Record<string, number> } {
  const budgets: QueueConfig['budgets'] = {};
  const needs: Record<string, number> = {};
  if (drawn.seats > 0) {
    budgets.seats = { kind: 'concurrency', limit: drawn.seats };
    needs.seats = 1;
  }
  if (drawn.bucketCapacity > 0) {
    budgets.bucket = { kind: 'rate', capacity: drawn.bucketCapacity, refill: Math.max(1, drawn.bucketRefillPerMinute), periodMs: 60_000, scope: 'tenant' };
    needs.bucket = 1;
  }
  if (drawn.runTotal > 0) {
    budgets.run_calls = { kind: 'total', limit: drawn.runTotal, per: 'run', meter: 'modelCalls' };
    needs.run_calls = 1;
  }
  return { budgets, needs };
}

/** Builds a valid ScenarioSpec from `mixed` and the drawn parameters (QueueConfig rules of Q6, Q9, Q3). */
export function scenarioOf(name: string, p: ScenarioParameters, plan: FaultPlan): ScenarioSpec {
  const globalLimit = p.globalLimit;
  const queue: Partial<QueueConfig> = {
    globalLimit,
    perTenantLimit: Math.min(p.perTenantLimit, globalLimit),
    capacity: globalLimit + p.capacityExtra,
    heartbeatMs: p.heartbeatMs,
    leaseMs: p.heartbeatMs * p.leaseHeartbeats,
    reconciliation: p.reconciliation,
    graceMs: p.graceMs,
    maxAttempts: p.maxAttempts,
    agingPeriodMs: p.agingPeriodMs,
    agingCap: p.agingCap,
    sessionPolicy: p.sessionPolicy,
  };
  const { budgets, needs } = budgetsOf(p.budgets);
  if (Object.keys(budgets).length > 0) queue.budgets = budgets;
  const [low, high] = p.priorityLow <= p.priorityHigh ? [p.priorityLow, p.priorityHigh] : [p.priorityHigh, p.priorityLow];
  return {
    ...structuredClone(mixed),
    name,
    description: `generated by a property from mixed: ${p.tenants} tenant(s), ${p.topics} topic(s), ${p.workers} worker(s)`,
    source: 'properties/arbitraries.ts',
    queue,
    workers: { ...mixed.workers, count: p.workers, slots: p.slots },
    workload: {
      // mixed's topics part with the drawn sizes; its other parts (the client swarm) as they are.
      parts: mixed.workload.parts.map((item) =>
        item.kind !== 'topics'
          ? structuredClone(item)
          : {
              ...structuredClone(item),
              tenants: TENANTS.slice(0, p.tenants),
              count: p.topics,
              newVersionProbability: p.newVersionPercent / 100,
              priorities: [low, high] as [number, number],
              arrivalWindowMs: Math.floor((p.safetyMs * p.arrivalPercent) / 100),
              ...(Object.keys(needs).length > 0 ? { needs } : {}),
              ...(p.criticalPercent > 0 ? { criticalProbability: p.criticalPercent / 100 } : {}),
            },
      ),
      scripts: { ...structuredClone(mixed.workload.scripts), writeProbability: p.writePercent / 100, steps: [1, p.stepsMax] },
    },
    faults: { plan: structuredClone(plan) },
    phases: { safetyMs: p.safetyMs, livenessMs: mixed.phases.livenessMs },
  };
}

/**
 * Fits a plan drawn for the widest scenario into this one: times scale into its safety window and
 * worker indexes wrap onto its workers, so shrinking either side never makes the other invalid.
 */
export function fitPlan(plan: FaultPlan, safetyMs: number, workers: number): FaultPlan {
  const time = (at: number) => Math.floor((at * safetyMs) / SAFETY_MS_MAX);
  const timed = plan.timed.map((fault): TimedFault => {
    const moved = { ...fault, atMs: time(fault.atMs) };
    return 'worker' in moved ? { ...moved, worker: moved.worker % workers } : moved;
  });
  return { timed, points: plan.points.map((fault) => ({ ...fault })), rates: { ...plan.rates } };
}

export interface SimulationCaseConstraints {
  /** Names the generated scenario (`prop-<name>`) and its counterexample files. */
  name: string;
  scenario?: ScenarioConstraints;
  faults?: Omit<FaultPlanConstraints, 'safetyMs' | 'workers'>;
}

/** A whole case: scenario parameters, a fault plan fitted into them, and a seed. */
export function simulationCaseArbitrary(constraints: SimulationCaseConstraints): fc.Arbitrary<SimulationCase> {
  const planArbitrary = faultPlanArbitrary({ ...(constraints.faults ?? BALANCED_FAULTS), safetyMs: SAFETY_MS_MAX, workers: WORKERS_MAX });
  return fc.record({ parameters: scenarioParameters(constraints.scenario ?? {}), plan: planArbitrary, seed: seedArbitrary }).map(({ parameters, plan, seed }) => {
    const fitted = fitPlan(plan, parameters.safetyMs, parameters.workers);
    return { scenario: scenarioOf(`prop-${constraints.name}`, parameters, fitted), plan: fitted, seed };
  });
}
