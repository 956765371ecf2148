/**
 * Safety under faults (I1-I4, I9, I10, I13; I15-I18, I20 over drawn budgets, critical work and session
 * policies): generated scenarios from `mixed` with an explicit plan of
 * every fault kind. Runs: 40% of LEASEHOLD_RUNS (default 2,000 in total, so 800 here). A failure
 * shrinks to the fewest faults and tasks, is written to reports/failures/safety-<hash>.json, and its
 * message ends with the replay command.
 */
import { describe } from 'vitest';
import {
  i1NoDoubleClaim,
  i2StaleLeases,
  i3Quotas,
  i4Capacity,
  i9OneTaskPerKey,
  i10Supersede,
  i13Isolation,
  i15Budgets,
  i16Reservations,
  i17PausedTenant,
  i18Sessions,
  i20Admission,
} from '../sim/checkers/index.ts';
import { BALANCED_FAULTS, simulationCaseArbitrary } from './arbitraries.ts';
import { casesFor } from './budget.ts';
import { simulationTest } from './simulation-property.ts';

describe('safety invariants under generated scenarios and fault plans', () => {
  simulationTest('no double claim, stale leases refused, quotas and capacity held, one task per key, supersede, isolation, budgets, reservations, sessions, admission', {
    family: {
      suite: 'safety',
      checkers: [i1NoDoubleClaim, i2StaleLeases, i3Quotas, i4Capacity, i9OneTaskPerKey, i10Supersede, i13Isolation, i15Budgets, i16Reservations, i17PausedTenant, i18Sessions, i20Admission],
    },
    cases: simulationCaseArbitrary({ name: 'safety', faults: BALANCED_FAULTS }),
    numRuns: casesFor('safety'),
  });
});
