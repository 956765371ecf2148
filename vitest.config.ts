import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'sim/**/*.test.ts', 'properties/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Both cores: the default (cores - 1) runs the simulation suites one file at a time on a 2-core machine.
    maxWorkers: 2,
  },
});
