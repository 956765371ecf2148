/**
 * `npm run bench`: runs the registered benchmark sections, prints a table, and writes
 * reports/bench/latest.json (commit, node version, raw numbers, ratios, targets, pass/fail).
 *
 * Flags and exit codes: USAGE below (what `--help` prints).
 *
 * Every target is a ratio of contenders measured side by side in this run; absolute rates are context.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  registerSection,
  registeredSections,
  type BenchContext,
  type BenchOptions,
  type BenchSection,
} from './registry.ts';
import { defaultSections } from './sections.ts';
import { renderTable, type SectionOutcome } from './table.ts';
import { elapsedNs, makeGc, makeTmpDir, nowNs, removeDir } from './timing.ts';

export { registerSection, registeredSections } from './registry.ts';
export type { BenchSection, BenchContext, SectionResult, Metric } from './registry.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

interface Cli {
  options: BenchOptions;
  only?: string[];
  help: boolean;
  list: boolean;
  strict: boolean;
  out: string;
}

function parseArgs(argv: readonly string[]): Cli {
  const cli: Cli = {
    options: { rounds: 21, sliceMs: 100, quick: false },
    help: false,
    list: false,
    strict: false,
    out: join(repoRoot, 'reports', 'bench', 'latest.json'),
  };
  let roundsGiven = false;
  for (const arg of argv) {
    const [key, value] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, ''];
    const int = () => {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1) throw new UsageError(`${key} needs a positive integer`);
      return n;
    };
    switch (key) {
      case '--quick': cli.options.quick = true; break;
      case '--rounds': cli.options.rounds = int(); roundsGiven = true; break;
      case '--slice-ms': cli.options.sliceMs = int(); break;
      case '--only': cli.only = value.split(',').filter(Boolean); break;
      case '--help': case '-h': cli.help = true; break;
      case '--list': cli.list = true; break;
      case '--strict': cli.strict = true; break;
      case '--out': cli.out = resolve(value); break;
      default: throw new UsageError(`unknown argument ${arg}`);
    }
  }
  if (cli.options.quick && !roundsGiven) cli.options.rounds = 5;
  return cli;
}

class UsageError extends Error {}

const USAGE = `Usage: npm run bench -- [--only=ID,ID] [--rounds=N] [--slice-ms=N] [--quick] [--strict] [--out=PATH] [--list]

Runs the benchmark sections (all of them, in order, unless --only) and prints one table of targets,
each a ratio of contenders measured side by side in this run; writes the raw numbers as JSON.

Flags:
  --only=ID,ID    run only these sections (see --list)
  --rounds=N      timed rounds per section (default 21; 5 with --quick)
  --slice-ms=N    length of one timed slice in a throughput section (default 100)
  --quick         small workloads: a smoke test, not a measurement
  --strict        exit 1 when a target is not met
  --out=PATH      where the JSON goes (default reports/bench/latest.json)
  --list          print the sections and exit
  -h, --help      show this help

Exit codes: 0 ran (targets may have failed: see the table), 1 a target failed under --strict,
2 a section crashed, 64 bad usage.
`;

function git(args: string[]): string | undefined {
  try {
    return execFileSync('git', args, { cwd: repoRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

export async function runBench(sections: readonly BenchSection[], options: BenchOptions): Promise<SectionOutcome[]> {
  const gc = makeGc();
  const outcomes: SectionOutcome[] = [];
  for (const section of sections) {
    const tmpDir = makeTmpDir(section.id);
    const ctx: BenchContext = {
      options,
      tmpDir,
      progress: (m) => process.stderr.write(`${m}\n`),
      gc,
    };
    process.stderr.write(`[${section.id}] ${section.title}\n`);
    const start = nowNs();
    try {
      const result = await section.run(ctx);
      outcomes.push({ id: section.id, title: section.title, seconds: elapsedNs(start) / 1e9, result });
    } catch (e) {
      const error = e instanceof Error ? (e.stack ?? e.message) : String(e);
      process.stderr.write(`[${section.id}] ERROR ${error}\n`);
      outcomes.push({ id: section.id, title: section.title, seconds: elapsedNs(start) / 1e9, error });
    } finally {
      removeDir(tmpDir);
    }
  }
  return outcomes;
}

async function main(): Promise<number> {
  let cli: Cli;
  try {
    cli = parseArgs(process.argv.slice(2));
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`bench: ${e.message}\nTry: npm run bench -- --help\n`);
      return 64;
    }
    throw e;
  }
  if (cli.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  for (const s of defaultSections) registerSection(s);
  const all = registeredSections();
  if (cli.list) {
    for (const s of all) process.stdout.write(`${s.id}\t${s.title}\n`);
    return 0;
  }
  const unknown = (cli.only ?? []).filter((id) => !all.some((s) => s.id === id));
  if (unknown.length > 0) {
    process.stderr.write(`bench: unknown section(s) ${unknown.join(', ')}; known: ${all.map((s) => s.id).join(', ')}\n`);
    return 64;
  }
  const selected = cli.only ? all.filter((s) => cli.only!.includes(s.id)) : all;

  const commit = git(['rev-parse', 'HEAD']);
  const dirty = (git(['status', '--porcelain']) ?? '') !== '';
  const loadBefore = loadavg();
  const start = nowNs();
  const outcomes = await runBench(selected, cli.options);
  const totalSeconds = elapsedNs(start) / 1e9;
  const loadAfter = loadavg();

  const metrics = outcomes.flatMap((o) => o.result?.metrics ?? []);
  const crashed = outcomes.filter((o) => o.error !== undefined);
  const allPass = crashed.length === 0 && metrics.every((m) => m.pass);
  const cpu = cpus();
  const environment = {
    commit: commit ?? 'unknown',
    worktreeDirty: dirty,
    node: process.version,
    v8: process.versions.v8,
    platform: `${process.platform}-${process.arch}`,
    cpus: cpu.length,
    cpuModel: cpu[0]?.model ?? 'unknown',
    loadavg1mBefore: Number(loadBefore[0]!.toFixed(2)),
    loadavg1mAfter: Number(loadAfter[0]!.toFixed(2)),
  };

  const header = [
    `Leasehold bench — commit ${environment.commit.slice(0, 12)}${dirty ? ' (dirty worktree)' : ''}, node ${environment.node}, ` +
      `${environment.cpus} cpus, load ${environment.loadavg1mBefore} → ${environment.loadavg1mAfter}`,
    `rounds ${cli.options.rounds}, slice ${cli.options.sliceMs} ms${cli.options.quick ? ', QUICK (indicative only)' : ''}, ` +
      `total ${totalSeconds.toFixed(1)} s. Figures are medians of per-round ratios of contenders run side by side.`,
  ];
  process.stdout.write(`${renderTable(outcomes, header)}\n`);

  const report = {
    ...environment,
    options: cli.options,
    totalSeconds: Number(totalSeconds.toFixed(1)),
    allPass,
    metrics: Object.fromEntries(
      metrics.map((m) => [m.id, { value: Number(m.value.toPrecision(4)), target: m.target, pass: m.pass, label: m.label, spread: m.spread }]),
    ),
    sections: outcomes.map((o) => ({
      id: o.id,
      title: o.title,
      seconds: Number(o.seconds.toFixed(1)),
      ...(o.error !== undefined ? { error: o.error } : {}),
      context: o.result?.context ?? [],
      raw: o.result?.raw ?? {},
    })),
  };
  mkdirSync(dirname(cli.out), { recursive: true });
  writeFileSync(cli.out, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`\nwrote ${cli.out}\n`);

  if (crashed.length > 0) return 2;
  if (cli.strict && !allPass) return 1;
  return 0;
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (invokedDirectly) {
  main().then(
    (code) => process.exit(code),
    (e) => {
      process.stderr.write(`bench crashed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exit(2);
    },
  );
}
