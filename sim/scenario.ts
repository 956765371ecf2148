import type { FleetSpec } from './store/fleet.ts';
import type { ErrorClass, QueueConfig } from '../src/queue/types.ts';
import type { Durability } from '../src/store/durability.ts';
import type { ExpectationSpec } from './expectations/types.ts';
import type { FaultPlan } from './faults/plan.ts';
import type { RoundFaultSpec } from './faults/rounds.ts';
import type { SwarmSpec } from './faults/swarm.ts';
import type { ConfigSwarmSpec } from './workloads/config-swarm.ts';
import type { ScriptDrawing } from './workloads/draw.ts';
import type { WorkloadPart } from './workloads/index.ts';

export type { ClientSwarmSpec } from './workloads/client-swarm.ts';
export type { ConfigSwarmSpec } from './workloads/config-swarm.ts';
export type { ExplicitTask } from './workloads/tasks.ts';
export type { FloodSpec } from './workloads/flood.ts';
export type { GraphDrawing } from './workloads/graph-draw.ts';
export type { RoundsSpec } from './workloads/rounds.ts';
export type { ScriptDrawing } from './workloads/draw.ts';
export type { ClientSwarmPart, FloodPart, RoundsPart, TasksPart, TopicsPart, WorkloadPart } from './workloads/index.ts';
export type { SwarmKind, SwarmSpec } from './faults/swarm.ts';

/**
 * A scenario as the runner takes it (sim/world.ts), every option resolved: a workload, a worker pool,
 * the queue configuration, the faults and the phases. A scenario file lists workload and fault parts
 * with defaults (sim/workloads/, sim/faults/) and sim/scenario-schema.ts resolves it into this; this
 * same value, written out whole, is what a counterexample file records and is read back as it is (the
 * explicit form, sim/scenario-explicit.ts).
 *
 * The workload stays in its typed parts, as the file lists them, each with its defaults filled in: a
 * topics or a rounds part that draws arrivals, tasks and flood parts beside it, a client swarm over them
 * (sim/workloads/index.ts reads them: drawnPartOf, explicitTasksOf, floodsOf, clientSwarmOf), and how
 * the model draws each task's script (the file's `model` section, less its latency).
 */
export interface WorkloadSpec {
  parts: WorkloadPart[];
  scripts: ScriptDrawing;
}

export interface ScenarioSpec {
  name: string;
  description: string;
  /** The seed article this scenario reproduces. */
  source: string;
  queue: Partial<QueueConfig>;
  workers: { count: number; slots: number; idleWaitMs: number; maxSteps: number; toolTimeoutMs: number };
  /**
   * The configuration swarm (workloads/config-swarm.ts): queue and worker options drawn per seed over
   * `queue` and `workers`, applied before the World opens the queue (run-scenario.ts scenarioForSeed).
   */
  configSwarm?: ConfigSwarmSpec;
  workload: WorkloadSpec;
  model: { latencyMs: [number, number] };
  tools: {
    latencyMs: [number, number];
    /**
     * Weights of the error classes an injected tool error takes (e.g. only `rate_limited` for a storm of
     * 429s); absent: 85% one of the retryable classes, uniformly, and 15% `permission_denied`.
     */
    errorClasses?: Partial<Record<ErrorClass, number>>;
  };
  supervisor: { scanMs: number; confirmDelayMs: number };
  /** A5: a monitor that reads queue.signals() every everyMs of the safety phase, from offsetMs on (I22); absent: none. */
  monitor?: { everyMs: number; offsetMs: number };
  /** The fleet (sim/store/fleet.ts); absent: FLEET_DEFAULTS. */
  fleet?: FleetSpec;
  /**
   * The SQLite store's durability (src/store/durability.ts, openWorkQueue's `durability`): stated, every
   * seed runs on a real WAL file opened at that level; absent, the world picks its database and a power
   * loss runs at the production default. Not used on PGlite (PostgreSQL decides by its own settings).
   */
  durability?: Durability;
  /** An explicit plan, a swarm drawn per seed, or one fault per round of a rounds workload drawn per seed. */
  faults: { plan: FaultPlan } | { swarm: SwarmSpec } | { perRound: RoundFaultSpec };
  phases: { safetyMs: number; livenessMs: number };
  /**
   * What must be true of every run of this scenario, checked like an invariant (a failed expectation
   * is a violation named `expect:<kind>`), not just run.
   */
  expect?: ExpectationSpec[];
}
