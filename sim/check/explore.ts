import { ALL_MARKS } from '../checkers/marks.ts';
import { ALL_PATH_PAIRS, ALL_WINDOWS } from '../checkers/windows.ts';
import { POINT_FAULTS } from '../faults/index.ts';
import { KILL_POINTS, type FaultPlan, type FaultRates } from '../faults/plan.ts';
import { SeededRandom } from '../random.ts';
import { deriveSeed, type Job } from './seeds.ts';
import type { JobResult } from './types.ts';

/**
 * Guided search (`leasehold check --explore FRACTION`, issue 15). The check spends the first part of
 * each scenario's seed budget as a plain check does (the same seeds 0..plain-1, so those runs and their
 * trace hashes are unchanged), then tallies, over those runs, which coverage marks each reached and
 * which (mark, fault kind) pairs: a mark reached in a run whose fault plan held that kind of fault.
 * The rest of the budget goes to child runs steered at what the first part reached least:
 *
 * - an unreached pair (m, f), where some run reached m and some run's plan held f: the child takes the
 *   plan of a parent that reached m and adds the fault entries of kind f from a donor run's plan
 *   (crossover), under a new seed;
 * - a rare mark or pair (reached by the fewest runs): the child keeps the plan of a parent that reached
 *   it and re-rolls the world (a new seed: other arrivals, timings and draws under the same faults).
 *
 * Picks alternate between the two lists (unreached pairs in order of their mark's rarity, then rare
 * targets by run count), each list in a fixed order; which parent and donor serve a target is drawn from
 * a stream seeded by the check's root seed and the scenario. The child at seed index i of scenario X has
 * the seed deriveSeed(root, "X#explore", i). Same flags and code, same picks. Every pick is in the summary.
 */

/**
 * The fault kinds of a plan: timed fault kinds; point faults by kind and window (the await point S4
 * names: `kill-at:after_effect`), so pairs also tell which windows a mark was reached under; and each
 * per-event rate above zero (`rate:slowTool`).
 */
export function faultKinds(plan: FaultPlan | undefined): string[] {
  if (plan === undefined) return [];
  const kinds = new Set<string>();
  for (const fault of plan.timed) kinds.add(fault.kind);
  for (const fault of plan.points) kinds.add(pointKind(fault));
  for (const [rate, value] of Object.entries(plan.rates)) if ((value ?? 0) > 0) kinds.add(rateKind(rate));
  return [...kinds].sort();
}

function pointKind(fault: FaultPlan['points'][number]): string {
  return `${fault.kind}:${fault.point}`;
}

/** `slowToolProbability` -> `rate:slowTool`: rate kinds are named apart from timed and point kinds. */
function rateKind(field: string): string {
  return `rate:${field.replace(/Probability$/, '')}`;
}

export function pairKey(mark: string, kind: string): string {
  return `${mark} × ${kind}`;
}

function reachedMarks(result: JobResult): string[] {
  return Object.entries(result.marks)
    .filter(([, count]) => count > 0)
    .map(([mark]) => mark)
    .sort();
}

export function pairsOf(result: JobResult): string[] {
  const kinds = faultKinds(result.plan);
  return reachedMarks(result).flatMap((mark) => kinds.map((kind) => pairKey(mark, kind)));
}

/** How the budget splits: `explore` = floor(seeds x fraction) children, at least one plain seed first. */
export function splitBudget(seeds: number, fraction: number): { plain: number; explore: number } {
  const explore = Math.min(Math.floor(seeds * fraction), seeds - 1);
  return { plain: seeds - Math.max(0, explore), explore: Math.max(0, explore) };
}

export interface ExplorePick {
  scenario: string;
  /** The child's seed index within its scenario (after the plain seeds) and its seed. */
  index: number;
  childSeed: string;
  parentSeed: string;
  /** `unreached pair`: crossover from the donor; `rare mark` / `rare pair`: the parent's plan, re-rolled. */
  kind: 'unreached pair' | 'rare mark' | 'rare pair' | 'rare path';
  target: string;
  /** Runs of the plain part that reached the target (0 for an unreached pair). */
  reachedBy: number;
  donorSeed?: string;
}

