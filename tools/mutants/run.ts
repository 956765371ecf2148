/**
 * `npm run mutants`: the harness tests itself (issue 7). For each planted bug of the catalogue
 * (tools/mutants/catalogue.ts) it
 *
 * 1. copies the project (src/, sim/, properties/, scenarios/, bin/, package.json, tsconfig.json; node_modules
 *    is a symlink) from one snapshot of the working tree taken at start, so every sabotage and the
 *    control run see the same tree even while people edit theirs;
 * 2. applies the sabotage's find-and-replace; a find that does not occur exactly once is reported
 *    STALE and counts as not caught;
 * 3. runs the gate there as it runs by default, `node tools/leasehold.js check --budget N --seed ROOT
 *    --out DIR --jobs J --bail`: N = 100 (`leasehold check`'s default) unless --seeds says otherwise, split
 *    across scenarios by what each finds (sim/check/budget.ts); --even runs `--seeds N` instead. To save
 *    time it first runs a smaller prefix of the same seeds (--stages, default 10, `--seeds 10`): seeds are
 *    numbered, and every scenario's share of the split is at least N/2 seeds, so a failure among the first
 *    10 is one the full run would find too (a stage above N/2 is dropped, as it could credit a seed the
 *    split does not run), and only a sabotage that survives the prefix pays for the full budget. Missing coverage
 *    (exit 4) is only believed from the full budget, as the gate only enforces it there. Both stages run
 *    with --bail: one failing seed is enough to call a sabotage caught, so the check stops handing out
 *    seeds at the first one, and a stage that catches costs its first failure instead of its budget (a
 *    stage that finds nothing runs every seed, and its coverage is judged as without --bail). The control
 *    run (no sabotage) runs without --bail: it must pass every seed, and if it does not, all of its
 *    failures are worth seeing;
 * 4. reads check's exit code, summary.json and counterexample files: caught or not, which invariants
 *    the lowest failing seed violated, how many seeds it took (the failing seed's index + 1), and the
 *    counterexample's size (faults in its plan, tasks submitted), shrunk in the sabotaged copy by
 *    tools/mutants/shrink.ts (smaller workload, fewer faults) within a small budget.
 *
 *    "The lowest failing seed" is the lowest among the seeds that ran, index-major (seed #0 of every
 *    scenario, then #1, ...; at one index, in catalogue order), which is the order the check plans,
 *    hands out and reports its seeds in. With --bail that is the same seed a full run reports first:
 *    the check hands seeds out in that order, so every seed before the one that stopped it has run, and
 *    only the seeds in flight beside it (one per other thread) and the unseed repeats (run last) may
 *    differ. What --bail does change is what the other failing seeds show: "expected invariant seen"
 *    (yes rather than yes*) looks at the failing seeds that ran, and fewer run.
 *
 * It prints a table and writes DIR/mutants.json and DIR/table.md (default DIR: reports/mutants). It exits
 * 0 only if every sabotage was caught; 1 if one was not (or was STALE, or its check timed out: INCONCLUSIVE); 3 if the unsabotaged control
 * run already fails (then nothing it says about sabotages would mean anything); 64 on bad usage.
 *
 *   npm run mutants -- [--seeds N] [--only id,id] [--stages 10,50|none] [--parallel P] [--jobs J]
 *                      [--root-seed S] [--out DIR] [--no-shrink] [--no-control] [--keep] [--without-fleet] [--list]
 *
 * At most two checks run at once (--parallel, default 2, each with --jobs 1): the gate is CPU-bound
 * and the machine it was written for has two cores.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gitState } from '../../sim/check/git.ts';
import { rootSeed } from '../../sim/check/seeds.ts';
import { FLOOR_SHARE } from '../../sim/check/budget.ts';
import { wallClockMs } from '../../sim/check/wall-clock.ts';
import { DEFAULT_SEEDS } from '../../sim/cli/commands/check.ts';
import { applySabotage, SABOTAGES, StaleSabotageError, type Sabotage } from './catalogue.ts';
import { copyOf, plantSabotage, REPO, snapshot } from './copy.ts';

const MAX_PARALLEL = 2;

export interface Options {
  seeds: number;
  stages: number[];
  only?: string[];
  parallel: number;
  jobs: number;
  root: string;
  out: string;
  shrink: boolean;
  shrinkRuns: number;
  shrinkMs: number;
  control: boolean;
  keep: boolean;
  timeoutMs: number;
  /** Run the gate without the fleet's interleaving (FLEET_DEFAULTS.interleave 0 in every copy): what the fleet adds. */
  withoutFleet: boolean;
  /** --even: the full stage runs --seeds N (every scenario the same) instead of the default --budget N split. */
  even: boolean;
}

