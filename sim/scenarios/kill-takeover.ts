import type { ScenarioSpec } from '../scenario.ts';
import { orderRounds } from './order-script.ts';

export const KILL_TAKEOVER_ROUNDS = { count: 30, everyMs: 90_000, tasksPerRound: 6 } as const;

/**
 * Seed 002's kill -9 test: 30 rounds, each submitting 6 order tasks at once to 2 workers (4 slots
 * each, the seed's default concurrency). The stub model has fixed latency and usage per step and
 * confirms an order at step 3. Each round kills the worker holding the most running tasks, at a moment
 * drawn among: during a model call, during a tool call, between the two checkpoints, after the terminal
 * write; it is revived a few seconds later. Lease 30 s, heartbeat 10 s (the defaults).
 */
export const killTakeover: ScenarioSpec = {
  name: 'kill-takeover',
  description: '30 rounds x 6 order tasks on 2 workers; each round kills the busiest worker at a model call, tool call, between checkpoints or after the terminal write',
  source: 'seed 002 (kill -9 any worker: 30 rounds x 6 tasks, stub model, order confirmation at step 3)',
  queue: { globalLimit: 8, perTenantLimit: 4, capacity: 100 },
  workers: { count: 2, slots: 4, idleWaitMs: 1_000, maxSteps: 16, toolTimeoutMs: 20_000 },
  ...orderRounds(KILL_TAKEOVER_ROUNDS),
  faults: {
    perRound: {
      action: { kind: 'kill', reviveAfterMs: [2_000, 8_000] },
      // The busiest worker holds 4 runs in step (fixed latencies, one claim burst). Over a round they
      // reach 20 model calls (4 steps and the answer), 24 tool calls (the 17th to 20th are the order
      // confirmations), 20 checkpoints A and 4 terminal writes: every step of the run can be hit.
      moments: ['model_call', { moment: 'tool_call', occurrence: [1, 24] }, 'between_checkpoints', { moment: 'after_terminal_write', occurrence: [1, 4] }],
      occurrence: [1, 20],
      target: 'busiest',
    },
  },
  // The safety phase spans every round; it ends early once the last round drained.
  phases: { safetyMs: KILL_TAKEOVER_ROUNDS.count * KILL_TAKEOVER_ROUNDS.everyMs + 120_000, livenessMs: 1_800_000 },
};
