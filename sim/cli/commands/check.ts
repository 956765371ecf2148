import { DEFAULT_SCENARIO } from '../../scenarios/registry.ts';
import { resolveScenarioArgument, type ScenarioSource } from '../../check/scenario-source.ts';
import { check, DEFAULT_FAILURES_DIR, DEFAULT_SEEDS, DEFAULT_UNSEED_RATE, type CheckOptions } from '../../testing-harness.ts';
import { asUsageError } from '../library-errors.ts';
import type { ParsedArgs } from '../args.ts';
import type { CommandContext } from '../command-context.ts';
import { UsageError } from '../usage-error.ts';
import { storeArgument } from '../store-argument.ts';

/**
 * The default budget, as seeds per scenario: --budget 100, split by what each scenario finds
 * (check/budget.ts). Every scenario gets at least half, 50, which is enough for the required marks of
 * `mixed` and each scenario's own (see check/coverage.ts). Share of seeds run twice for the unseed check
 * (S6) without --unseed-rate; where counterexamples go without --out. (The library's defaults: one set.)
 */
export { DEFAULT_FAILURES_DIR, DEFAULT_SEEDS, DEFAULT_UNSEED_RATE };

/**
 * `leasehold check [--scenario NAME|FILE]... [--seeds N | --budget N] [--seed S] [--jobs J] [--shard K/N]
 * [--junit FILE] [--out DIR] [--unseed-rate RATE] [--bail]`: the CI gate. A front over `check()` of
 * leasehold/testing (sim/testing-harness.ts), which runs N seeds of each scenario, or a budget split by
 * what each finds (the default; check/budget.ts), of the given scenarios (default: the whole catalogue)
 * on worker threads, checks every invariant, reruns a sample of seeds to compare trace hashes, checks
 * coverage, and resolves to the summary with its S9 exit code. Here: the flags, read and checked (a bad
 * one is exit 64 with a hint, before anything runs), and the printing.
 */
export async function execute(args: ParsedArgs, context: CommandContext): Promise<number> {
  const scenarioArguments = args.strings('scenario');
  // A bad name or file is exit 64 with a hint here; check() is given the same arguments and reads them again.
  resolveSources(scenarioArguments);
  const seedsFlag = args.integer('seeds');
  const budgetFlag = args.integer('budget');
  if (seedsFlag !== undefined && budgetFlag !== undefined) throw new UsageError('--seeds gives every scenario the same seeds and --budget splits them by what each finds: give one of them', 'leasehold check --budget 100');
  const store = storeArgument(args, 'check');
  const shard = args.shard('shard');
  const outDir = args.string('out');
  const report = args.boolean('report');
  if (report && outDir === undefined) throw new UsageError('--report writes its reports under --out DIR, and no --out was given', 'leasehold check --out reports/latest --report');
  const junitPath = args.string('junit');
  const explore = exploreFraction(args.string('explore'));
  if (explore !== undefined && budgetFlag !== undefined) throw new UsageError('--explore spends each scenario\'s even share (--seeds N); it does not combine with --budget', 'leasehold check --seeds 100 --explore 50%');
  const seed = args.string('seed');
  const jobs = args.integer('jobs');
  const agent = args.string('agent');
  const bail = args.boolean('bail');
  const options: CheckOptions = {
    ...(scenarioArguments.length === 0 ? {} : { scenarios: scenarioArguments }),
    ...(seedsFlag === undefined ? {} : { seeds: seedsFlag }),
    ...(budgetFlag === undefined ? {} : { budget: budgetFlag }),
    ...(seed === undefined ? {} : { seed }),
    ...(jobs === undefined ? {} : { jobs }),
    ...(shard === undefined ? {} : { shard }),
    ...(store === 'sqlite' ? {} : { store }),
    ...(outDir === undefined ? {} : { out: outDir }),
    ...(junitPath === undefined ? {} : { junit: junitPath }),
    ...(report ? { report } : {}),
    unseedRate: unseedRate(args.string('unseed-rate')),
    ...(explore === undefined ? {} : { explore }),
    ...(bail ? { bail } : {}),
    ...(agent === undefined ? {} : { agent }),
    output: context,
    // A terminal gets the redrawn bar on stderr; anything else, plain lines among the command's own.
    progress: process.stderr.isTTY ? 'stderr' : (line) => context.err(line),
  };
  try {
    return (await check(options)).exitCode;
  } catch (error) {
    throw asUsageError(error, agent === undefined ? 'leasehold check --seeds 100' : `leasehold check --agent ${agent}`);
  }
}

/** Each --scenario once, in the order given; two scenarios of the same name cannot share seeds or files. */
function resolveSources(scenarioArguments: readonly string[]): ScenarioSource[] {
  const sources: ScenarioSource[] = [];
  for (const argument of scenarioArguments) {
    const source = resolveScenarioArgument(argument, 'leasehold check --scenario');
    const clash = sources.find((known) => known.name === source.name);
    if (clash === undefined) sources.push(source);
    else if (clash.file !== source.file) {
      throw new UsageError(`two scenarios are named '${source.name}' (${clash.file ?? 'the catalogue'} and ${source.file ?? 'the catalogue'})`, `leasehold check --scenario ${DEFAULT_SCENARIO}`);
    }
  }
  return sources;
}

/** `5%`, `0.05`, `0`: the share of seeds to run twice. */
export function unseedRate(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_UNSEED_RATE;
  const percent = raw.endsWith('%');
  const value = Number(percent ? raw.slice(0, -1) : raw);
  const rate = percent ? value / 100 : value;
  if (raw.trim() === '' || !Number.isFinite(rate) || rate < 0 || rate > 1) {
    throw new UsageError(`--unseed-rate expects a share between 0 and 1 or 0% and 100%, got '${raw}'`, 'leasehold check --seeds 100 --unseed-rate 5%');
  }
  return rate;
}

/** `50%`, `0.5`: the share of each scenario's seeds spent on guided children; above 0 and below 1. */
export function exploreFraction(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const percent = raw.endsWith('%');
  const value = Number(percent ? raw.slice(0, -1) : raw);
  const fraction = percent ? value / 100 : value;
  if (raw.trim() === '' || !Number.isFinite(fraction) || fraction <= 0 || fraction >= 1) {
    throw new UsageError(`--explore expects a share above 0 and below 1 (or 0% and 100%), got '${raw}'`, 'leasehold check --seeds 100 --explore 50%');
  }
  return fraction;
}
