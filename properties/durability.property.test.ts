/**
 * Durability under crashes (I6-I8, I11, I12): generated scenarios with kill- and pause-heavy plans
 * (timed kills and pauses, kills and pauses at await points, restarts), under both reconciliation
 * policies. Runs: 30% of LEASEHOLD_RUNS (default 2,000 in total, so 600 here). A failure shrinks, is
 * written to reports/failures/durability-<hash>.json, and its message ends with the replay command.
 */
import { describe } from 'vitest';
import { i6BoundedRetries, i7HoldsClosed, i7Settlement, i8EffectsOnce, i11Contiguous, i11Drained, i12UncertainHeld } from '../sim/checkers/index.ts';
import { CRASH_HEAVY_FAULTS, simulationCaseArbitrary } from './arbitraries.ts';
import { casesFor } from './budget.ts';
import { simulationTest } from './simulation-property.ts';

describe('durability invariants under kills, pauses and restarts', () => {
  simulationTest('bounded retries, one settlement per run, effects once, no lost task, uncertain held', {
    family: { suite: 'durability', checkers: [i6BoundedRetries, i7Settlement, i7HoldsClosed, i8EffectsOnce, i11Contiguous, i11Drained, i12UncertainHeld] },
    cases: simulationCaseArbitrary({ name: 'durability', faults: CRASH_HEAVY_FAULTS }),
    numRuns: casesFor('durability'),
  });
});
