import type { ScenarioSpec } from '../scenario.ts';
import { orderRounds } from './order-script.ts';

export const ZOMBIE_PAUSE_ROUNDS = { count: 10, everyMs: 120_000, tasksPerRound: 3 } as const;

/**
 * Seed 002's zombie test (docker pause): ten times, the worker holding the most running tasks is frozen
 * for 45 s in the middle of a model call, under a 30 s lease. The lease lapses, the task is taken over,
 * and the zombie wakes up still believing it holds the run: its first write (the checkpoint after the
 * model call it was in) must be refused, and it must give up with no terminal write.
 */
export const zombiePause: ScenarioSpec = {
  name: 'zombie-pause',
  description: '10 pauses of 45 s under a 30 s lease, each freezing the busiest worker mid model call; the zombie is fenced off',
  source: 'seed 002 (docker pause 45 s > 30 s lease, 10 times: takeover finishes, the old worker writes nothing)',
  queue: { globalLimit: 4, perTenantLimit: 2, capacity: 100, leaseMs: 30_000, heartbeatMs: 10_000 },
  workers: { count: 2, slots: 2, idleWaitMs: 1_000, maxSteps: 16, toolTimeoutMs: 20_000 },
  ...orderRounds(ZOMBIE_PAUSE_ROUNDS),
  faults: {
    perRound: {
      action: { kind: 'pause', durationMs: 45_000 },
      // The busiest worker holds 2 runs in step: 10 model calls a round, any of which may freeze.
      moments: ['model_call'],
      occurrence: [1, 10],
      target: 'busiest',
    },
  },
  phases: { safetyMs: ZOMBIE_PAUSE_ROUNDS.count * ZOMBIE_PAUSE_ROUNDS.everyMs + 120_000, livenessMs: 1_800_000 },
};
