import { emptyPlan } from '../faults/plan.ts';
import type { ScenarioSpec } from '../scenario.ts';
import { orderRounds } from './order-script.ts';

export const POISON_TASK_ROUNDS = { count: 4, everyMs: 60_000, tasksPerRound: 3 } as const;

/**
 * Seed 002's poison message (Q9 of the seed): one task takes its worker down every time it runs. It is
 * delivered maxDeliveries times, then ends failed in the dead-letter table with the reason of each
 * delivery, never replayed. Every worker it killed is revived, and the other tasks, including those
 * that died alongside it, complete. maxAttempts is above maxDeliveries so the delivery bound is the
 * one that ends it (R6).
 */
export const poisonTask: ScenarioSpec = {
  name: 'poison-task',
  description: 'one task kills its worker every time; after maxDeliveries it is dead-lettered, and every worker comes back',
  source: 'seed 002 (a poison message is dead-lettered after 3 deliveries, keeping the newest 1000)',
  queue: { globalLimit: 4, perTenantLimit: 2, capacity: 100, maxDeliveries: 3, maxAttempts: 5 },
  // One slot a worker: a worker the poison kills holds nothing else. With more slots, a task claimed
  // in the same burst as the poison dies with it at every delivery and is dead-lettered alongside it.
  workers: { count: 2, slots: 1, idleWaitMs: 1_000, maxSteps: 16, toolTimeoutMs: 20_000 },
  ...orderRounds(POISON_TASK_ROUNDS),
  workload: { ...orderRounds(POISON_TASK_ROUNDS).workload, poisonTasks: 1 },
  // No injected faults: the poison task is the fault.
  faults: { plan: emptyPlan() },
  phases: { safetyMs: 600_000, livenessMs: 1_800_000 },
};
