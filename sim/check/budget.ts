import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalJson } from '../canonical-json.ts';
import { PACKAGE_ROOT } from '../package-root.ts';
import type { ScenarioSpec } from '../scenario.ts';
import { pairsOf } from './explore.ts';
import type { JobResult } from './types.ts';

/**
 * How `leasehold check` splits its seed budget across scenarios by what each one finds (issue 20 item 2).
 *
 * A calibration run (`npm run calibrate`, tools/calibrate.ts) runs T seeds of every catalogue scenario and
 * records, per scenario, what its seeds reached: every coverage mark, every (mark, fault kind) pair, every
 * await-point window a fault hit and every pair of SPEC moves a task combined (checkers/windows.ts). Those
 * are the scenario's *features*; how many of its T seeds reached each is its incidence. From the incidence
 * counts alone, the expected number of distinct features that t seeds of the scenario reach follows the
 * standard species-accumulation estimate for incidence data (Chao et al. 2014, Ecological Monographs 84):
 *
 * - t <= T, interpolated exactly: S(t) = sum over features k of 1 - C(T - Y_k, t) / C(T, t);
 * - t > T, extrapolated: S(t) = S_obs + Q0 (1 - (1 - Q1 / (T Q0 + Q1))^(t - T)), where Q1 and Q2 are the
 *   features reached by exactly one and two seeds and Q0 = (T - 1)/T x Q1^2 / (2 Q2) estimates those not
 *   yet seen (Chao2). Extrapolation is trusted to 3T (MAX_EXTRAPOLATION), so no scenario gets more.
 *
 * The budget is thread time: `--budget N` is what N seeds of every scenario would cost (the calibration
 * measured each scenario's thread time per seed), so a split run takes as long as the even one. Every
 * scenario keeps FLOOR_SHARE of its even share (half: 50 seeds at the default 100, which is also the
 * seeds a scenario needs before check demands its coverage marks, coverage.ts), and the rest is handed
 * out one seed at a time to the scenario whose next seed adds the most expected features per
 * millisecond. S is concave in t, so the greedy hand-out maximises the expected features of the whole
 * run for its time. A scenario the calibration does not know (a --scenario FILE, or a catalogue entry
 * added since) gets its even share and is named in the header.
 */

export const YIELD_FORMAT = 'leasehold-yield/1';
/** Where the calibration lives in the package: a folder, so the catalogue (scenarios/*.json) does not list it. */
export const YIELD_FILE = join('scenarios', 'calibration', 'yield.json');
/** Each scenario keeps this share of its even seeds whatever it finds. */
export const FLOOR_SHARE = 0.5;
/** No scenario gets more than this many times the calibration's seeds: the estimate is not trusted further. */
export const MAX_EXTRAPOLATION = 3;

/** What T seeds of one scenario reached, as the calibration recorded it. */
export interface ScenarioYield {
  /** sha256 of the scenario's canonical spec when calibrated, to tell a stale calibration. */
  specHash: string;
  /** T: seeds run. */
  seeds: number;
  /** Mean thread time per seed, ms. */
  msPerSeed: number;
  /** Distinct features reached. */
  features: number;
  /** incidence[y] = how many features exactly y of the T seeds reached (y from 1; absent = 0). */
  incidence: Record<string, number>;
}

export interface YieldCalibration {
  format: typeof YIELD_FORMAT;
  rootSeed: string;
  commit: string | null;
  seedsPerScenario: number;
  scenarios: Record<string, ScenarioYield>;
}

/** The features of one run: marks, (mark, fault kind) pairs, windows hit, move pairs. */
export function featuresOf(result: JobResult): string[] {
  const features: string[] = [];
  for (const [mark, count] of Object.entries(result.marks)) if (count > 0) features.push(`mark ${mark}`);
  for (const pair of pairsOf(result)) features.push(`pair ${pair}`);
  for (const [window, count] of Object.entries(result.windows?.windows ?? {})) if (count > 0) features.push(`window ${window}`);
  for (const [pair, count] of Object.entries(result.windows?.pairs ?? {})) if (count > 0) features.push(`path ${pair}`);
  return features;
}

export function specHash(spec: ScenarioSpec): string {
  return createHash('sha256').update(canonicalJson(spec)).digest('hex').slice(0, 16);
}

/** One scenario's calibration from its runs (first runs only). */
export function scenarioYield(spec: ScenarioSpec, results: readonly JobResult[]): ScenarioYield {
  const runs = results.filter((result) => !result.job.repeat);
  const reachedBy = new Map<string, number>();
  for (const run of runs) for (const feature of new Set(featuresOf(run))) reachedBy.set(feature, (reachedBy.get(feature) ?? 0) + 1);
  const incidence: Record<string, number> = {};
  for (const y of reachedBy.values()) incidence[y] = (incidence[y] ?? 0) + 1;
  const sorted = Object.fromEntries(Object.entries(incidence).sort(([a], [b]) => Number(a) - Number(b)));
  const ms = runs.reduce((sum, run) => sum + run.elapsedMs, 0);
  return { specHash: specHash(spec), seeds: runs.length, msPerSeed: runs.length === 0 ? 0 : Math.round((ms / runs.length) * 10) / 10, features: reachedBy.size, incidence: sorted };
}