/** What one check run (one stage of one sabotage, or the control) left behind. */
export interface StageResult {
  seeds: number;
  exitCode: number | null;
  timedOut: boolean;
  wallMs: number;
  log: string;
  summary?: CheckSummary;
  counterexamples: CounterexampleFile[];
}

interface CheckSummary {
  exitCode: number;
  coverage: { enforced: boolean; missing?: string[] };
  unseed: { mismatches: { scenario: string; seed: string }[] };
  failures: { scenario: string; seed: string; verdict: string; violations: { invariant: string; kind: string; message: string }[] }[];
  harnessCrash: string | null;
  /** Every first run that ran, in the order the check planned them (index-major, catalogue order at one index). */
  runs?: { scenario: string; index: number; seed: string }[];
  /** --bail: whether the check stopped at a failure, and how many seeds it did not run. */
  bail?: { stopped: boolean; seedsPlanned: number; seedsNotRun: number } | null;
}

interface CounterexampleFile {
  path: string;
  scenario: string;
  seed: string;
  verdict: string;
  violations: { invariant: string; kind: string; message: string }[];
  plan?: { timed: unknown[]; points: unknown[]; rates: Record<string, number> };
  metrics?: Record<string, number>;
  unseed?: unknown;
  crash?: string;
  check: { seedIndex: number };
}

export interface MutantOutcome {
  id: string;
  expected: string;
  /** inconclusive: the check did not finish within --timeout-min, which proves nothing either way (issue 35). */
  status: 'caught' | 'missed' | 'stale' | 'error' | 'inconclusive';
  /** Invariants the lowest failing seed violated, safety first; or 'coverage', 'crash' (empty unless caught). */
  caughtBy: string[];
  /** The expected invariant appears among the violations of some failing seed. */
  expectedSeen: boolean;
  exitCode: number | null;
  firstFailure?: { scenario: string; seed: string; index: number; message: string; file: string };
  size?: { faults: number; tasks: number };
  shrunk?: { faults: number; tasks: number; runs: number; complete: boolean; file?: string };
  seedsRun: number;
  wallMs: number;
  note?: string;
}

// ------------------------------------------------------------------------------------------- arguments

export function parseArguments(argv: readonly string[]): Options | 'list' | 'help' {
  const options: Options = {
    seeds: DEFAULT_SEEDS,
    stages: [10],
    parallel: MAX_PARALLEL,
    jobs: 1,
    root: rootSeed(undefined, gitState()).seed,
    out: join(REPO, 'reports', 'mutants'),
    shrink: true,
    shrinkRuns: 40,
    shrinkMs: 180_000,
    control: true,
    withoutFleet: false,
    even: false,
    keep: false,
    timeoutMs: 60 * 60_000,
  };
  const integer = (flag: string, value: string | undefined, min: number): number => {
    const n = Number(value);
    if (value === undefined || !Number.isSafeInteger(n) || n < min) throw new UsageError(`${flag} expects an integer >= ${min}, got ${String(value)}`);
    return n;
  };
  for (let index = 0; index < argv.length; index++) {
    const flag = argv[index]!;
    const value = () => argv[++index];
    switch (flag) {
      case '--seeds':
        options.seeds = integer(flag, value(), 1);
        break;
      case '--stages': {
        const raw = value();
        options.stages = raw === 'none' ? [] : (raw ?? '').split(',').map((part) => integer(flag, part.trim(), 1));
        break;
      }
      case '--only':
        options.only = (value() ?? '').split(',').map((id) => id.trim()).filter(Boolean);
        break;
      case '--parallel':
        options.parallel = integer(flag, value(), 1);
        break;
      case '--jobs':
        options.jobs = integer(flag, value(), 1);
        break;
      case '--root-seed':
      case '--seed': {
        const raw = value();
        if (raw === undefined || raw === '') throw new UsageError(`${flag} expects a seed`);
        options.root = raw;
        break;
      }
      case '--out':
        options.out = resolve(value() ?? '');
        break;
      case '--shrink-runs':
        options.shrinkRuns = integer(flag, value(), 1);
        break;
      case '--timeout-min':
        options.timeoutMs = integer(flag, value(), 1) * 60_000;
        break;
      case '--no-shrink':
        options.shrink = false;
        break;
      case '--no-control':
        options.control = false;
        break;
      case '--keep':
        options.keep = true;
        break;
      case '--without-fleet':
        options.withoutFleet = true;
        break;
      case '--even':
        options.even = true;
        break;
      case '--list':
        return 'list';
      case '--help':
      case '-h':
        return 'help';
      default:
        throw new UsageError(`unknown argument ${flag}`);
    }
  }
  if (options.parallel * options.jobs > MAX_PARALLEL) {
    throw new UsageError(`--parallel ${options.parallel} x --jobs ${options.jobs} would run ${options.parallel * options.jobs} simulations at once; at most ${MAX_PARALLEL}`);
  }
  // A prefix stage runs --seeds S: within the split only while S is at most every scenario's floor (N/2).
  const stageMax = options.even ? options.seeds - 1 : Math.floor(options.seeds * FLOOR_SHARE);
  options.stages = [...new Set(options.stages.filter((stage) => stage <= stageMax && stage < options.seeds))].sort((a, b) => a - b);
  if (options.only !== undefined) {
    const known = new Set(SABOTAGES.map((sabotage) => sabotage.id));
    const unknown = options.only.filter((id) => !known.has(id));
    if (unknown.length > 0) throw new UsageError(`unknown sabotage(s): ${unknown.join(', ')} (see --list)`);
  }
  return options;
}

