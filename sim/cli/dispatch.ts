import { parseCommandLine, parseFlags, type ParsedArgs } from './args.ts';
import type { CommandContext, CommandModule } from './command-context.ts';
import { COMMANDS, START_ARGS, START_RUNS, type CommandName } from './command-specs.ts';
import * as check from './commands/check.ts';
import * as demo from './commands/demo.ts';
import * as merge from './commands/merge.ts';
import * as replay from './commands/replay.ts';
import * as report from './commands/report.ts';
import * as run from './commands/run.ts';
import * as scenarios from './commands/scenarios.ts';
import * as work from './commands/work.ts';
import { EXIT_HARNESS, EXIT_OK, EXIT_USAGE } from './exit-codes.ts';
import { commandHelp, globalHelp } from './help.ts';
import { isUsageError } from './usage-error.ts';
import { versions } from '../check/versions.ts';

/**
 * The module of each command (sim/cli/commands/<name>.ts). They are imported statically, so that the
 * CLI runs the same from source (tsx) and compiled (dist/, plain node), and a missing one fails the build.
 */
export const COMMAND_MODULES: Readonly<Record<Exclude<CommandName, 'start'>, CommandModule>> = { check, merge, replay, run, report, scenarios, demo, work };

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
  return runCommand(planned.module, planned.args, context);
}

/** What runs for a command line: the command's own module, but for `start` (the main job) START_RUNS with START_ARGS. */
export function toRun(args: ParsedArgs): { module: CommandModule; args: ParsedArgs } {
  const command = args.command;
  if (command === 'start') return { module: COMMAND_MODULES[START_RUNS], args: parseFlags(COMMANDS[START_RUNS], START_ARGS) };
  return { module: COMMAND_MODULES[command], args };
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
