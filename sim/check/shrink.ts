/**
 * Shrinking (SPEC T4): a counterexample reduced to a smaller workload and fault plan that still fails
 * with the same invariant, written in the counterexample format so `leasehold replay OUT.json` reruns it.
 * `leasehold shrink FILE.json` (sim/cli/commands/shrink.ts), `shrink()` of leasehold/testing and the
 * mutation runner (tools/mutants/shrink.ts) all run this.
 *
 * A candidate is kept while a run of it still has a violation of the invariant ('harness' for a crash).
 * First the workload gets smaller (a topics part's topics, or a rounds part's rounds and tasks per round:
 * arrivals are drawn in order, so a smaller workload is a prefix of the larger one's), then the fault plan loses faults,
 * halves first and then one at a time (a rate counts as one fault and is set to 0). The budget (runs and
 * wall time) bounds the work; what is left when it runs out is written as it is, and the outcome says the
 * budget ran out. The case written is run once more after the search, outside the budget, so the trace
 * hash, marks and metrics it records are those of exactly the case it holds.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { faultCount, type FaultPlan, type FaultRates } from '../faults/plan.ts';
import type { Verdict, Violation } from '../report-types.ts';
import { simulate } from '../run-scenario.ts';
import type { ScenarioSpec } from '../scenario.ts';
import type { SimStore } from '../store/pglite.ts';
import { workloadKnobs as partKnobs } from '../workloads/index.ts';
import { COUNTEREXAMPLE_FORMAT, replayFileCommand, type Counterexample } from './counterexample.ts';
import { gitState } from './git.ts';
import { versions } from './versions.ts';
import { wallClockMs } from './wall-clock.ts';

/** Candidate runs a shrink tries at most, without a budget of its own. */
export const DEFAULT_SHRINK_RUNS = 100;
/** Wall time a shrink spends at most, without a budget of its own (2 minutes). */
export const DEFAULT_SHRINK_MS = 120_000;
/** The invariant a crashed run is shrunk by. */
export const HARNESS_INVARIANT = 'harness';

/** What a shrink starts from: the parts of a counterexample it reads (a file's, or one built in code). */
export type ShrinkCase = Pick<Counterexample, 'scenario' | 'scenarioSpec' | 'seed'> & Partial<Pick<Counterexample, 'plan' | 'violations' | 'crash' | 'check' | 'scenarioFile' | 'agent'>>;

export interface ShrinkRequest {
  case: ShrinkCase;
  /** The invariant the shrunk case must still violate (default: the case's first violation's; 'harness' for a crash). */
  invariant: string;
  /** Where the shrunk counterexample is written. */
  out: string;
  maxRuns: number;
  maxMs: number;
  store?: SimStore;
  /** The file the case came from, recorded in the shrunk file. */
  from?: string;
  /** One line per step (a candidate kept or not), for progress on stderr. Nothing is printed without it. */
  onProgress?: (line: string) => void;
}

export interface ShrinkSize {
  faults: number;
  tasks: number;
}

export interface ShrinkOutcome {
  /** The case failed with the invariant when it was run again; false: nothing was shrunk or written. */
  reproduced: boolean;
  invariant: string;
  /** Runs made, the first and the final confirmation included. */
  runs: number;
  /** The budget ran out before every candidate was tried: the case may shrink further with a larger one. */
  exhausted: boolean;
  before: ShrinkSize;
  after: ShrinkSize;
  /** The verdict, violations and trace hash of the shrunk case (of the first run when not reproduced). */
  verdict: Verdict;
  violations: Violation[];
  traceHash: string;
  /** The shrunk counterexample file and the line that replays it (when reproduced). */
  file?: string;
  replay?: string;
  /** What the shrink took out: the workload knobs it lowered (`topics 20 -> 3`). */
  workload: string[];
}

/** A counterexample written by a shrink: the counterexample format, with where it came from and what was removed. */
export interface ShrunkCounterexample extends Counterexample {
  shrunk: { from: string | null; invariant: string; before: ShrinkSize; after: ShrinkSize; workload: string[]; runs: number; exhausted: boolean };
}

interface Candidate {
  spec: ScenarioSpec;
  plan: FaultPlan;
}

/** The invariant a case is shrunk by when none is named: its first violation's, or 'harness' for a crash. */
export function defaultInvariant(recorded: Pick<ShrinkCase, 'violations' | 'crash'>): string | undefined {
  const first = recorded.violations?.[0]?.invariant;
  if (first !== undefined) return first;
  return recorded.crash === undefined ? undefined : HARNESS_INVARIANT;
}

