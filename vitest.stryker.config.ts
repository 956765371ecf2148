import { defineConfig } from 'vitest/config';

/**
 * The suite Stryker runs against each mutant of src/ (`npm run stryker`, `npm run stryker:batches`): the
 * src unit tests, the model-based queue test (LEASEHOLD_RUNS scales its property budget down so one
 * mutant costs seconds, not minutes) and sim/world.test.ts, the one fast simulator test that drives the
 * worker runtime (src/worker, src/runs/effects.ts), which no src test imports: kills at each kind of
 * await, a zombie pause, determinism (about 3 s). The slower scenario, catalogue and property suites
 * stay out.
 */
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'properties/queue-model.test.ts', 'sim/world.test.ts'],
    exclude: ['src/queue/processes.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
