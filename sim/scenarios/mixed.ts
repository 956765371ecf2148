import type { ScenarioSpec } from '../scenario.ts';

/**
 * The default scenario: three tenants, twenty topics of mixed priorities (some get a newer version),
 * four workers, most tasks with a write effect, and a swarm of faults drawn per seed.
 */
export const mixed: ScenarioSpec = {
  name: 'mixed',
  description: 'three tenants, twenty topics with mixed priorities and versions, four workers, write effects, swarm faults',
  source: 'seeds 000 and 002',
  queue: { globalLimit: 4, perTenantLimit: 2, capacity: 100 },
  workers: { count: 4, slots: 1, idleWaitMs: 1_000, maxSteps: 16, toolTimeoutMs: 20_000 },
  workload: {
    tenants: ['acme', 'globex', 'initech'],
    topics: 20,
    newVersionProbability: 0.2,
    priorities: [0, 30],
    arrivalWindowMs: 60_000,
    writeProbability: 0.8,
    steps: [1, 4],
    callsPerStep: [1, 3],
    tokensPerCall: [200, 2_000],
    tiers: ['standard', 'standard', 'long'],
  },
  model: { latencyMs: [500, 3_000] },
  tools: { latencyMs: [100, 2_000] },
  supervisor: { scanMs: 5_000, confirmDelayMs: 10_000 },
  faults: {
    swarm: {
      kinds: ['kill', 'kill-at', 'pause', 'restart', 'clock-jump', 'busy', 'slow-tool', 'hung-tool', 'lost-response', 'duplicate-delivery', 'tool-error'],
      quietProbability: 0.1,
    },
  },
  // Arrivals end after a minute and the work after two or three; faults are drawn in that window.
  phases: { safetyMs: 150_000, livenessMs: 1_800_000 },
};
