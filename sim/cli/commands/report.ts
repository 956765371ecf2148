import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { deathLine } from '../../check/report.ts';
import { gitState } from '../../check/git.ts';
import { duration } from '../../check/progress.ts';
import { resolveScenarioArgument } from '../../check/scenario-source.ts';
import { planJobs, rootSeed } from '../../check/seeds.ts';
import { versions } from '../../check/versions.ts';
import { wallClockMs } from '../../check/wall-clock.ts';
import { scenarioReport } from '../../report/document.ts';
import { collectScenario, reportDirName, writeScenarioReport } from '../../report/run-report.ts';
import type { ParsedArgs } from '../args.ts';
import type { CommandContext } from '../command-context.ts';
import { EXIT_HARNESS, EXIT_LIVENESS, EXIT_OK, EXIT_SAFETY } from '../exit-codes.ts';
import { commandLine } from '../shell-quote.ts';

/** Seeds without --seeds: enough for readable percentiles, quick enough to wait for. */
export const DEFAULT_REPORT_SEEDS = 20;
/** Up to this many seeds run in this process; past it, on check's worker threads. */
const IN_PROCESS_MAX = 3;

/**
 * `leasehold report --scenario NAME|FILE [--seeds N] [--seed S] [--out DIR]`: runs N seeds of one
 * scenario (the same seeds `leasehold check --scenario NAME --seeds N --seed S` runs: S is the root
 * seed, by default the git commit) and writes report.md, report.json and a self-contained index.html
 * into DIR (default reports/<scenario>/). Exits like check for the verdicts it saw (S9: 0, 1, 2, 3);
 * the report is written either way.
 */
export async function execute(args: ParsedArgs, context: CommandContext): Promise<number> {
  const argument = args.string('scenario') as string;
  const source = resolveScenarioArgument(argument, 'leasehold report --scenario');
  const seeds = args.integer('seeds') ?? DEFAULT_REPORT_SEEDS;
  const git = gitState();
  const root = rootSeed(args.string('seed'), git);
  const outDir = args.string('out') ?? join('reports', reportDirName(source.name));
  const jobs = planJobs(root.seed, [source.name], seeds);
  const threads = seeds <= IN_PROCESS_MAX ? 1 : Math.min(availableParallelism(), seeds);
  const command = commandLine(['leasehold', 'report', '--scenario', argument, '--seeds', String(seeds), '--seed', root.seed, ...(args.string('out') === undefined ? [] : ['--out', outDir])]);
  if (root.source === 'no-git') context.err(`leasehold: warning: no git commit found; reporting on the fixed root seed '${root.seed}'`);
  context.out(`leasehold report: ${source.name} x ${seeds} seed(s) on ${threads === 1 ? 'this thread' : `${threads} threads`}; root seed ${root.seed} (${root.source === 'flag' ? 'from --seed' : root.source === 'git' ? 'from the git commit' : 'fixed'})`);

  const started = wallClockMs();
  const { aggregator, death } = await collectScenario({
    source,
    jobs,
    threads,
    progress: process.stderr.isTTY ? { tty: true, columns: process.stderr.columns ?? 80, write: (text) => process.stderr.write(text) } : { tty: false, line: (text) => context.err(text) },
  });
  const report = scenarioReport({ source, root, git, versions: versions(), command }, aggregator.figures());
  const written = writeScenarioReport(outDir, report);
  const { verdicts } = report.figures;
  context.out(`seeds: ${verdicts.pass} pass, ${verdicts.safety} safety, ${verdicts.liveness} liveness, ${verdicts.nondeterminism} nondeterminism (${duration((wallClockMs() - started) / 1000)})`);
  const firstFailing = report.figures.seeds.find((row) => row.verdict !== 'pass');
  if (firstFailing !== undefined) context.out(`first failure: seed ${firstFailing.seed}: ${firstFailing.reason}\nreplay: ${report.replays[firstFailing.seed]}`);
  if (death !== undefined) context.err(`leasehold: harness crash: ${deathLine(death)}`);
  context.out(['report: ' + written.html, written.markdown, written.json, ...(written.svg === undefined ? [] : [written.svg])].join('\n        '));
  if (verdicts.safety > 0) return EXIT_SAFETY;
  if (death !== undefined || verdicts.nondeterminism > 0) return EXIT_HARNESS;
  if (verdicts.liveness > 0) return EXIT_LIVENESS;
  return EXIT_OK;
}