class UsageError extends Error {}

export const FLEET_FILE = 'sim/store/fleet.ts';
export const FLEET_ON = 'export const FLEET_DEFAULTS: FleetSpec = { interleave: 0.25, maxWaitMs: 400 };';
export const FLEET_OFF = 'export const FLEET_DEFAULTS: FleetSpec = { interleave: 0, maxWaitMs: 400 };';

const USAGE = `Usage: npm run mutants -- [--seeds N] [--only ID,ID] [--stages 10,50|none] [--parallel P] [--jobs J]
                           [--root-seed S] [--out DIR] [--no-shrink] [--no-control] [--keep] [--without-fleet] [--even] [--list]

Plants each sabotage of tools/mutants/catalogue.ts in a temporary copy of the project, runs
\`leasehold check\` there and prints which invariant caught it; writes DIR/table.md and DIR/mutants.json.
Exits 0 only if every sabotage was caught, 1 if one was not (or its text is stale), 3 if the control
run without a sabotage fails, 64 on bad usage.

Flags:
  --seeds N          seed budget per catalogue scenario (default: leasehold check's, ${DEFAULT_SEEDS}), run as
                     --budget N (split by what each scenario finds, as check does by default)
  --even             run the full budget as --seeds N instead (every scenario the same)
  --stages LIST      smaller seed prefixes to try first (default 10; at most N/2 unless --even); none: the full budget at once
  --only ID,ID       only these sabotages (see --list)
  --parallel P       checks at once (default ${MAX_PARALLEL}); --jobs J: threads per check (default 1)
  --root-seed S      root seed (default: derived from the git commit, as leasehold check does)
  --out DIR          where the table and JSON go (default reports/mutants)
  --no-shrink        skip shrinking the counterexamples; --shrink-runs N: shrink attempts (default 40)
  --no-control       skip the control run; --keep: keep the temporary copies
  --without-fleet    run every copy with the fleet's interleaving off (FLEET_DEFAULTS.interleave 0): what the fleet adds
  --timeout-min M    give up on one check after M minutes (default 60)
  --list             list the sabotages and exit
  -h, --help         show this help
`;

// ------------------------------------------------------------------------------------------- processes

const TSX_CLI = createRequire(import.meta.url).resolve('tsx/cli');

function runProcess(args: string[], cwd: string, logPath: string, timeoutMs: number): Promise<{ exitCode: number | null; timedOut: boolean; stdout: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, FORCE_COLOR: '0' } });
    let stdout = '';
    let log = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      log += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()));
    let timedOut = false;
    const timer = setTimeout(() => { // allow-ambient: a wall-clock timeout on a child process, never inside a simulation
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      writeFileSync(logPath, log);
      done({ exitCode: code, timedOut, stdout });
    });
  });
}

