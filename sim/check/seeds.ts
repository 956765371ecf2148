import { createHash } from 'node:crypto';
import type { FaultPlan } from '../faults/plan.ts';
import type { GitState } from './git.ts';

/**
 * How `leasehold check` names its seeds (S2), so that any failing seed can be typed back in.
 *
 * - The root seed is `--seed S` when given. Without it, it is the first 12 hex digits of the git commit
 *   (`git rev-parse HEAD`), so a CI failure reproduces from the commit alone; outside git it is
 *   `no-git`, with a warning, because then every run of the same tree checks the same seeds.
 * - Seed i (from 0) of scenario X is the decimal value of the first 12 hex digits (48 bits) of
 *   sha256 over the JSON text `["leasehold-check/1", root, X, i]`. A plain number is easy to copy
 *   into `leasehold replay --scenario X --seed S`, and hashing in the scenario name gives every
 *   scenario its own seeds.
 */

export const NO_GIT_ROOT = 'no-git';
const DERIVATION_TAG = 'leasehold-check/1';

export interface RootSeed {
  seed: string;
  /** Where it came from, for the first line of output. */
  source: 'flag' | 'git' | 'no-git';
}

export function rootSeed(flag: string | undefined, git: GitState): RootSeed {
  if (flag !== undefined) return { seed: flag, source: 'flag' };
  if (git.commit !== undefined) return { seed: git.commit.slice(0, 12), source: 'git' };
  return { seed: NO_GIT_ROOT, source: 'no-git' };
}

export function deriveSeed(root: string, scenario: string, index: number): string {
  const digest = createHash('sha256').update(JSON.stringify([DERIVATION_TAG, root, scenario, index])).digest('hex');
  return String(Number.parseInt(digest.slice(0, 12), 16));
}

/** One unit of work: one seed of one scenario, run once (or a second time for the unseed check). */
export interface Job {
  /** Position in this process's queue; results are reported and written in this order. */
  id: number;
  scenario: string;
  /** The seed's index i within its scenario (before sharding). */
  index: number;
  seed: string;
  /** The second run of a sampled seed (S6, I14): only its trace hash matters. */
  repeat: boolean;
  /** A guided-search child (--explore, explore.ts): the fault plan it runs instead of its seed's own. */
  plan?: FaultPlan;
  /** For a child: the parent seed it came from and the mark or pair it was steered at. */
  explore?: { parentSeed: string; target: string };
}

export interface Shard {
  index: number;
  count: number;
}

/**
 * Every (scenario, seed) pair this process runs, interleaved by seed index so progress and an early
 * failure show up across all scenarios. `seeds` is the count of every scenario, or each one's own (a
 * budget split by yield, budget.ts); scenario X runs its seed indexes 0..seeds(X)-1. `--shard K/N` keeps
 * the seed indexes i with i mod N = K - 1 of every scenario: each scenario is split evenly, and the N
 * shards together run exactly the unsharded set.
 */
export function planJobs(root: string, scenarios: readonly string[], seeds: number | Readonly<Record<string, number>>, shard: Shard = { index: 1, count: 1 }): Job[] {
  const countOf = (scenario: string) => (typeof seeds === 'number' ? seeds : (seeds[scenario] ?? 0));
  const most = Math.max(0, ...scenarios.map(countOf));
  const jobs: Job[] = [];
  for (let index = 0; index < most; index++) {
    if (index % shard.count !== shard.index - 1) continue;
    for (const scenario of scenarios) {
      if (index >= countOf(scenario)) continue;
      jobs.push({ id: jobs.length, scenario, index, seed: deriveSeed(root, scenario, index), repeat: false });
    }
  }
  return jobs;
}

/**
 * The unseed sample (S6): a seed is run twice when a hash of its name falls below `rate`, so the choice
 * is deterministic and spread over scenarios; whenever rate > 0 every scenario has at least one. The
 * repeats go to the back of the queue, so the second run happens in another order and usually on
 * another thread than the first, which is what exposes state leaking between runs.
 */
export function withRepeats(jobs: readonly Job[], rate: number): Job[] {
  if (rate <= 0 || jobs.length === 0) return [...jobs];
  const sampled = jobs.filter((job) => sampleFraction(job) < rate);
  // Every scenario gets at least one repeat (its lowest sampled job, else its first): nondeterminism
  // often lives in one code path (retry jitter, a restart) that only some scenarios reach.
  const covered = new Set(sampled.map((job) => job.scenario));
  for (const job of jobs) {
    if (!covered.has(job.scenario)) {
      covered.add(job.scenario);
      sampled.push(job);
    }
  }
  sampled.sort((a, b) => a.id - b.id);
  return [...jobs, ...sampled.map((job, offset) => ({ ...job, id: jobs.length + offset, repeat: true }))];
}

function sampleFraction(job: Job): number {
  const digest = createHash('sha256').update(`unseed:${job.scenario}:${job.seed}`).digest();
  return digest.readUInt32BE(0) / 2 ** 32;
}