export async function shrinkCase(request: ShrinkRequest): Promise<ShrinkOutcome> {
  const { invariant, maxRuns, maxMs } = request;
  const recorded = request.case;
  const say = request.onProgress ?? (() => {});
  const store = request.store ?? 'sqlite';
  const run = (candidate: Partial<Candidate> & { spec: ScenarioSpec }) =>
    simulate({ scenario: candidate.spec, seed: recorded.seed, ...(candidate.plan === undefined ? {} : { plan: candidate.plan }), ...(store === 'sqlite' ? {} : { store }), ...(recorded.agent === undefined ? {} : { agent: recorded.agent }) });
  const hits = (violations: readonly Violation[]) => violations.some((violation) => violation.invariant === invariant);
  const started = wallClockMs();
  let runs = 0;
  let exhausted = false;

  // The recorded plan, or (for a run that crashed before it had one) the one the seed draws.
  const first = await run({ spec: recorded.scenarioSpec, ...(recorded.plan === undefined ? {} : { plan: recorded.plan }) });
  runs++;
  let best: Candidate = { spec: structuredClone(recorded.scenarioSpec), plan: structuredClone(first.world.plan) };
  const before = { faults: faultCount(best.plan), tasks: first.world.final.tasks.length };
  if (!hits(first.report.violations)) {
    say(`shrink: the case does not fail with ${invariant} when run again (verdict ${first.report.verdict}); nothing to shrink`);
    return { reproduced: false, invariant, runs, exhausted, before, after: before, verdict: first.report.verdict, violations: first.report.violations, traceHash: first.report.traceHash, workload: [] };
  }
  say(`shrink: ${recorded.scenario} seed ${recorded.seed} fails with ${invariant}: ${before.faults} fault(s), ${before.tasks} task(s); budget ${maxRuns} runs, ${Math.round(maxMs / 1000)} s`);

  const fails = async (candidate: Candidate, what: string): Promise<boolean> => {
    if (runs >= maxRuns || wallClockMs() - started > maxMs) {
      if (!exhausted) say(`shrink: budget spent (${runs} runs, ${Math.round((wallClockMs() - started) / 1000)} s); keeping what is left`);
      exhausted = true;
      return false;
    }
    runs++;
    const { report } = await run(candidate);
    const hit = hits(report.violations);
    say(`shrink: run ${runs}: ${what}: ${hit ? `still fails with ${invariant}, kept` : `passes or fails otherwise (${report.verdict}), dropped`}`);
    return hit;
  };

  // 1. A smaller workload: the smallest size that still fails, trying small sizes first (they are cheap).
  const workload: string[] = [];
  for (const knob of workloadKnobs(best.spec)) {
    const current = knob.get(best.spec);
    for (const size of smallerSizes(current)) {
      const spec = structuredClone(best.spec);
      knob.set(spec, size);
      if (!knob.valid(spec)) continue;
      if (await fails({ spec, plan: best.plan }, `workload ${knob.name} ${current} -> ${size}`)) {
        best = { spec, plan: best.plan };
        workload.push(`${knob.name} ${current} -> ${size}`);
        break;
      }
      if (exhausted) break;
    }
  }

  // 2. Fewer faults: remove chunks of the fault list, halves first, then ones.
  const original = best.plan;
  let items = faultItems(original);
  for (let chunk = Math.ceil(items.length / 2); chunk >= 1 && !exhausted; chunk = chunk === 1 ? 0 : Math.ceil(chunk / 2)) {
    for (let start = 0; start < items.length && !exhausted; ) {
      const kept = [...items.slice(0, start), ...items.slice(start + chunk)];
      const plan = planOf(original, kept);
      if (await fails({ spec: best.spec, plan }, `faults ${faultCount(best.plan)} -> ${faultCount(plan)}`)) {
        best = { spec: best.spec, plan };
        items = kept;
      } else start += chunk;
    }
  }

  // The case written is run once more with its explicit plan, so the file records that run's hash exactly.
  const final = await run(best);
  runs++;
  if (!hits(final.report.violations)) {
    // The search kept only failing candidates and the simulator is deterministic: a pass here is I14.
    throw new Error(`shrink: the shrunk case of ${recorded.scenario} seed ${recorded.seed} failed with ${invariant} in the search and passed when run again (nondeterminism, I14)`);
  }
  const after = { faults: faultCount(best.plan), tasks: final.world.final.tasks.length };
  const file = writeShrunk(request, best, final.report, { from: request.from ?? null, invariant, before, after, workload, runs, exhausted });
  say(`shrink: ${before.faults} -> ${after.faults} fault(s), ${before.tasks} -> ${after.tasks} task(s) in ${runs} runs${exhausted ? ' (budget ran out)' : ''}`);
  return {
    reproduced: true,
    invariant,
    runs,
    exhausted,
    before,
    after,
    verdict: final.report.verdict,
    violations: final.report.violations,
    traceHash: final.report.traceHash,
    file: request.out,
    replay: file.replay,
    workload,
  };
}