/** The command line of one check of a copy: the full stage as --budget N (or --seeds N with --even), a prefix as --seeds S. */
export function checkArguments(directory: string, stageOut: string, seeds: number, options: Pick<Options, 'seeds' | 'even' | 'root' | 'jobs'>, bail: boolean): string[] {
  const flag = seeds === options.seeds && !options.even ? '--budget' : '--seeds';
  return [join(directory, 'tools', 'leasehold.js'), 'check', flag, String(seeds), '--seed', options.root, '--out', stageOut, '--jobs', String(options.jobs), ...(bail ? ['--bail'] : [])];
}

/** One check of a copy; `bail` for a sabotage's stages (one failing seed settles it), not for the control run. */
async function runCheck(directory: string, out: string, seeds: number, options: Options, bail: boolean): Promise<StageResult> {
  const stageOut = join(out, `check-${seeds}`);
  mkdirSync(stageOut, { recursive: true });
  const started = wallClockMs();
  const log = join(stageOut, 'check.log');
  const args = checkArguments(directory, stageOut, seeds, options, bail);
  const { exitCode, timedOut } = await runProcess(args, directory, log, options.timeoutMs);
  const summaryPath = join(stageOut, 'summary.json');
  const summary = existsSync(summaryPath) ? (JSON.parse(readFileSync(summaryPath, 'utf8')) as CheckSummary) : undefined;
  const failuresDir = join(stageOut, 'failures');
  const counterexamples = existsSync(failuresDir)
    ? readdirSync(failuresDir)
        .filter((name) => name.endsWith('.json'))
        .map((name) => ({ ...(JSON.parse(readFileSync(join(failuresDir, name), 'utf8')) as CounterexampleFile), path: join(failuresDir, name) }))
    : [];
  return { seeds, exitCode, timedOut, wallMs: wallClockMs() - started, log, ...(summary === undefined ? {} : { summary }), counterexamples };
}

// ------------------------------------------------------------------------------------------- judging

/**
 * The failing seed with the lowest index (ties: catalogue order), which the gate reports first: the
 * first in the check's own plan order, read from summary.json's runs (the order it planned and ran them
 * in). The counterexample files cover the first 20 failing seeds in that order, so the first is among them.
 */
export function lowestFailure(stage: Pick<StageResult, 'counterexamples' | 'summary'>): CounterexampleFile | undefined {
  const planned = new Map((stage.summary?.runs ?? []).map((run, position) => [`${run.scenario}\u0000${run.seed}`, position]));
  const order = (file: CounterexampleFile) => planned.get(`${file.scenario}\u0000${file.seed}`) ?? Number.MAX_SAFE_INTEGER;
  return [...stage.counterexamples].sort((a, b) => a.check.seedIndex - b.check.seedIndex || order(a) - order(b) || (a.scenario < b.scenario ? -1 : a.scenario > b.scenario ? 1 : 0))[0];
}

function invariantsOf(file: CounterexampleFile): string[] {
  if (file.unseed !== undefined) return ['I14'];
  if (file.crash !== undefined || file.violations.some((violation) => violation.invariant === 'harness')) return ['crash'];
  const safety = file.violations.filter((violation) => violation.kind === 'safety').map((violation) => violation.invariant);
  const liveness = file.violations.filter((violation) => violation.kind === 'liveness').map((violation) => violation.invariant);
  return [...new Set([...safety, ...liveness])];
}

function firstMessage(file: CounterexampleFile): string {
  const violation = file.violations[0];
  if (file.unseed !== undefined) return 'two trace hashes for one seed';
  if (violation === undefined) return file.verdict;
  return (violation.message.split('\n')[0] ?? '').slice(0, 160);
}

/** Did any failing seed of the stage violate `invariant`? */
function sawInvariant(stage: StageResult, invariant: string): boolean {
  if (invariant === 'I14' && (stage.summary?.unseed.mismatches.length ?? 0) > 0) return true;
  if ((stage.summary?.failures ?? []).some((failure) => failure.violations.some((violation) => violation.invariant === invariant))) return true;
  return stage.counterexamples.some((file) => invariantsOf(file).includes(invariant));
}

function sizeOf(file: CounterexampleFile): { faults: number; tasks: number } {
  const plan = file.plan;
  const faults = plan === undefined ? 0 : plan.timed.length + plan.points.length + Object.values(plan.rates).filter((rate) => rate > 0).length;
  return { faults, tasks: file.metrics?.tasks ?? 0 };
}

