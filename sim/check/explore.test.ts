import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../cli/command-specs.ts';
import { exploreFraction } from '../cli/commands/check.ts';
import { UsageError } from '../cli/usage-error.ts';
import { POINT_FAULTS } from '../faults/index.ts';
import { emptyPlan, KILL_POINTS, type FaultPlan } from '../faults/plan.ts';
import { SeededRandom } from '../random.ts';
import { simulate } from '../run-scenario.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import { crossover, faultKinds, pairCoverage, pairsOf, planExplore, splitBudget, withFreshPoints, type ExploreOutcome } from './explore.ts';
import { runCheck } from './run-check.ts';
import { runJob } from './run-job.ts';
import { catalogueSources } from './scenario-source.ts';
import { planJobs } from './seeds.ts';
import type { JobResult } from './types.ts';

const scratch = mkdtempSync(join(tmpdir(), 'leasehold-explore-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function plan(parts: { timed?: FaultPlan['timed']; points?: FaultPlan['points']; rates?: Partial<FaultPlan['rates']> } = {}): FaultPlan {
  const base = emptyPlan();
  return { timed: parts.timed ?? base.timed, points: parts.points ?? base.points, rates: { ...base.rates, ...(parts.rates ?? {}) } };
}

const kill = { kind: 'kill', atMs: 5_000, worker: 0, reviveAfterMs: 1_000 } as FaultPlan['timed'][number];
const pause = { kind: 'pause', atMs: 7_000, worker: 1, durationMs: 40_000 } as FaultPlan['timed'][number];

function result(index: number, marks: Record<string, number>, faults: FaultPlan): JobResult {
  return { job: { id: index, scenario: 'mixed', index, seed: `s${index}`, repeat: false }, verdict: 'pass', traceHash: 'h', violations: [], marks, metrics: {}, plan: faults, elapsedMs: 1 };
}

const RUNS = [
  result(0, { kill: 1, settled: 3, dead_letter: 0 }, plan({ timed: [kill] })),
  result(1, { pause: 1, settled: 2 }, plan({ timed: [pause], rates: { slowToolProbability: 0.1 } })),
  result(2, { settled: 1, dead_letter: 1 }, plan({ timed: [kill] })),
];

describe('guided search (--explore): its parts', () => {
  it('names the fault kinds of a plan and the (mark, fault kind) pairs of a run', () => {
    expect(faultKinds(RUNS[1]!.plan)).toEqual(['pause', 'rate:slowTool']);
    expect(pairsOf(RUNS[0]!)).toEqual(['kill × kill', 'settled × kill']);
    const coverage = pairCoverage(RUNS);
    expect(coverage.pairs.reached).toBe(7);
    expect(coverage.neverReached).toContain('dead_letter × pause');
    expect(coverage.neverReached).not.toContain('dead_letter × kill');
  });

  it('names point faults by window (await point), and crossover copies only that window', () => {
    const points = [
      { kind: 'kill-at', point: 'after_effect', occurrence: 1, reviveAfterMs: 1_000 },
      { kind: 'kill-at', point: 'before_tool_call', occurrence: 2, reviveAfterMs: 1_000 },
    ] as FaultPlan['points'];
    const donor = plan({ points });
    expect(faultKinds(donor)).toEqual(['kill-at:after_effect', 'kill-at:before_tool_call']);
    expect(crossover(emptyPlan(), donor, 'kill-at:after_effect').points).toEqual([points[0]]);
    const coverage = pairCoverage([result(0, { kill: 1 }, donor)]);
    expect(coverage.windows).toEqual({ reached: ['kill-at:after_effect', 'kill-at:before_tool_call'], of: (Object.keys(POINT_FAULTS).length - 1) * KILL_POINTS.length + 2 });
    // error-at is the one kind not put at every await point: only at a model or a tool call.
    expect(POINT_FAULTS['error-at'].points).toEqual(['before_model_call', 'before_tool_call']);
  });

  it('crossover adds the donor faults of one kind (or its rate) to a copy of the parent plan', () => {
    const parent = plan({ timed: [kill] });
    const child = crossover(parent, RUNS[1]!.plan!, 'pause');
    expect(child.timed).toEqual([kill, pause]);
    expect(parent.timed).toEqual([kill]);
    expect(crossover(parent, RUNS[1]!.plan!, 'rate:slowTool').rates.slowToolProbability).toBe(0.1);
  });

  it('splits the budget with at least one plain seed, and the plain part is the plain check\'s first seeds', () => {
    expect(splitBudget(20, 0.5)).toEqual({ plain: 10, explore: 10 });
    expect(splitBudget(1, 0.9)).toEqual({ plain: 1, explore: 0 });
    expect(splitBudget(10, 0.99)).toEqual({ plain: 1, explore: 9 });
    expect(planJobs('7', ['mixed', 'queue-full'], 5)).toEqual(planJobs('7', ['mixed', 'queue-full'], 20).slice(0, 10));
  });

  it('picks deterministically from the root seed: unreached pairs by crossover first, then rare targets; a new root picks other parents or seeds', () => {
    const first = planExplore('root', 'mixed', RUNS, [3, 4, 5, 6, 7, 8], 100);
    expect(planExplore('root', 'mixed', RUNS, [3, 4, 5, 6, 7, 8], 100)).toEqual(first);
    expect(first.jobs.map((job) => [job.id, job.index])).toEqual([
      [100, 3],
      [101, 4],
      [102, 5],
      [103, 6],
      [104, 7],
      [105, 8],
    ]);
    expect(first.picks[0]).toMatchObject({ kind: 'unreached pair', reachedBy: 0 });
    expect(first.picks.filter((pick) => pick.kind === 'unreached pair').every((pick) => pick.donorSeed !== undefined)).toBe(true);
    // An unreached pair's child runs its parent's plan with the donor's faults of that kind added.
    const pick = first.picks[0]!;
    const child = first.jobs[0]!;
    const kind = pick.target.split(' × ')[1]!;
    expect(faultKinds(child.plan)).toContain(kind);
    expect(child.explore).toEqual({ parentSeed: pick.parentSeed, target: pick.target });
    expect(new Set(first.jobs.map((job) => job.seed)).size).toBe(6);
    const other = planExplore('another root', 'mixed', RUNS, [3, 4, 5, 6, 7, 8], 100);
    expect(other.jobs.map((job) => job.seed)).not.toEqual(first.jobs.map((job) => job.seed));
    expect(planExplore('root', 'mixed', [], [3, 4, 5, 6, 7, 8], 100).jobs).toEqual([]);
  });

  it('a plain job runs exactly its seed, as simulate does (trace hash unchanged); a child runs its plan', async () => {
    const spec = catalogueScenario('queue-full');
    const [job] = planJobs('7', ['queue-full'], 1);
    const plain = await runJob(job!, spec);
    expect(plain.traceHash).toBe((await simulate({ scenario: spec, seed: job!.seed })).report.traceHash);
    const child = await runJob({ ...job!, plan: emptyPlan() }, spec);
    expect(child.plan).toEqual(emptyPlan());
    expect(child.traceHash).toBe((await simulate({ scenario: spec, seed: job!.seed, plan: emptyPlan() })).report.traceHash);
  });
});

describe('--explore on the command line', () => {
  it('parses a share above 0 and below 1, and the help lists it', () => {
    expect(exploreFraction(undefined)).toBeUndefined();
    expect(exploreFraction('50%')).toBe(0.5);
    expect(exploreFraction('0.25')).toBe(0.25);
    for (const bad of ['0', '1', '100%', '', 'half', '-0.5']) expect(() => exploreFraction(bad)).toThrow(UsageError);
    expect(COMMANDS.check.flags.map((flag) => flag.name)).toContain('explore');
    expect(COMMANDS.check.synopsis).toContain('--explore FRACTION');
  });
});

async function check(name: string, explore?: number): Promise<{ pairs: { pairs: { reached: number } }; explore?: ExploreOutcome; exitCode: number }> {
  const outDir = join(scratch, name);
  const quiet = { out: () => {}, err: () => {}, progress: { tty: false as const, line: () => {} } };
  const sources = catalogueSources().filter((source) => source.name === 'mixed');
  await runCheck(
    {
      sources,
      seedsPerScenario: 20,
      root: { seed: '8', source: 'flag' },
      git: { commit: undefined, dirty: false },
      threads: 2,
      unseedRate: 0,
      failuresDir: join(outDir, 'failures'),
      outDir,
      ...(explore === undefined ? {} : { explore }),
      reproduce: 'test',
    },
    quiet,
  );
  return JSON.parse(readFileSync(join(outDir, 'summary.json'), 'utf8'));
}

describe('a child that keeps its parent\'s context', () => {
  it('keeps the timed faults and rates, draws its point faults afresh from its own stream, the same for the same stream', () => {
    const parent: FaultPlan = { ...emptyPlan(), timed: [{ kind: 'kill', atMs: 5, worker: 0, reviveAfterMs: 1 }], points: [{ kind: 'kill-at', point: 'after_effect', occurrence: 1, reviveAfterMs: 1 }] };
    parent.rates.slowToolProbability = 0.2;
    const children = Array.from({ length: 20 }, (_, i) => withFreshPoints(parent, new SeededRandom(`child-${i}`)));
    for (const child of children) {
      expect(child.timed).toEqual(parent.timed);
      expect(child.rates).toEqual(parent.rates);
    }
    expect(withFreshPoints(parent, new SeededRandom('child-3'))).toEqual(children[3]);
    const windows = new Set(children.flatMap((child) => child.points.map((fault) => `${fault.kind}:${fault.point}`)));
    expect(windows.size).toBeGreaterThan(10);
    expect(parent.points).toHaveLength(1);
  });
});

describe('--explore against a plain check of the same budget', () => {
  // Measured with the fleet and every fault kind of today's swarm (mixed, 20 seeds, --explore 0.5 = 10
  // plain + 10 guided; `leasehold check --scenario mixed --seeds 20 --seed R --unseed-rate 0 [--explore 0.5]`):
  //   root 8: move pairs 30 plain, 36 explore; windows hit 28, 25; (mark, fault) pairs 1399, 1343
  //   root 9: move pairs 36, 39; windows hit 23, 19; pairs 1328, 1249
  //   root 7: move pairs 40, 35; windows hit 33, 22; pairs 1528, 1292
  // Against a plain check of the same budget the guided half is no reliable gain: more rare paths at two
  // roots of three, fewer windows and (mark, fault) pairs at all three (a child repeats its parent's
  // timed faults, a plain seed draws new ones). What it does do, and what this holds it to: its children
  // reach pairs its own plain half never reached, from picks that are deterministic and in the summary.
  it('its guided half reaches pairs its plain half did not, and its picks are in the summary', async () => {
    const plain = await check('plain');
    const explored = await check('explore', 0.5);
    expect(plain.exitCode).toBe(0);
    expect(explored.exitCode).toBe(0);
    const outcome = explored.explore!;
    expect(outcome.scenarios[0]!.newPairs.length).toBeGreaterThan(0);
    expect(outcome.scenarios[0]!.withExplore.pairs.reached).toBeGreaterThan(outcome.scenarios[0]!.plain.pairs.reached);
    expect(outcome.picks).toHaveLength(10);
    expect(outcome.picks.every((pick) => pick.scenario === 'mixed' && pick.parentSeed !== pick.childSeed)).toBe(true);
    expect(plain.explore).toBeUndefined();
  }, 240_000);
});