interface Target {
  kind: ExplorePick['kind'];
  target: string;
  reachedBy: number;
  parents: JobResult[];
  donors?: JobResult[];
  faultKind?: string;
}

function isPointKind(kind: string | undefined): boolean {
  return kind !== undefined && kind.includes(':') && !kind.startsWith('rate:');
}

/** `plan` with its point faults replaced by a fresh draw of each point-fault kind (each on or off), from `random`. */
export function withFreshPoints(plan: FaultPlan, random: SeededRandom): FaultPlan {
  const child: FaultPlan = { ...structuredClone(plan), points: [] };
  const draw = { random, at: () => 0, worker: () => 0 };
  for (const injector of Object.values(POINT_FAULTS)) if (injector.swarm !== undefined && random.chance(0.5)) injector.swarm(draw, child);
  return child;
}

/** The plan of `parent` with every fault of `kind` from `donor` added (a rate: the donor's rate). */
export function crossover(parent: FaultPlan, donor: FaultPlan, kind: string): FaultPlan {
  const child: FaultPlan = structuredClone(parent);
  if (kind.startsWith('rate:')) {
    const field = `${kind.slice('rate:'.length)}Probability` as keyof FaultRates;
    child.rates[field] = donor.rates[field] ?? 0;
    return child;
  }
  child.timed.push(...structuredClone(donor.timed.filter((fault) => fault.kind === kind)));
  child.points.push(...structuredClone(donor.points.filter((fault) => pointKind(fault) === kind)));
  return child;
}

function targetsOf(runs: readonly JobResult[]): { unreached: Target[]; rare: Target[] } {
  const markRuns = new Map<string, JobResult[]>();
  const pairRuns = new Map<string, JobResult[]>();
  const kindRuns = new Map<string, JobResult[]>();
  const pathRuns = new Map<string, JobResult[]>();
  for (const run of runs) {
    for (const path of Object.keys(run.windows?.pairs ?? {})) pathRuns.set(path, [...(pathRuns.get(path) ?? []), run]);
    for (const mark of reachedMarks(run)) markRuns.set(mark, [...(markRuns.get(mark) ?? []), run]);
    for (const pair of pairsOf(run)) pairRuns.set(pair, [...(pairRuns.get(pair) ?? []), run]);
    for (const kind of faultKinds(run.plan)) kindRuns.set(kind, [...(kindRuns.get(kind) ?? []), run]);
  }
  const byRarity = <T extends { reachedBy: number; target: string }>(a: T, b: T) => a.reachedBy - b.reachedBy || a.target.localeCompare(b.target);
  const unreached: (Target & { markRuns: number })[] = [];
  for (const [mark, parents] of markRuns) {
    for (const [kind, donors] of kindRuns) {
      const target = pairKey(mark, kind);
      if (pairRuns.has(target)) continue;
      unreached.push({ kind: 'unreached pair', target, reachedBy: 0, parents, donors, faultKind: kind, markRuns: parents.length });
    }
  }
  // The likeliest to succeed first: a mark most runs reach is likely reached again under a new seed, and
  // then with the added fault kind. Round-robin over the fault kinds, so one rare kind does not take all.
  unreached.sort((a, b) => b.markRuns - a.markRuns || a.target.localeCompare(b.target));
  const byKind = new Map<string, Target[]>();
  for (const target of unreached) byKind.set(target.faultKind as string, [...(byKind.get(target.faultKind as string) ?? []), target]);
  const kinds = [...byKind.keys()].sort();
  const interleaved: Target[] = [];
  for (let round = 0; interleaved.length < unreached.length; round++) {
    for (const kind of kinds) {
      const next = byKind.get(kind)?.[round];
      if (next !== undefined) interleaved.push(next);
    }
  }
  unreached.splice(0, unreached.length, ...(interleaved as typeof unreached));
  const rare: Target[] = [
    ...[...markRuns].map(([target, parents]): Target => ({ kind: 'rare mark', target, reachedBy: parents.length, parents })),
    ...[...pairRuns].map(([target, parents]): Target => ({ kind: 'rare pair', target, reachedBy: parents.length, parents })),
    // Pairs of state-machine moves one task combined (checkers/windows.ts): the rare combinations of paths.
    ...[...pathRuns].map(([target, parents]): Target => ({ kind: 'rare path', target, reachedBy: parents.length, parents })),
  ].sort(byRarity);
  return { unreached, rare };
}