async function shrinkIn(directory: string, out: string, file: CounterexampleFile, invariant: string, options: Options): Promise<MutantOutcome['shrunk']> {
  const target = join(out, 'shrunk.json');
  const args = [TSX_CLI, join(directory, 'tools', 'mutants', 'shrink.ts'), file.path, invariant, target, String(options.shrinkRuns), String(options.shrinkMs)];
  const { exitCode, stdout } = await runProcess(args, directory, join(out, 'shrink.log'), options.shrinkMs + 120_000);
  const line = stdout.trim().split('\n').pop();
  if (exitCode !== 0 || line === undefined || line === '') return undefined;
  const outcome = JSON.parse(line) as { reproduced: boolean; runs: number; exhausted: boolean; after: { faults: number; tasks: number }; file?: string };
  if (!outcome.reproduced) return undefined;
  return { ...outcome.after, runs: outcome.runs, complete: !outcome.exhausted, ...(outcome.file === undefined ? {} : { file: outcome.file }) };
}

async function runSabotage(entry: Sabotage, pristine: string, base: string, options: Options, say: (line: string) => void): Promise<MutantOutcome> {
  const started = wallClockMs();
  const out = join(options.out, entry.id);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const directory = join(base, entry.id);
  const outcome: MutantOutcome = { id: entry.id, expected: entry.expectedInvariant, status: 'missed', caughtBy: [], expectedSeen: false, exitCode: null, seedsRun: 0, wallMs: 0 };
  try {
    copyOf(pristine, directory);
    try {
      plantSabotage(directory, entry);
    } catch (error) {
      if (!(error instanceof StaleSabotageError)) throw error;
      say(`STALE ${entry.id}: ${error.message}`);
      return { ...outcome, status: 'stale', note: error.message, wallMs: wallClockMs() - started };
    }
    const budgets = [...options.stages, options.seeds];
    let stage: StageResult | undefined;
    for (const seeds of budgets) {
      stage = await runCheck(directory, out, seeds, options, true);
      outcome.seedsRun = seeds;
      outcome.exitCode = stage.exitCode;
      const final = seeds === options.seeds;
      const bailed = stage.summary?.bail?.stopped === true ? `, stopped at the first failure: ${stage.summary.bail.seedsNotRun} of ${stage.summary.bail.seedsPlanned} seeds not run` : '';
      say(`${entry.id}: ${seeds} seeds -> ${stage.timedOut ? 'timed out' : `exit ${String(stage.exitCode)}`} (${Math.round(stage.wallMs / 1000)} s${bailed})`);
      if (stage.timedOut) break;
      if (stage.exitCode === 1 || stage.exitCode === 2 || stage.exitCode === 3) break;
      if (stage.exitCode === 4 && final) break;
      if (stage.exitCode !== 0 && stage.exitCode !== 4) break;
    }
    if (stage === undefined) throw new Error('no stage ran');
    judge(entry, stage, outcome);
    const lowest = lowestFailure(stage);
    if (outcome.status === 'caught' && lowest !== undefined) {
      outcome.firstFailure = { scenario: lowest.scenario, seed: lowest.seed, index: lowest.check.seedIndex, message: firstMessage(lowest), file: lowest.path };
      outcome.size = sizeOf(lowest);
      const invariant = invariantsOf(lowest)[0];
      if (options.shrink && lowest.unseed === undefined && invariant !== undefined) {
        const shrunk = await shrinkIn(directory, out, lowest, invariant === 'crash' ? 'harness' : invariant, options);
        if (shrunk !== undefined) outcome.shrunk = shrunk;
      }
    }
  } catch (error) {
    outcome.status = 'error';
    outcome.note = error instanceof Error ? error.message : String(error);
  } finally {
    if (!options.keep) rmSync(directory, { recursive: true, force: true });
  }
  outcome.wallMs = wallClockMs() - started;
  return outcome;
}

/**
 * What one stage says of a sabotage. A check that timed out is inconclusive, never caught: it may be a
 * hang the sabotage caused, or a slow machine, and only an invariant, a crash or missing coverage is
 * evidence (issue 35: the runner counted timeouts as caught).
 */
