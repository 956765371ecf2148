/**
 * Priority and aging (I5): generated workloads whose base priorities span 0..30 with aging of one
 * point per 1-10 s (so aging decides claims within the run), one or two global slots, and a light
 * fault plan. Runs: 20% of LEASEHOLD_RUNS (default 2,000 in total, so 400 here). A failure shrinks, is
 * written to reports/failures/priority-<hash>.json, and its message ends with the replay command.
 */
import { describe } from 'vitest';
import { i5Priority, i5Starvation } from '../sim/checkers/index.ts';
import { LIGHT_FAULTS, simulationCaseArbitrary } from './arbitraries.ts';
import { casesFor } from './budget.ts';
import { simulationTest } from './simulation-property.ts';

describe('priority order and no starvation under aging-heavy workloads', () => {
  simulationTest('each claim takes the best eligible task by aged score, and no task starves past the aging bound', {
    family: { suite: 'priority', checkers: [i5Priority, i5Starvation] },
    cases: simulationCaseArbitrary({ name: 'priority', scenario: { agingHeavy: true }, faults: LIGHT_FAULTS }),
    numRuns: casesFor('priority'),
  });
});
