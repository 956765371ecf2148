import { defineConfig } from 'vitest/config';

/**
 * The suite Stryker runs against each mutant of src/ (`npm run stryker`, `npm run stryker:batches`): the
 * src unit tests, the model-based queue test (LEASEHOLD_RUNS scales its property budget down so one
 * mutant costs seconds, not minutes) and sim/world.test.ts, the one fast simulator test that drives the
 * worker runtime (src/worker, src/runs/effects.ts), which no src test imports: kills at each kind of
 * await, a zombie pause, determinism (about 3 s); and sim/scenarios/durable-runs.test.ts (about 18 s),
 * the simulator's tests of the durable-run machinery in src/runs (checkpoint takeover, the effect ledger,
 * reconciliation under 'auto', dead letters, settlement). With per-test coverage (Stryker 9.6.1) a mutant
 * runs only the tests that reach it. The slower catalogue and property suites stay out.
 */
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'properties/queue-model.test.ts', 'sim/world.test.ts', 'sim/scenarios/durable-runs.test.ts'],
    exclude: ['src/queue/processes.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
