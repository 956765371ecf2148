/**
 * `npm run calibrate`: measures what each catalogue scenario finds per seed and per millisecond, and
 * writes scenarios/calibration/yield.json, from which `leasehold check` splits its default budget across
 * scenarios (sim/check/budget.ts explains the split and the estimate).
 *
 * It runs seeds 0..T-1 of every catalogue scenario under its own root seed (`calibration`, not a
 * commit's, so the gate's seeds are not the ones the split was fitted on), one run each, on worker
 * threads, and records per scenario the incidence counts of its features and its thread time per seed.
 * A failing seed stops it: a tree that fails its own check has nothing to calibrate.
 *
 * Rerun it when a scenario is added or changed: check gives a scenario whose spec differs from the one
 * calibrated its even share, and says so.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readYieldCalibration, scenarioYield, YIELD_FILE, YIELD_FORMAT, type YieldCalibration } from '../sim/check/budget.ts';
import { gitState } from '../sim/check/git.ts';
import { runPool } from '../sim/check/pool.ts';
import { Progress } from '../sim/check/progress.ts';
import { catalogueSources } from '../sim/check/scenario-source.ts';
import { planJobs } from '../sim/check/seeds.ts';
import { PACKAGE_ROOT } from '../sim/package-root.ts';

const USAGE = `Usage: npm run calibrate -- [--seeds T] [--seed ROOT] [--jobs J] [--out FILE] [--scenario NAME]...

Runs T seeds of every catalogue scenario and writes what each found (features reached, by how many
seeds; thread time per seed) to FILE, from which \`leasehold check\` splits its default budget.

  --seeds T        seeds per scenario (default 100)
  --seed ROOT      root seed of the calibration seeds (default calibration)
  --jobs J         worker threads (default: the machine's cores)
  --out FILE       where to write (default ${YIELD_FILE})
  --scenario NAME  only this catalogue scenario (repeatable): its entry is measured again and merged into
                   FILE, every other entry kept as it is (FILE must hold a calibration of the same root
                   seed and seeds per scenario); for a scenario added or changed
  --help           this text

Exit codes: 0 written; 1 a seed failed (nothing written); 64 bad usage.`;

interface Options {
  seeds: number;
  root: string;
  jobs: number;
  out: string;
  /** Only these scenarios, merged into the calibration already in `out`. */
  scenarios?: string[];
}

export function parseCalibrateArguments(argv: readonly string[]): Options | 'help' {
  const options: Options = { seeds: 100, root: 'calibration', jobs: availableParallelism(), out: join(PACKAGE_ROOT, YIELD_FILE) };
  for (let index = 0; index < argv.length; index++) {
    const flag = argv[index]!;
    const value = argv[index + 1];
    const integer = () => {
      const n = Number(value);
      if (value === undefined || !Number.isSafeInteger(n) || n < 1) throw new Error(`${flag} expects an integer >= 1, got ${String(value)}`);
      index++;
      return n;
    };
    const text = () => {
      if (value === undefined || value.startsWith('--')) throw new Error(`${flag} expects a value`);
      index++;
      return value;
    };
    if (flag === '--help' || flag === '-h') return 'help';
    else if (flag === '--seeds') options.seeds = integer();
    else if (flag === '--jobs') options.jobs = integer();
    else if (flag === '--seed') options.root = text();
    else if (flag === '--out') options.out = text();
    else if (flag === '--scenario') (options.scenarios ??= []).push(text());
    else throw new Error(`unknown argument '${flag}'`);
  }
  return options;
}

async function main(argv: readonly string[]): Promise<number> {
  let options: Options | 'help';
  try {
    options = parseCalibrateArguments(argv);
  } catch (error) {
    process.stderr.write(`calibrate: ${(error as Error).message}\n(npm run calibrate -- --help)\n`);
    return 64;
  }
  if (options === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const catalogue = catalogueSources();
  const only = options.scenarios;
  const unknown = only?.filter((name) => !catalogue.some((source) => source.name === name)) ?? [];
  if (unknown.length > 0) {
    process.stderr.write(`calibrate: no catalogue scenario ${unknown.join(', ')} (leasehold scenarios lists them)\n`);
    return 64;
  }
  const sources = only === undefined ? catalogue : catalogue.filter((source) => only.includes(source.name));
  // --scenario: the other entries come from the calibration already written, which must be comparable.
  const kept = only === undefined ? undefined : readYieldCalibration(options.out);
  if (only !== undefined && (kept === undefined || kept.rootSeed !== options.root || kept.seedsPerScenario !== options.seeds)) {
    process.stderr.write(`calibrate: --scenario merges into ${options.out}, which must hold a calibration of root ${options.root} with ${options.seeds} seeds per scenario${kept === undefined ? ' (none there)' : ` (it has root ${kept.rootSeed}, ${kept.seedsPerScenario} seeds)`}; run without --scenario\n`);
    return 64;
  }
  const scenarios = Object.fromEntries(sources.map((source) => [source.name, source.spec]));
  const jobs = planJobs(options.root, sources.map((source) => source.name), options.seeds);
  process.stdout.write(`calibrate: ${sources.length} scenarios x ${options.seeds} seeds (root ${options.root}) on ${options.jobs} thread(s)\n`);
  const progress = new Progress(jobs.length, process.stderr.isTTY ? { tty: true, columns: process.stderr.columns ?? 80, write: (text) => process.stderr.write(text) } : { tty: false, line: (text) => process.stderr.write(`${text}\n`) });
  const outcome = await runPool(jobs, { threads: options.jobs, scenarios, onResult: (result) => progress.advance(result.verdict !== 'pass') });
  progress.finish();
  const failed = outcome.results.filter((result) => result.verdict !== 'pass');
  if (outcome.death !== undefined || failed.length > 0) {
    const first = failed[0];
    process.stderr.write(`calibrate: ${outcome.death !== undefined ? `a thread died: ${outcome.death.error}` : `${failed.length} seed(s) failed, first ${first!.job.scenario} seed ${first!.job.seed}: leasehold replay --scenario ${first!.job.scenario} --seed ${first!.job.seed}`}; nothing written\n`);
    return 1;
  }
  const calibration: YieldCalibration = {
    format: YIELD_FORMAT,
    rootSeed: options.root,
    commit: gitState().commit ?? null,
    seedsPerScenario: options.seeds,
    scenarios: Object.fromEntries(
      catalogue.flatMap((source) => {
        if (sources.includes(source)) return [[source.name, scenarioYield(source.spec, outcome.results.filter((result) => result.job.scenario === source.name))]];
        const entry = kept?.scenarios[source.name];
        return entry === undefined ? [] : [[source.name, entry]];
      }),
    ),
  };
  mkdirSync(dirname(options.out), { recursive: true });
  writeFileSync(options.out, `${JSON.stringify(calibration, null, 1)}\n`);
  const rows = Object.entries(calibration.scenarios).filter(([name]) => sources.some((source) => source.name === name)).map(([name, entry]) => `  ${name.padEnd(24)} ${String(entry.features).padStart(5)} features, ${String(entry.incidence['1'] ?? 0).padStart(4)} by one seed only, ${(entry.msPerSeed / 1000).toFixed(2)} s per seed`);
  process.stdout.write(`${rows.join('\n')}\nwritten: ${options.out}\n`);
  return 0;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  process.exitCode = await main(process.argv.slice(2));
}
