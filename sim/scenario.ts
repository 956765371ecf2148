import type { QueueConfig, Tier } from '../src/queue/types.ts';
import type { TaskScript } from './actors/scripted-model.ts';
import type { FaultPlan } from './faults/plan.ts';
import type { RoundFaultSpec } from './faults/rounds.ts';

/**
 * A scenario composes a workload, a worker pool, the queue configuration, fault injectors and the
 * phases (FoundationDB-style: workloads and faults as data). Built-in scenarios are TypeScript values
 * of this type; scenario files are validated into it.
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
}

export interface RoundsSpec {
  count: number;
  everyMs: number;
  tasksPerRound: number;
}

export interface SwarmSpec {
  /** Fault kinds that may be drawn; each seed turns each on or off. */
  kinds: SwarmKind[];
  /** Probability that a seed has no faults at all. */
  quietProbability: number;
}

export type SwarmKind =
  | 'kill'
  | 'kill-at'
  | 'pause'
  | 'restart'
  | 'clock-jump'
  | 'busy'
  | 'slow-tool'
  | 'hung-tool'
  | 'lost-response'
  | 'duplicate-delivery'
  | 'tool-error';

export interface ScenarioSpec {
  name: string;
  description: string;
  /** The seed article this scenario reproduces. */
  source: string;
  queue: Partial<QueueConfig>;
  workers: { count: number; slots: number; idleWaitMs: number; maxSteps: number; toolTimeoutMs: number };
  workload: WorkloadSpec;
  model: { latencyMs: [number, number] };
  tools: { latencyMs: [number, number] };
  supervisor: { scanMs: number; confirmDelayMs: number };
  /** An explicit plan, a swarm drawn per seed, or one fault per round of a rounds workload drawn per seed. */
  faults: { plan: FaultPlan } | { swarm: SwarmSpec } | { perRound: RoundFaultSpec };
  phases: { safetyMs: number; livenessMs: number };
}