/**
 * The child jobs of one scenario, from its plain runs (first runs only; a crashed run has no plan and
 * is no parent): one child per seed index in `indexes` (the budget's indexes after the plain ones that
 * this shard owns), its seed deriveSeed(root, "X#explore", index). Job ids start at `firstId`.
 */
export function planExplore(root: string, scenario: string, runs: readonly JobResult[], indexes: readonly number[], firstId: number): { jobs: Job[]; picks: ExplorePick[] } {
  const count = indexes.length;
  const parents = [...runs].filter((run) => !run.job.repeat && run.plan !== undefined && run.crash === undefined).sort((a, b) => a.job.index - b.job.index);
  const jobs: Job[] = [];
  const picks: ExplorePick[] = [];
  if (parents.length === 0 || count <= 0) return { jobs, picks };
  const { unreached, rare } = targetsOf(parents);
  const stream = new SeededRandom(`leasehold-explore/1:${root}:${scenario}`);
  const next = { unreached: 0, rare: 0 };
  for (let k = 0; k < count; k++) {
    // Alternate: unreached pairs on even picks, rare targets on odd ones; either list alone when the other is empty.
    const fromUnreached = unreached.length > 0 && (rare.length === 0 || k < unreached.length);
    const list = fromUnreached ? unreached : rare;
    const target = list[(fromUnreached ? next.unreached++ : next.rare++) % list.length] as Target;
    const parent = target.parents[stream.int(0, target.parents.length - 1)] as JobResult;
    const index = indexes[k] as number;
    const childSeed = deriveSeed(root, `${scenario}#explore`, index);
    let plan = parent.plan as FaultPlan;
    let donorSeed: string | undefined;
    if (target.donors !== undefined && target.faultKind !== undefined) {
      const donor = target.donors[stream.int(0, target.donors.length - 1)] as JobResult;
      donorSeed = donor.job.seed;
      // The target's kind, and every other kind the donor holds and the parent lacks: more kinds under
      // the marks the parent reaches is more pairs for one run.
      const missing = faultKinds(donor.plan).filter((kind) => kind === target.faultKind || !faultKinds(parent.plan).includes(kind));
      for (const kind of missing) plan = crossover(plan, donor.plan as FaultPlan, kind);
    }
    // A child aimed at anything but a window keeps the parent's timed faults and rates (the context that
    // reached the rare target) and draws its point faults afresh, so children spread over the windows
    // as plain seeds do instead of repeating the parent's.
    if (!isPointKind(target.faultKind)) plan = withFreshPoints(plan, stream);
    const pick: ExplorePick = { scenario, index, childSeed, parentSeed: parent.job.seed, kind: target.kind, target: target.target, reachedBy: target.reachedBy };
    if (donorSeed !== undefined) pick.donorSeed = donorSeed;
    picks.push(pick);
    jobs.push({ id: firstId + k, scenario, index, seed: childSeed, repeat: false, plan, explore: { parentSeed: parent.job.seed, target: target.target } });
  }
  return { jobs, picks };
}

/** How many (point-fault kind, await point) windows a plan can name: each kind at each point it accepts. */
const POINT_FAULT_WINDOWS = Object.values(POINT_FAULTS).reduce((sum, injector) => sum + (injector.points ?? KILL_POINTS).length, 0);

