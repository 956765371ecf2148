/**
 * Shrinks one counterexample written by `leasehold check`, inside a sabotaged copy of the project
 * (tools/mutants/run.ts runs it there with tsx, so it simulates the sabotaged src/):
 *
 *   tsx tools/mutants/shrink.ts COUNTEREXAMPLE.json INVARIANT OUT.json [MAX_RUNS] [MAX_MS]
 *
 * A candidate is kept while a run of it still has a violation of INVARIANT ('harness' for a crash).
 * First the workload gets smaller (fewer topics, or fewer rounds and tasks per round: arrivals are
 * drawn in order, so a smaller workload is a prefix of the larger one's), then the fault plan loses
 * faults, halves first and then one at a time (a rate counts as one fault and is set to 0). The budget
 * bounds the work; what is left when it runs out is reported as it is. The shrunk case is written to
 * OUT.json in the counterexample format, so `leasehold replay OUT.json` reruns it (in the sabotaged
 * copy). One JSON line on stdout says what came of it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { COUNTEREXAMPLE_FORMAT } from '../../sim/check/counterexample.ts';
import { faultCount, type FaultPlan, type FaultRates } from '../../sim/faults/plan.ts';
import type { Violation } from '../../sim/report-types.ts';
import { simulate } from '../../sim/run-scenario.ts';
import type { ScenarioSpec } from '../../sim/scenario.ts';
import { wallClockMs } from '../../sim/check/wall-clock.ts';

export interface ShrinkOutcome {
  reproduced: boolean;
  runs: number;
  exhausted: boolean;
  before: { faults: number; tasks: number };
  after: { faults: number; tasks: number };
  violations: Violation[];
  file?: string;
}

interface Case {
  spec: ScenarioSpec;
  plan: FaultPlan;
}

async function main(argv: string[]): Promise<void> {
  const [file, invariant, out, maxRunsArg, maxMsArg] = argv;
  if (file === undefined || invariant === undefined || out === undefined) {
    process.stderr.write('usage: tsx tools/mutants/shrink.ts COUNTEREXAMPLE.json INVARIANT OUT.json [MAX_RUNS] [MAX_MS]\n');
    process.exit(64);
  }
  const maxRuns = Number(maxRunsArg ?? 40);
  const maxMs = Number(maxMsArg ?? 180_000);
  const recorded = JSON.parse(readFileSync(file, 'utf8')) as { scenarioSpec: ScenarioSpec; seed: string; plan?: FaultPlan; metrics?: Record<string, number> };
  const outcome = await shrink(recorded, invariant, out, maxRuns, maxMs);
  process.stdout.write(`${JSON.stringify(outcome)}\n`);
}

export async function shrink(
  recorded: { scenarioSpec: ScenarioSpec; seed: string; plan?: FaultPlan },
  invariant: string,
  out: string,
  maxRuns: number,
  maxMs: number,
): Promise<ShrinkOutcome> {
  const started = wallClockMs();
  let runs = 0;
  let exhausted = false;
  let lastFailing: { violations: Violation[]; tasks: number; traceHash: string; verdict: string } | undefined;

  const fails = async (candidate: Case): Promise<boolean> => {
    if (runs >= maxRuns || wallClockMs() - started > maxMs) {
      exhausted = true;
      return false;
    }
    runs++;
    const { world, report } = await simulate({ scenario: candidate.spec, seed: recorded.seed, plan: candidate.plan });
    const hit = report.violations.some((violation) => violation.invariant === invariant);
    if (hit) lastFailing = { violations: report.violations, tasks: world.final.tasks.length, traceHash: report.traceHash, verdict: report.verdict };
    return hit;
  };

  // The recorded plan, or (for a run that crashed before it had one) the one the seed draws.
  const first = await simulate({ scenario: recorded.scenarioSpec, seed: recorded.seed, ...(recorded.plan === undefined ? {} : { plan: recorded.plan }) });
  runs++;
  let best: Case = { spec: structuredClone(recorded.scenarioSpec), plan: structuredClone(first.world.plan) };
  const before = { faults: faultCount(best.plan), tasks: first.world.final.tasks.length };
  if (!first.report.violations.some((violation) => violation.invariant === invariant)) {
    return { reproduced: false, runs, exhausted, before, after: before, violations: first.report.violations };
  }
  lastFailing = { violations: first.report.violations, tasks: first.world.final.tasks.length, traceHash: first.report.traceHash, verdict: first.report.verdict };

  // 1. A smaller workload: the smallest size that still fails, trying small sizes first (they are cheap).
  for (const knob of workloadKnobs(best.spec)) {
    for (const size of smallerSizes(knob.get(best.spec))) {
      const spec = structuredClone(best.spec);
      knob.set(spec, size);
      if (!knob.valid(spec)) continue;
      if (await fails({ spec, plan: best.plan })) {
        best = { spec, plan: best.plan };
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
      if (await fails({ spec: best.spec, plan })) {
        best = { spec: best.spec, plan };
        items = kept;
      } else start += chunk;
    }
  }

  const after = { faults: faultCount(best.plan), tasks: lastFailing.tasks };
  writeFileSync(
    out,
    `${JSON.stringify(
      {
        format: COUNTEREXAMPLE_FORMAT,
        replay: `leasehold replay ${out}`,
        shrunk: true,
        scenario: best.spec.name,
        seed: recorded.seed,
        verdict: lastFailing.verdict,
        violations: lastFailing.violations,
        traceHash: lastFailing.traceHash,
        git: { commit: null, dirty: true },
        plan: best.plan,
        marks: {},
        metrics: { tasks: after.tasks, faults: after.faults },
        scenarioSpec: best.spec,
      },
      null,
      2,
    )}\n`,
  );
  return { reproduced: true, runs, exhausted, before, after, violations: lastFailing.violations, file: out };
}

interface Knob {
  get(spec: ScenarioSpec): number;
  set(spec: ScenarioSpec, value: number): void;
  valid(spec: ScenarioSpec): boolean;
}

function workloadKnobs(spec: ScenarioSpec): Knob[] {
  if (spec.workload.rounds === undefined) {
    return [{ get: (s) => s.workload.topics, set: (s, v) => void (s.workload.topics = v), valid: () => true }];
  }
  // The poison tasks must fit in the rounds.
  const valid = (s: ScenarioSpec) => s.workload.rounds!.count * s.workload.rounds!.tasksPerRound >= (s.workload.poisonTasks ?? 0);
  return [
    { get: (s) => s.workload.rounds!.count, set: (s, v) => void (s.workload.rounds!.count = v), valid },
    { get: (s) => s.workload.rounds!.tasksPerRound, set: (s, v) => void (s.workload.rounds!.tasksPerRound = v), valid },
  ];
}

/** 1, 2, 3, 5, 8, ... below `current`, smallest first. */
function smallerSizes(current: number): number[] {
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
function planOf(original: FaultPlan, kept: readonly FaultItem[]): FaultPlan {
  const timed = new Set(kept.filter((item) => item.kind === 'timed').map((item) => (item as { index: number }).index));
  const points = new Set(kept.filter((item) => item.kind === 'point').map((item) => (item as { index: number }).index));
  const rates = new Set(kept.filter((item) => item.kind === 'rate').map((item) => (item as { key: keyof FaultRates }).key));
  return {
    timed: original.timed.filter((_, index) => timed.has(index)),
    points: original.points.filter((_, index) => points.has(index)),
    rates: Object.fromEntries(Object.entries(original.rates).map(([key, value]) => [key, rates.has(key as keyof FaultRates) ? value : 0])) as unknown as FaultRates,
  };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  await main(process.argv.slice(2));
}
