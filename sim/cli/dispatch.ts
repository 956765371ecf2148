import { parseCommandLine, parseFlags, type ParsedArgs } from './args.ts';
import type { CommandContext, CommandModule } from './command-context.ts';
import { COMMANDS, START_ARGS, START_RUNS, type CommandName } from './command-specs.ts';
import { OPS_COMMAND_NAMES, type OpsCommandName } from './commands/ops-specs.ts';
import { EXIT_HARNESS, EXIT_OK, EXIT_USAGE } from './exit-codes.ts';
import { commandHelp, globalHelp } from './help.ts';
import { isUsageError } from './usage-error.ts';
import { versions } from '../check/versions.ts';
import { MissingDependencyError } from '../../src/queue/errors.ts';
import type { Resolver } from '../../src/optional-packages.ts';
import { requireHarnessPackages } from '../harness-packages.ts';

/** A command that has a module of its own: every one but `start`, which runs START_RUNS. */
export type ModuleCommand = Exclude<CommandName, 'start'>;

/**
 * How each command's module (sim/cli/commands/<name>.ts) is loaded: on demand, so a command loads only
 * what it uses (`leasehold work` and `--help` load none of the harness's packages). Each path is a
 * literal, so the CLI runs the same from source (tsx) and compiled (dist/, plain node), and a missing one
 * fails the build.
 */
export const COMMAND_LOADERS: Readonly<Record<ModuleCommand, () => Promise<CommandModule>>> = {
  check: () => import('./commands/check.ts'),
  merge: () => import('./commands/merge.ts'),
  replay: () => import('./commands/replay.ts'),
  shrink: () => import('./commands/shrink.ts'),
  run: () => import('./commands/run.ts'),
  report: () => import('./commands/report.ts'),
  scenarios: () => import('./commands/scenarios.ts'),
  demo: () => import('./commands/demo.ts'),
  work: () => import('./commands/work.ts'),
  // O1, O2: one module for the operator's commands over a live queue.
  ...(Object.fromEntries(OPS_COMMAND_NAMES.map((name) => [name, () => import('./commands/ops.ts')])) as Record<OpsCommandName, () => Promise<CommandModule>>),
};

/** The commands that run a production queue and need none of the harness's packages (sim/harness-packages.ts). */
const PRODUCTION_COMMANDS: ReadonlySet<ModuleCommand> = new Set(['work', ...OPS_COMMAND_NAMES]);

/**
 * A command's module. The harness's commands need its optional packages (zod, seedrandom): checked
 * first, so one missing is a MissingDependencyError naming them all, before anything imports them.
 */
export async function loadCommand(command: ModuleCommand, resolve?: Resolver): Promise<CommandModule> {
  if (!PRODUCTION_COMMANDS.has(command)) requireHarnessPackages(`leasehold ${command}`, resolve);
  return COMMAND_LOADERS[command]();
}

/**
 * The whole CLI as a function: parse, run the command's module, and map every way out to an S9 exit
 * code. It never calls process.exit, so tests can run it in-process.
 */
export async function runCli(argv: readonly string[], context: CommandContext): Promise<number> {
  let planned: ReturnType<typeof toRun>;
  try {
    const parsed = parseCommandLine(argv);
    if (parsed.kind === 'help') {
      context.out(parsed.command === undefined ? globalHelp() : commandHelp(parsed.command));
      return EXIT_OK;
    }
    if (parsed.kind === 'version') {
      // What a trace depends on (the same versions a summary and a counterexample record).
      const v = versions();
      context.out(`leasehold ${v.leasehold} (node ${v.node}, better-sqlite3 ${v.betterSqlite3}, SQLite ${v.sqlite}, ${v.platform})`);
      return EXIT_OK;
    }
    planned = toRun(parsed.args);
  } catch (error) {
    if (!isUsageError(error)) throw error;
    context.err(error.line());
    return EXIT_USAGE;
  }
  let module: CommandModule;
  try {
    module = await loadCommand(planned.command);
  } catch (error) {
    if (!(error instanceof MissingDependencyError)) throw error;
    context.err(error.message);
    return EXIT_USAGE;
  }
  return runCommand(module, planned.args, context);
}

/** What runs for a command line: the command's own module, but for `start` (the main job) START_RUNS with START_ARGS. */
export function toRun(args: ParsedArgs): { command: ModuleCommand; args: ParsedArgs } {
  const command = args.command;
  if (command === 'start') return { command: START_RUNS, args: parseFlags(COMMANDS[START_RUNS], START_ARGS) };
  return { command, args };
}

/** Runs one command module: its exit code, 64 for a UsageError it throws, 3 for anything else (S9). */
export async function runCommand(module: CommandModule, args: ParsedArgs, context: CommandContext): Promise<number> {
  try {
    const code = await module.execute(args, context);
    if (!Number.isInteger(code) || code < 0 || code > 255) {
      context.err(`leasehold: harness crash: ${args.command} returned ${String(code)} instead of an exit code`);
      return EXIT_HARNESS;
    }
    return code;
  } catch (error) {
    if (isUsageError(error)) {
      context.err(error.line());
      return EXIT_USAGE;
    }
    // An optional package the command needs is not installed (pg for a postgres:// URL, @electric-sql/pglite
    // for --store pglite): the one line that says what to install, as for bad usage (64), not a crash.
    if (error instanceof MissingDependencyError) {
      context.err(error.message);
      return EXIT_USAGE;
    }
    reportCrash(args.command, error, context);
    return EXIT_HARNESS;
  }
}

/** S9: a harness crash exits 3 with a one-line message first, then the stack for whoever debugs it. */
export function reportCrash(where: string, error: unknown, context: CommandContext): void {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  context.err(`leasehold: harness crash in ${where}: ${message}`);
  if (error instanceof Error && error.stack !== undefined) context.err(error.stack.split('\n').slice(1).join('\n'));
}
