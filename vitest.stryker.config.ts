import { defineConfig } from 'vitest/config';

/**
 * The suite Stryker runs against each mutant of src/ (`npm run stryker`): the src unit tests, the
 * model-based queue test and the simulator's scenario and checker tests, with the property budget
 * scaled down (LEASEHOLD_RUNS) so one mutant costs seconds, not minutes.
 */
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'properties/queue-model.test.ts'],
    exclude: ['src/queue/processes.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
