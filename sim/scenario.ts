import type { ErrorClass, IncidentContext, QueueConfig, Tier } from '../src/queue/types.ts';
import type { ExpectationSpec } from './expectations/types.ts';
import type { TaskScript } from './actors/scripted-model.ts';
import type { FaultPlan } from './faults/plan.ts';
import type { RoundFaultSpec } from './faults/rounds.ts';
import type { SwarmSpec } from './faults/swarm.ts';

export type { SwarmKind, SwarmSpec } from './faults/swarm.ts';

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
  /**
   * Tasks written out one by one (seed 000's tables, seed 003's H1/M1/L1), added to whatever else
   * the workload draws. Set `topics` to 0 for a workload of explicit tasks only.
   */
  tasks?: ExplicitTask[];
  /** Continuous arrival processes (a flood of high-priority work, one tenant filling its budget). */
  floods?: FloodSpec[];
}

/** One task of an explicit workload. */
export interface ExplicitTask {
  /** Arrival, in ms from the start of the run. */
  atMs: number;
  tenant: string;
  topic: string;
  /** Default 1. */
  version?: number;
  priority: number;
  /** Default: the first of the workload's tiers. */
  tier?: Tier;
  /** The name expectations and reports use for this task, e.g. 'H1'; default: the topic. */
  label?: string;
  /** What its model decides; default: a script drawn from the workload's ranges. */
  script?: TaskScript;
  /** Its worker dies at its first model call, every time (R6). */
  poison?: boolean;
  /** Q14: the task expires this many ms after its arrival. */
  deadlineAfterMs?: number;
  /** The same request is sent again at each of these times (ms from the start): resends (Q1). */
  resendAtMs?: number[];
  /**
   * A buggy client sends the same (tenant, topic, version) again at each of these times with a
   * different input: the queue must refuse it idempotency_conflict (Q1, I9).
   */
  conflictAtMs?: number[];
  /** Verified context for incident grouping (Q17). */
  context?: IncidentContext;
  /** The client cancels the task at this time, ms from the start (Q13): at once if ready, at a step boundary if running. */
  cancelAtMs?: number;
}

/** `count` tasks arrive every `everyMs` from `fromMs` until `untilMs` (exclusive), each on its own topic. */
export interface FloodSpec {
  tenant: string;
  /** Topics are `${topicPrefix}-${n}`; labels too. */
  topicPrefix: string;
  /** Drawn per task from this inclusive range. */
  priority: [number, number];
  everyMs: number;
  fromMs: number;
  untilMs: number;
  /** Tasks per arrival; default 1. */
  count?: number;
}

export interface RoundsSpec {
  count: number;
  everyMs: number;
  tasksPerRound: number;
}

export interface ScenarioSpec {
  name: string;
  description: string;
  /** The seed article this scenario reproduces. */
  source: string;
  queue: Partial<QueueConfig>;
  workers: { count: number; slots: number; idleWaitMs: number; maxSteps: number; toolTimeoutMs: number };
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
  /** An explicit plan, a swarm drawn per seed, or one fault per round of a rounds workload drawn per seed. */
  faults: { plan: FaultPlan } | { swarm: SwarmSpec } | { perRound: RoundFaultSpec };
  phases: { safetyMs: number; livenessMs: number };
  /**
   * What must be true of every run of this scenario, checked like an invariant (a failed expectation
   * is a violation named `expect:<kind>`), not just run.
   */
  expect?: ExpectationSpec[];
}
