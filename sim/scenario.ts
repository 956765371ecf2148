import type { FleetSpec } from './store/fleet.ts';
import type { ErrorClass, QueueConfig, Tier } from '../src/queue/types.ts';
import type { Durability } from '../src/store/durability.ts';
import type { TaskScript } from './actors/scripted-model.ts';
import type { ExpectationSpec } from './expectations/types.ts';
import type { FaultPlan } from './faults/plan.ts';
import type { RoundFaultSpec } from './faults/rounds.ts';
import type { SwarmSpec } from './faults/swarm.ts';
import type { ClientSwarmSpec } from './workloads/client-swarm.ts';
import type { ConfigSwarmSpec } from './workloads/config-swarm.ts';
import type { ExplicitTask } from './workloads/tasks.ts';
import type { GraphDrawing } from './workloads/graph-draw.ts';
import type { FloodSpec } from './workloads/flood.ts';
import type { RoundsSpec } from './workloads/rounds.ts';

export type { ClientSwarmSpec } from './workloads/client-swarm.ts';
export type { ConfigSwarmSpec } from './workloads/config-swarm.ts';
export type { ExplicitTask } from './workloads/tasks.ts';
export type { FloodSpec } from './workloads/flood.ts';
export type { GraphDrawing } from './workloads/graph-draw.ts';
export type { RoundsSpec } from './workloads/rounds.ts';
export type { SwarmKind, SwarmSpec } from './faults/swarm.ts';

/**
 * A scenario as the runner takes it (sim/world.ts), every option resolved: a workload, a worker pool,
 * the queue configuration, the faults and the phases. A scenario file lists workload and fault parts
 * with defaults (sim/workloads/, sim/faults/) and sim/scenario-schema.ts resolves it into this; this
 * same value, written out whole, is what a counterexample file records and is read back as it is (the
 * explicit form, sim/scenario-explicit.ts).
 */
export interface WorkloadSpec {
  tenants: string[];
  /** Topics to create; each topic starts at version 1. */
  topics: number;
  /** Probability that a topic later receives a newer version (Q2). */
  newVersionProbability: number;
  priorities: [number, number];
  /** Arrivals are spread uniformly over this window from the start. */
  arrivalWindowMs: number;
  /** Probability that a task's script includes a write effect. */
  writeProbability: number;
  steps: [number, number];
  callsPerStep: [number, number];
  tokensPerCall: [number, number];
  tiers: Tier[];
  /** Probability that a task is poison: its worker dies at its first model call, every time. */
  poisonProbability?: number;
  /**
   * A7: drawn steps as tool-call graphs (workloads/graph-draw.ts); absent: every drawn step is plain
   * reads (callsPerStep) and nothing is drawn for graphs. Not used with a stub `script`.
   */
  graphs?: GraphDrawing;
  /**
   * A stub model (seed 002): every task runs this one script, with fixed steps and usage, instead of
   * a drawn one; steps, callsPerStep, tokensPerCall and writeProbability are then not used.
   */
  script?: TaskScript;
  /**
   * Arrivals in rounds instead of topics spread over a window: tasksPerRound tasks arrive together at
   * the start of each round, everyMs apart, each on its own topic; topics, newVersionProbability and
   * arrivalWindowMs are then not used.
   */
  rounds?: RoundsSpec;
  /** Rounds only: exactly this many tasks, chosen per seed, are poison (R6). */
  poisonTasks?: number;
  /** A1: units of the queue's named budgets every drawn task (topics or rounds) needs, passed to enqueue. */
  needs?: Record<string, number>;
  /** A2: probability that a drawn task is critical work, drawn per task from the stream `workload/critical`. */
  criticalProbability?: number;
  /** Tasks written out one by one, added to whatever else the workload draws. */
  tasks?: ExplicitTask[];
  /** Continuous arrival processes (a flood of high-priority work, one tenant filling its budget). */
  floods?: FloodSpec[];
  /** A misbehaving client over all the other arrivals: resends, conflicts, cancels, out-of-order versions, bursts. */
  clientSwarm?: ClientSwarmSpec;
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