export interface PairCoverage {
  marks: { reached: number; of: number };
  /** The await-point windows (S4) some plan put a point fault in, per point-fault kind, of KILL_POINTS. */
  windows: { reached: string[]; of: number };
  /** The windows a point fault really landed in (checkers/windows.ts: fault@point), of ALL_WINDOWS. */
  hit: { reached: string[]; of: number };
  /** The pairs of SPEC moves some task combined (checkers/windows.ts), of ALL_PATH_PAIRS. */
  pathPairs: { reached: number; of: number; never: string[] };
  pairs: { reached: number; of: number };
  /** The (mark, fault kind) pairs of the universe no run reached: every mark x every fault kind some plan held. */
  neverReached: string[];
}

/** Marks and (mark, fault kind) pairs reached by `runs` (first runs only). */
export function pairCoverage(runs: readonly JobResult[]): PairCoverage {
  const first = runs.filter((run) => !run.job.repeat);
  const marks = new Set(first.flatMap(reachedMarks));
  const pairs = new Set(first.flatMap(pairsOf));
  const kinds = [...new Set(first.flatMap((run) => faultKinds(run.plan)))].sort();
  const universe = ALL_MARKS.flatMap((mark) => kinds.map((kind) => pairKey(mark, kind)));
  const windows = kinds.filter(isPointKind);
  const hit = [...new Set(first.flatMap((run) => Object.keys(run.windows?.windows ?? {})))].sort();
  const pathPairs = new Set(first.flatMap((run) => Object.keys(run.windows?.pairs ?? {})));
  return {
    marks: { reached: marks.size, of: ALL_MARKS.length },
    windows: { reached: windows, of: POINT_FAULT_WINDOWS },
    hit: { reached: hit, of: ALL_WINDOWS.length },
    pathPairs: { reached: pathPairs.size, of: ALL_PATH_PAIRS.length, never: ALL_PATH_PAIRS.filter((pair) => !pathPairs.has(pair)) },
    pairs: { reached: pairs.size, of: universe.length },
    neverReached: universe.filter((pair) => !pairs.has(pair)),
  };
}

export interface ExploreOutcome {
  fraction: number;
  plainSeedsPerScenario: number;
  exploreSeedsPerScenario: number;
  picks: ExplorePick[];
  /** Per scenario: what the plain part reached, and the plain and explore parts together. */
  scenarios: { scenario: string; plain: PairCoverage; withExplore: PairCoverage; newPairs: string[] }[];
}

export function exploreOutcome(fraction: number, split: { plain: number; explore: number }, picks: ExplorePick[], scenarios: readonly string[], results: readonly JobResult[]): ExploreOutcome {
  return {
    fraction,
    plainSeedsPerScenario: split.plain,
    exploreSeedsPerScenario: split.explore,
    picks,
    scenarios: scenarios.map((scenario) => {
      const mine = results.filter((result) => result.job.scenario === scenario && !result.job.repeat);
      const plainRuns = mine.filter((result) => result.job.explore === undefined);
      const plain = pairCoverage(plainRuns);
      const withExplore = pairCoverage(mine);
      const before = new Set(plainRuns.flatMap(pairsOf));
      const newPairs = [...new Set(mine.filter((result) => result.job.explore !== undefined).flatMap(pairsOf))].filter((pair) => !before.has(pair)).sort();
      return { scenario, plain, withExplore, newPairs };
    }),
  };
}

export function pairCoverageLine(label: string, coverage: PairCoverage): string {
  return `${label}: marks ${coverage.marks.reached}/${coverage.marks.of}, fault windows planned ${coverage.windows.reached.length}/${coverage.windows.of} (point-fault kind x await point) and hit ${coverage.hit.reached.length}/${coverage.hit.of}, (mark, fault) pairs ${coverage.pairs.reached}/${coverage.pairs.of} (${coverage.neverReached.length} never reached), move pairs ${coverage.pathPairs.reached}/${coverage.pathPairs.of}`;
}
