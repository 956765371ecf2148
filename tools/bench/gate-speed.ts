/**
 * Section `gate-speed` (issue 20 item 5): how much faster the CI gate is than at commit 19e5aec, the
 * last commit before the fleet (a simulated worker fleet, each with its own connection) landed.
 *
 *   gateSpeedup = median_r( wall time of `leasehold check --seeds 20` at 19e5aec [r]
 *                           / wall time of the same at HEAD [r] ),   target >= 1.5
 *
 * Both trees run the scenarios both have (by name), the same root seed (`--seed gate-speed`, so each
 * scenario's seeds are the same ones), `--jobs 2`, each as its own process from its own tree: HEAD is
 * this checkout, the baseline `git archive 19e5aec` unpacked in the bench's temp dir with this
 * checkout's node_modules linked in (its dependencies are a subset of these). Rounds alternate which
 * tree goes first (old, new | new, old | ...), so a drift of the machine's load hits both; a figure is
 * the median of the per-round ratios. Process start (tsx compiling the CLI) is inside both times alike.
 *
 * HEAD simulates more per seed than 19e5aec did (a fleet of connections, interleaved transactions,
 * more faults and checkers), so this is the gate's speed as a user meets it, not a like-for-like
 * simulator cost. The section is skipped when the baseline commit is not in this clone (a shallow one).
 *
 * Its floor: the same seeds at HEAD run once more in this process under the sampling profiler
 * (cpu-share.ts), which says how much of a seed's CPU is the core the gate must run (its SQL and the rest
 * of src/); the speedup a gate costing nothing else could reach is gateSpeedup ÷ that share.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runJob } from '../../sim/check/run-job.ts';
import { deriveSeed } from '../../sim/check/seeds.ts';
import { catalogueScenario } from '../../sim/scenarios/registry.ts';
import { ceilingsOf, profileShares, SHARES_HEADER, sharesText } from './cpu-share.ts';
import { pairedRatios } from './interleave.ts';
import { metric, type BenchContext, type BenchSection, type SectionResult } from './registry.ts';
import { elapsedNs, median, nowNs, sig } from './timing.ts';

export const GATE_BASELINE = '19e5aec';
export const GATE_SPEEDUP_TARGET = { op: '>=', value: 1.5 } as const;
const SEEDS = 20;
/** Seeds per scenario profiled in process for the floor (the first of the check's own seeds). */
const PROFILED_SEEDS = 3;

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The catalogue's scenario names as `leasehold scenarios` prints them in `tree` (the first word of each line). */
function scenarioNames(tree: string): string[] {
  const listed = spawnSync(process.execPath, ['--import', 'tsx', 'sim/cli/main.ts', 'scenarios'], { cwd: tree, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
  if (listed.status !== 0) throw new Error(`gate-speed: \`leasehold scenarios\` failed in ${tree}: ${listed.stderr.slice(-1000)}`);
  return listed.stdout
    .split('\n')
    .map((line) => line.split(/\s+/)[0] ?? '')
    .filter((name) => /^[a-z0-9-]+$/.test(name));
}

/** Busy milliseconds per scenario (the threads' time on its seeds), from a check's summary.json. */
function busyByScenario(out: string): Map<string, number> {
  const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as { scenarios?: { scenario: string; busyMs?: number }[] };
  return new Map((summary.scenarios ?? []).map((entry) => [entry.scenario, entry.busyMs ?? 0]));
}

/** One timed `leasehold check` in `tree`; its wall time in seconds (it must pass). */
function timedCheck(tree: string, scenarios: readonly string[], seeds: number, out: string): number {
  const args = ['--import', 'tsx', 'sim/cli/main.ts', 'check', '--seeds', String(seeds), '--seed', 'gate-speed', '--jobs', '2', '--out', out, ...scenarios.flatMap((name) => ['--scenario', name])];
  const start = nowNs();
  const run = spawnSync(process.execPath, args, { cwd: tree, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', CI: 'true' }, maxBuffer: 64 * 1024 * 1024 });
  const seconds = elapsedNs(start) / 1e9;
  if (run.status !== 0) throw new Error(`gate-speed: check in ${tree} exited ${run.status}: ${(run.stdout + run.stderr).slice(-1500)}`);
  return seconds;
}

async function run(ctx: BenchContext): Promise<SectionResult> {
  const known = spawnSync('git', ['cat-file', '-e', `${GATE_BASELINE}^{commit}`], { cwd: repoRoot });
  if (known.status !== 0) {
    const why = `commit ${GATE_BASELINE} is not in this clone (a shallow clone?): nothing to compare against`;
    ctx.progress(`  SKIPPED: ${why}`);
    return { metrics: [], context: [{ label: 'SKIPPED', value: why }], raw: { skipped: why } };
  }
  const old = join(ctx.tmpDir, `gate-${GATE_BASELINE}`);
  if (!existsSync(join(old, 'package.json'))) {
    mkdirSync(old, { recursive: true });
    const unpacked = spawnSync('sh', ['-c', `git archive --format=tar ${GATE_BASELINE} | tar -x -C "${old}"`], { cwd: repoRoot, encoding: 'utf8' });
    if (unpacked.status !== 0) throw new Error(`gate-speed: git archive ${GATE_BASELINE} failed: ${unpacked.stderr}`);
    symlinkSync(join(repoRoot, 'node_modules'), join(old, 'node_modules'), 'dir');
  }
  const headNames = new Set(scenarioNames(repoRoot));
  const common = scenarioNames(old).filter((name) => headNames.has(name));
  if (common.length === 0) throw new Error('gate-speed: the two trees share no scenario');
  const seeds = ctx.options.quick ? 2 : SEEDS;
  const rounds = ctx.options.quick ? 1 : Math.max(2, Math.min(ctx.options.rounds, 4));
  ctx.progress(`  ${common.length} scenarios in both trees, ${seeds} seeds each, ${rounds} round(s)`);
  const oldTimes: number[] = [];
  const newTimes: number[] = [];
  // Where the threads' time went, per scenario, summed over rounds: which scenarios the difference is in.
  const busy = { old: new Map<string, number>(), new: new Map<string, number>() };
  for (let round = 0; round < rounds; round++) {
    const order: ('old' | 'new')[] = round % 2 === 0 ? ['old', 'new'] : ['new', 'old'];
    for (const which of order) {
      const tree = which === 'old' ? old : repoRoot;
      const out = join(ctx.tmpDir, `gate-out-${which}-${round}`);
      const seconds = timedCheck(tree, common, seeds, out);
      (which === 'old' ? oldTimes : newTimes).push(seconds);
      for (const [name, ms] of busyByScenario(out)) busy[which].set(name, (busy[which].get(name) ?? 0) + ms);
    }
    ctx.progress(`  round ${round + 1}/${rounds}: ${GATE_BASELINE} ${oldTimes[round]!.toFixed(1)} s, HEAD ${newTimes[round]!.toFixed(1)} s`);
  }
  // Rates (1 / time) paired per round: old time / new time is HEAD's rate over the baseline's.
  const speedups = pairedRatios(
    newTimes.map((t) => 1 / t),
    oldTimes.map((t) => 1 / t),
  );
  const perScenario = common
    .map((name) => ({ name, old: (busy.old.get(name) ?? 0) / rounds / 1000, head: (busy.new.get(name) ?? 0) / rounds / 1000 }))
    .sort((a, b) => b.head - a.head);
  const busyTotal = (which: 'old' | 'new') => [...busy[which].values()].reduce((a, b) => a + b, 0) / rounds / 1000;
  // The floor of HEAD's gate: where its threads' CPU goes on the same seeds (cpu-share.ts), profiled in
  // this process, one job at a time as a check thread runs them. A gate that cost nothing beyond the
  // core it runs would still take (sql + core) of HEAD's thread time.
  const profiledSeeds = ctx.options.quick ? 1 : PROFILED_SEEDS;
  const cpu = await profileShares(async () => {
    for (let index = 0; index < profiledSeeds; index++) {
      for (const name of common) {
        const result = await runJob({ id: 0, scenario: name, index, seed: deriveSeed('gate-speed', name, index), repeat: false }, catalogueScenario(name));
        if (result.verdict !== 'pass') throw new Error(`gate-speed: ${name} seed ${result.job.seed} did not pass in the profiled run (${result.verdict})`);
      }
    }
  });
  const ceiling = ceilingsOf(median(speedups), cpu);
  ctx.progress(`  CPU of HEAD's gate seeds (${SHARES_HEADER}): ${sharesText(cpu)}; speedup ceiling with a free harness ${sig(ceiling.freeHarness, 3)}`);
  return {
    metrics: [metric('gateSpeedup', `leasehold check --seeds ${seeds} over the ${common.length} shared scenarios: wall time at ${GATE_BASELINE} ÷ at HEAD`, median(speedups), GATE_SPEEDUP_TARGET, speedups)],
    context: [
      { label: `check wall time at ${GATE_BASELINE} (median)`, value: `${sig(median(oldTimes), 3)} s` },
      { label: 'check wall time at HEAD (median)', value: `${sig(median(newTimes), 3)} s` },
      { label: `thread time on seeds per round at ${GATE_BASELINE} / HEAD (all scenarios)`, value: `${sig(busyTotal('old'), 3)} s / ${sig(busyTotal('new'), 3)} s` },
      ...perScenario.slice(0, 6).map((entry) => ({ label: `  ${entry.name}: thread time at ${GATE_BASELINE} / HEAD`, value: `${sig(entry.old, 3)} s / ${sig(entry.head, 3)} s` })),
      { label: `CPU of HEAD's gate seeds (${cpu.samples} samples, ${profiledSeeds} seed(s) per scenario): ${SHARES_HEADER}`, value: sharesText(cpu) },
      { label: 'gateSpeedup ceiling: HEAD\'s gate costing nothing beyond the core it runs, GC, process start and threads free too (speedup ÷ (SQL + core))', value: sig(ceiling.freeHarness, 3).toString() },
      { label: 'gateSpeedup ceiling keeping S6\'s history and hash and S7\'s checkers at today\'s cost (speedup ÷ (SQL + core + checkers + history))', value: sig(ceiling.keepingS6S7, 3).toString() },
      { label: `the same on thread time alone: ${GATE_BASELINE}'s thread time ÷ (HEAD's × (SQL + core))`, value: sig(ceilingsOf(busyTotal('old') / busyTotal('new'), cpu).freeHarness, 3).toString() },
      { label: 'scenarios compared', value: common.join(', ') },
    ],
    raw: {
      baseline: GATE_BASELINE,
      seeds,
      rounds,
      scenarios: common,
      oldSeconds: oldTimes.map((t) => sig(t)),
      headSeconds: newTimes.map((t) => sig(t)),
      speedups: speedups.map((v) => sig(v)),
      cpu,
      busySecondsPerRound: Object.fromEntries(perScenario.map((entry) => [entry.name, { baseline: sig(entry.old), head: sig(entry.head) }])),
    },
  };
}

export const gateSpeedSection: BenchSection = {
  id: 'gate-speed',
  title: `Gate speed: leasehold check --seeds ${SEEDS} at HEAD vs at ${GATE_BASELINE}`,
  run,
};
