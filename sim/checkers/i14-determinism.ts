import type { FaultPlan } from '../faults/plan.ts';
import type { Violation } from '../report-types.ts';
import type { ScenarioSpec } from '../scenario.ts';
import { worldFor } from '../seed-world.ts';
import { simPglite, type SimStore } from '../store/pglite.ts';
import type { WorldStore } from '../world.ts';

/**
 * I14: determinism: same seed and code, same trace hash (S6). It is not a function of one run, so it
 * is not in `allCheckers`: `sameSeedSameTrace` runs a seed twice and `checkDeterminism` judges the two
 * hashes. A difference is reported as nondeterminism (exit 3, S9) by the caller.
 */
export function checkDeterminism(hashA: string, hashB: string, label = 'the same seed'): Violation[] {
  if (hashA === hashB) return [];
  return [{ invariant: 'I14', kind: 'safety', message: `I14 determinism: ${label} gave two trace hashes, ${hashA} and ${hashB}` }];
}

/** Runs one seed of a scenario twice (fresh worlds, on the same store: on pglite, the thread's database emptied between them) and compares the trace hashes. */
export async function sameSeedSameTrace(
  scenario: ScenarioSpec,
  seed: string,
  plan?: FaultPlan,
  store: SimStore = 'sqlite',
): Promise<{ hashA: string; hashB: string; violations: Violation[] }> {
  const on = async (): Promise<WorldStore> => (store === 'pglite' ? { kind: 'pglite', db: await simPglite() } : { kind: 'sqlite' });
  const first = await worldFor(scenario, seed, plan, await on()).run();
  const second = await worldFor(scenario, seed, plan, await on()).run();
  const hashA = first.history.traceHash();
  const hashB = second.history.traceHash();
  return { hashA, hashB, violations: checkDeterminism(hashA, hashB, `scenario ${scenario.name} seed ${seed}${store === 'sqlite' ? '' : ` on ${store}`}`) };
}