function writeShrunk(request: ShrinkRequest, best: Candidate, report: { verdict: Verdict; violations: Violation[]; traceHash: string; marks: Record<string, number>; metrics: Record<string, number> }, shrunk: ShrunkCounterexample['shrunk']): ShrunkCounterexample {
  const git = gitState();
  const recorded = request.case;
  const file: ShrunkCounterexample = {
    format: COUNTEREXAMPLE_FORMAT,
    replay: `${replayFileCommand(request.out)}${request.store === 'pglite' ? ' --store pglite' : ''}`,
    shrunk,
    scenario: best.spec.name,
    ...(recorded.agent === undefined ? {} : { agent: recorded.agent }),
    seed: recorded.seed,
    verdict: report.verdict,
    violations: report.violations,
    traceHash: report.traceHash,
    check: recorded.check ?? { rootSeed: recorded.seed, rootSeedSource: 'flag', seedIndex: 0 },
    git: { commit: git.commit ?? null, dirty: git.dirty },
    versions: versions(),
    plan: best.plan,
    marks: report.marks,
    metrics: report.metrics,
    scenarioSpec: best.spec,
  };
  mkdirSync(dirname(request.out), { recursive: true });
  writeFileSync(request.out, `${JSON.stringify(file, null, 2)}\n`);
  return file;
}

interface Knob {
  name: string;
  get(spec: ScenarioSpec): number;
  set(spec: ScenarioSpec, value: number): void;
  valid(spec: ScenarioSpec): boolean;
}

/** The workload's typed parts say what can get smaller (sim/workloads/index.ts workloadKnobs). */
function workloadKnobs(spec: ScenarioSpec): Knob[] {
  return partKnobs(spec.workload).map((knob) => ({ name: knob.name, get: (s) => knob.get(s.workload), set: (s, v) => knob.set(s.workload, v), valid: (s) => knob.valid(s.workload) }));
}

/** 1, 2, 3, 5, 8, ... below `current`, smallest first. */
export function smallerSizes(current: number): number[] {
  const sizes: number[] = [];
  for (let a = 1, b = 2; a < current; [a, b] = [b, a + b]) sizes.push(a);
  return sizes;
}

type FaultItem = { kind: 'timed'; index: number } | { kind: 'point'; index: number } | { kind: 'rate'; key: keyof FaultRates };

function faultItems(plan: FaultPlan): FaultItem[] {
  return [
    ...plan.timed.map((_, index) => ({ kind: 'timed' as const, index })),
    ...plan.points.map((_, index) => ({ kind: 'point' as const, index })),
    ...(Object.keys(plan.rates) as (keyof FaultRates)[]).filter((key) => (plan.rates[key] ?? 0) > 0).map((key) => ({ kind: 'rate' as const, key })),
  ];
}

/** The plan keeping only `kept` of the original plan's faults (indexes refer to `original`). */
export function planOf(original: FaultPlan, kept: readonly FaultItem[]): FaultPlan {
  const timed = new Set(kept.filter((item) => item.kind === 'timed').map((item) => (item as { index: number }).index));
  const points = new Set(kept.filter((item) => item.kind === 'point').map((item) => (item as { index: number }).index));
  const rates = new Set(kept.filter((item) => item.kind === 'rate').map((item) => (item as { key: keyof FaultRates }).key));
  return {
    ...original,
    timed: original.timed.filter((_, index) => timed.has(index)),
    points: original.points.filter((_, index) => points.has(index)),
    rates: Object.fromEntries(Object.entries(original.rates).map(([key, value]) => [key, rates.has(key as keyof FaultRates) ? value : 0])) as unknown as FaultRates,
  };
}