/** Expected distinct features reached by t seeds of a scenario (see the header). */
export function expectedFeatures(calibration: ScenarioYield, t: number): number {
  const T = calibration.seeds;
  const counts = Object.entries(calibration.incidence).map(([y, q]) => [Number(y), q] as const);
  if (t <= 0 || T === 0) return 0;
  if (t <= T) {
    let sum = 0;
    for (const [y, q] of counts) {
      // C(T - y, t) / C(T, t) = prod_{i < t} (T - y - i) / (T - i): the chance t seeds drawn from T all miss it.
      let miss = 1;
      for (let i = 0; i < t && miss > 0; i++) miss *= Math.max(0, T - y - i) / (T - i);
      sum += q * (1 - miss);
    }
    return sum;
  }
  const q1 = calibration.incidence['1'] ?? 0;
  const q2 = calibration.incidence['2'] ?? 0;
  if (q1 === 0) return calibration.features;
  const q0 = q2 > 0 ? ((T - 1) / T) * ((q1 * q1) / (2 * q2)) : ((T - 1) / T) * ((q1 * (q1 - 1)) / 2);
  if (q0 <= 0) return calibration.features;
  return calibration.features + q0 * (1 - (1 - q1 / (T * q0 + q1)) ** (t - T));
}

export interface SeedSplit {
  /** Seeds per scenario, in the order given. */
  seeds: Record<string, number>;
  /** Scenarios given their even share because the calibration does not know them (or knew another version). */
  uncalibrated: string[];
  /** The budget in thread ms and what the split spends of it. */
  budgetMs: number;
  spentMs: number;
}

/**
 * The split of `base` seeds' worth of thread time per scenario (see the header). Deterministic: of
 * equal gains, the scenario with fewer seeds so far goes first, then the one listed first; so time left
 * once nothing is expected to find more (every gain 0) is spread over the scenarios instead of piled on one.
 */
export function splitByYield(names: readonly string[], specs: Record<string, ScenarioSpec>, base: number, calibration: YieldCalibration | undefined): SeedSplit {
  // Each scenario's calibration, when it is of this version of the scenario (its spec's hash).
  const entries = new Map<string, ScenarioYield>();
  for (const name of names) {
    const entry = calibration?.scenarios[name];
    const spec = specs[name];
    if (entry !== undefined && entry.seeds > 0 && entry.msPerSeed > 0 && spec !== undefined && entry.specHash === specHash(spec)) entries.set(name, entry);
  }
  const known = (name: string) => entries.get(name);
  const uncalibrated = names.filter((name) => known(name) === undefined);
  const seeds: Record<string, number> = {};
  const floor = Math.max(1, Math.ceil(base * FLOOR_SHARE));
  let budgetMs = 0;
  let spentMs = 0;
  for (const name of names) {
    const entry = known(name);
    if (entry === undefined) {
      seeds[name] = base;
      continue;
    }
    budgetMs += base * entry.msPerSeed;
    seeds[name] = Math.min(floor, base);
    spentMs += seeds[name] * entry.msPerSeed;
  }
  const calibrated = names.filter((name) => known(name) !== undefined);
  const gainOf = (name: string) => {
    const entry = known(name)!;
    const n = seeds[name]!;
    if (n >= entry.seeds * MAX_EXTRAPOLATION) return -1;
    return (expectedFeatures(entry, n + 1) - expectedFeatures(entry, n)) / entry.msPerSeed;
  };
  const gains = new Map(calibrated.map((name) => [name, gainOf(name)]));
  for (;;) {
    let best: string | undefined;
    for (const name of calibrated) {
      const gain = gains.get(name)!;
      if (gain < 0 || spentMs + known(name)!.msPerSeed > budgetMs) continue;
      const bestGain = best === undefined ? -1 : gains.get(best)!;
      if (best === undefined || gain > bestGain || (gain === bestGain && seeds[name]! < seeds[best]!)) best = name;
    }
    if (best === undefined) break;
    seeds[best]!++;
    spentMs += known(best)!.msPerSeed;
    gains.set(best, gainOf(best));
  }
  return { seeds, uncalibrated, budgetMs, spentMs };
}

/**
 * The package's calibration, or undefined when there is none (every scenario then gets its even share,
 * and the check's header names them). A file that is there but unreadable is an error that names it:
 * a gate that quietly lost its split would run other seeds than the ones its users expect.
 */
export function readYieldCalibration(path = join(PACKAGE_ROOT, YIELD_FILE)): YieldCalibration | undefined {
  if (!existsSync(path)) return undefined;
  let parsed: Partial<YieldCalibration> | null;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<YieldCalibration> | null;
  } catch (error) {
    throw new Error(`${path} is not JSON (${(error as Error).message}); rerun npm run calibrate, or git checkout the file`);
  }
  if (parsed?.format !== YIELD_FORMAT || typeof parsed.scenarios !== 'object' || parsed.scenarios === null) {
    throw new Error(`${path} is not a calibration of format ${YIELD_FORMAT}; rerun npm run calibrate, or git checkout the file`);
  }
  return parsed as YieldCalibration;
}

/** The budget in words, for headers and reports: `100 seeds per scenario`, or the split and its range. */
export function budgetPhrase(seedsPerScenario: number, split: SeedSplit | undefined): string {
  if (split === undefined) return `${seedsPerScenario} seeds per scenario`;
  const counts = Object.values(split.seeds);
  const total = counts.reduce((sum, n) => sum + n, 0);
  return `--budget ${seedsPerScenario}: ${total} seeds split by what each scenario finds (${Math.min(...counts)} to ${Math.max(...counts)} per scenario, ${FLOOR_SHARE * 100}% of the even share at least)`;
}
