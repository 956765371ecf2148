import { readFileSync, readdirSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

/**
 * The contract suite (SPEC P1): every Q and R requirement, written once against the WorkQueue API, and
 * the model-based test. It runs once per store of TEST_STORES (src/queue/__test-helpers__/test-kit.ts), whose helpers
 * open the store LEASEHOLD_TEST_STORE names. Everything else (the harness, the worker runtime, the
 * real-process tests, which open files of their own) runs once.
 */
const inFolder = (folder: string) => readdirSync(folder).filter((name) => name.endsWith('.test.ts')).map((name) => `${folder}/${name}`);
// Files of those folders that run once: the real-process test (it opens files of its own) and the input hash's (pure functions).
const ONCE = new Set(['src/queue/processes.test.ts', 'src/queue/enqueue-input.test.ts']);
const CONTRACT = [...inFolder('src/queue'), ...inFolder('src/runs'), 'properties/queue-model.test.ts'].filter((file) => !ONCE.has(file));
const STORES = ['sqlite-memory', 'sqlite-file', 'sqlite-yielding', 'postgres', 'pglite'];
/** The floors CI holds the suite's own coverage of src/ to (`npm test -- --coverage`); they only rise. */
const FLOOR = (JSON.parse(readFileSync('.ci/coverage-floor.json', 'utf8')) as { unit: { lines: number; branches: number } }).unit;

export default defineConfig({
  test: {
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // SPEC P5: the PostgreSQL server of the run (LEASEHOLD_PG_URL, or a throwaway one started here).
    globalSetup: ['src/store/__test-helpers__/pg-global-setup.ts'],
    // Both cores: the default (cores - 1) runs the simulation suites one file at a time on a 2-core machine.
    maxWorkers: 2,
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts'],
      exclude: ['**/*.test.ts', '**/__test-helpers__/**'],
      reporter: ['text-summary', 'json-summary'],
      reportsDirectory: 'reports/coverage/unit',
      thresholds: { lines: FLOOR.lines, branches: FLOOR.branches },
    },
    projects: [
      ...STORES.map((store) => ({
        extends: true as const,
        test: { name: `contract:${store}`, include: CONTRACT, env: { LEASEHOLD_TEST_STORE: store } },
      })),
      {
        extends: true as const,
        test: { name: 'harness', include: ['src/**/*.test.ts', 'sim/**/*.test.ts', 'properties/**/*.test.ts', 'tools/**/*.test.ts', 'examples/**/*.test.ts'], exclude: [...CONTRACT, '**/node_modules/**'] },
      },
    ],
  },
});
