/**
 * Determinism (I14, S6): the same scenario, fault plan and seed, run twice in fresh worlds, give the
 * same trace hash. Each case costs two simulated runs. Runs: 10% of LEASEHOLD_RUNS (default 2,000 in
 * total, so 100 cases and 200 runs here). A failure shrinks, is written to
 * reports/failures/determinism-<hash>.json, and its message ends with the replay command.
 */
import { describe } from 'vitest';
import { BALANCED_FAULTS, simulationCaseArbitrary } from './arbitraries.ts';
import { casesFor } from './budget.ts';
import { simulationTest } from './simulation-property.ts';

describe('determinism of the simulator', () => {
  simulationTest('the same scenario, fault plan and seed give the same trace hash twice', {
    family: { suite: 'determinism', checkers: [], twice: true },
    cases: simulationCaseArbitrary({ name: 'determinism', faults: BALANCED_FAULTS }),
    numRuns: casesFor('determinism'),
  });
});