export function judge(entry: Sabotage, stage: StageResult, outcome: MutantOutcome): void {
  if (stage.timedOut) {
    outcome.status = 'inconclusive';
    outcome.caughtBy = [];
    outcome.note = `check did not finish within the timeout after ${stage.seeds} seeds: inconclusive, neither caught nor missed (raise --timeout-min, or replay the seeds that ran; a hang would fail CI too); see ${stage.log}`;
    return;
  }
  const lowest = lowestFailure(stage);
  switch (stage.exitCode) {
    case 0:
      outcome.status = 'missed';
      return;
    case 1:
    case 2:
    case 3:
      if (lowest === undefined) {
        outcome.status = 'caught';
        outcome.caughtBy = [stage.exitCode === 3 ? 'crash' : `exit ${stage.exitCode}`];
        outcome.note = stage.summary?.harnessCrash ?? `no counterexample file; see ${stage.log}`;
      } else {
        outcome.status = 'caught';
        outcome.caughtBy = invariantsOf(lowest);
      }
      outcome.expectedSeen = sawInvariant(stage, entry.expectedInvariant);
      return;
    case 4:
      outcome.status = 'caught';
      outcome.caughtBy = ['coverage'];
      outcome.note = `no invariant failed; required marks never reached: ${(stage.summary?.coverage.missing ?? []).join(', ')}`;
      return;
    default:
      outcome.status = 'error';
      outcome.note = `check exited ${String(stage.exitCode)}; see ${stage.log}`;
  }
}

// ------------------------------------------------------------------------------------------- report

function sizeText(size: { faults: number; tasks: number } | undefined): string {
  return size === undefined ? '-' : `${size.faults}f/${size.tasks}t`;
}

export function table(outcomes: readonly MutantOutcome[]): string[] {
  const header = ['sabotage', 'expected', 'caught', 'caught by', 'first failing seed', 'seeds', 'counterexample', 'shrunk'];
  const rows = outcomes.map((o) => [
    o.id,
    o.expected,
    o.status === 'caught' ? (o.caughtBy.includes(o.expected) || o.expectedSeen ? 'yes' : 'yes*') : o.status.toUpperCase(),
    o.caughtBy.join(',') || '-',
    o.firstFailure === undefined ? '-' : `${o.firstFailure.scenario} #${o.firstFailure.index}`,
    o.firstFailure === undefined ? (o.status === 'caught' ? `${o.seedsRun} (all)` : `>${o.seedsRun}`) : String(o.firstFailure.index + 1),
    sizeText(o.size),
    o.shrunk === undefined ? '-' : `${sizeText(o.shrunk)}${o.shrunk.complete ? '' : '~'}`,
  ]);
  const widths = header.map((_, column) => Math.max(...[header, ...rows].map((cells) => cells[column]!.length)));
  const render = (cells: string[]) => cells.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd();
  return [render(header), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map(render)];
}

function legend(): string[] {
  return [
    'caught: yes = the gate went red and the expected invariant was among the violations; yes* = red, but caught by another invariant',
    '        (or only by missing coverage / a crash); MISSED = green within the budget; STALE = the find text no longer matches src/;',
    '        INCONCLUSIVE = the check timed out (--timeout-min), which proves nothing: counted as not caught.',
    'seeds: index + 1 of the lowest failing seed (the gate checks seed indexes 0..N-1 of every scenario); each sabotaged check stops at its',
    '       first failing seed (--bail), so this is the first failing seed a full run reports, and yes/yes* judges the failing seeds that ran.',
    'counterexample: faults in its plan / tasks in its queue, as the gate wrote it; shrunk: after tools/mutants/shrink.ts (~ = budget ran out).',
  ];
}

function markdown(outcomes: readonly MutantOutcome[], options: Options, control: StageResult | undefined): string {
  const rows = table(outcomes);
  const toMd = (line: string) => `| ${line.split(/ {2,}/).join(' | ')} |`;
  const lines = [
    '# Sabotage catalogue: `npm run mutants`',
    '',
    `root seed ${options.root}, budget ${options.even ? `${options.seeds} seeds per scenario` : `--budget ${options.seeds} (split by what each scenario finds)`} (stages: ${[...options.stages, options.seeds].join(', ')}), ${options.jobs} thread(s) per check, ${options.parallel} at once`,
    control === undefined ? 'control: not run' : `control (no sabotage, ${control.seeds} seeds, every seed run): exit ${String(control.exitCode)}`,
    'each sabotaged check stops at its first failing seed (leasehold check --bail)',
    '',
    toMd(rows[0]!),
    `|${rows[0]!.split(/ {2,}/).map(() => '---').join('|')}|`,
    ...rows.slice(2).map(toMd),
    '',
    ...legend().map((line) => `${line}`),
    '',
    '## First failures',
    '',
    ...outcomes.map((o) => `- **${o.id}** (${o.expected}): ${o.firstFailure === undefined ? (o.note ?? o.status) : `${o.firstFailure.scenario} seed ${o.firstFailure.seed}: ${o.firstFailure.message}`}`),
    '',
  ];
  return lines.join('\n');
}

// ------------------------------------------------------------------------------------------- main

async function pool<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(width, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  });
  await Promise.all(lanes);
  return results;
}

export async function main(argv: readonly string[]): Promise<number> {
  let parsed: Options | 'list' | 'help';
  try {
    parsed = parseArguments(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`mutants: ${error.message}\n${USAGE}`);
    return 64;
  }
  if (parsed === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (parsed === 'list') {
    for (const entry of SABOTAGES) process.stdout.write(`${entry.id.padEnd(32)} ${entry.expectedInvariant.padEnd(4)} ${entry.file}\n`);
    return 0;
  }
  const options = parsed;
  const chosen = options.only === undefined ? SABOTAGES : SABOTAGES.filter((entry) => options.only!.includes(entry.id));
  const say = (line: string) => process.stderr.write(`mutants: ${line}\n`);
  mkdirSync(options.out, { recursive: true });
  const base = mkdtempSync(join(tmpdir(), 'leasehold-mutants-'));
  const started = wallClockMs();
  say(`${chosen.length} sabotage(s), budget ${options.even ? `${options.seeds} seeds per scenario` : `--budget ${options.seeds} (split by what each scenario finds)`} (first ${options.stages.length === 0 ? 'no prefix' : `prefixes of ${options.stages.join(', ')}`}), root seed ${options.root}, ${options.parallel} at once x ${options.jobs} thread(s)`);
  say(`copies in ${base}; reports in ${options.out}`);
  try {
    const pristine = snapshot(base);
    if (options.withoutFleet) {
      // The experiment, not the gate: every copy (the control too) runs with no transaction waiting at BEGIN.
      const fleet = join(pristine, FLEET_FILE);
      writeFileSync(fleet, applySabotage(readFileSync(fleet, 'utf8'), { id: 'without-fleet', file: FLEET_FILE, find: FLEET_ON, replace: FLEET_OFF }));
      say('without the fleet: FLEET_DEFAULTS.interleave is 0 in every copy');
    }
    let control: StageResult | undefined;
    if (options.control) {
      const seeds = options.stages[0] ?? options.seeds;
      const directory = copyOf(pristine, join(base, 'control'));
      control = await runCheck(directory, join(options.out, 'control'), seeds, { ...options, jobs: Math.min(MAX_PARALLEL, options.parallel * options.jobs) }, false);
      say(`control (no sabotage): ${seeds} seeds -> exit ${String(control.exitCode)} (${Math.round(control.wallMs / 1000)} s)`);
      if (control.exitCode !== 0) {
        say(`the unsabotaged tree already fails the gate (see ${control.log}): a sabotage verdict would mean nothing`);
        return 3;
      }
    }
    const outcomes = await pool(chosen, options.parallel, (entry) => runSabotage(entry, pristine, base, options, say));
    const lines = table(outcomes);
    process.stdout.write(`\n${lines.join('\n')}\n\n${legend().join('\n')}\n`);
    const missed = outcomes.filter((o) => o.status !== 'caught');
    for (const o of outcomes) if (o.note !== undefined) process.stdout.write(`note ${o.id}: ${o.note}\n`);
    writeFileSync(join(options.out, 'mutants.json'), `${JSON.stringify({ format: 'leasehold-mutants/1', root: options.root, seeds: options.seeds, stages: options.stages, wallMs: Math.round(wallClockMs() - started), outcomes }, null, 2)}\n`);
    writeFileSync(join(options.out, 'table.md'), markdown(outcomes, options, control));
    process.stdout.write(
      `\n${outcomes.length - missed.length}/${outcomes.length} caught in ${Math.round((wallClockMs() - started) / 60_000)} min; ${missed.length === 0 ? 'every sabotage was caught' : `NOT caught: ${missed.map((o) => `${o.id} (${o.status})`).join(', ')}`}\nreport: ${join(options.out, 'table.md')}\n`,
    );
    return missed.length === 0 ? 0 : 1;
  } finally {
    if (!options.keep) rmSync(base, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  process.exitCode = await main(process.argv.slice(2));
}
