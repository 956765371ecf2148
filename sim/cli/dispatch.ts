import { parseCommandLine, parseFlags, type ParsedArgs } from './args.ts';
import { importSimModule as importFromTree, simPath, type CliIo, type CommandContext, type SimModuleLoader } from './command-context.ts';
import { COMMANDS, START_ARGS, START_RUNS, type CommandSpec } from './command-specs.ts';
import { EXIT_HARNESS, EXIT_OK, EXIT_USAGE } from './exit-codes.ts';
import { commandHelp, globalHelp } from './help.ts';
import { isUsageError } from './usage-error.ts';

export interface RunCliOptions {
  /** Replaces how harness modules (and command modules) are found; tests use it to stand in for them. */
  importSimModule?: SimModuleLoader;
}

/**
 * The whole CLI as a function: parse, dispatch to sim/cli/commands/<name>.ts, and map every way out
 * to an S9 exit code. It never calls process.exit, so tests can run it in-process.
 */
export async function runCli(argv: readonly string[], io: CliIo, options: RunCliOptions = {}): Promise<number> {
  const context: CommandContext = {
    out: (text) => io.out(text),
    err: (text) => io.err(text),
    importSimModule: options.importSimModule ?? importFromTree,
  };
  let args: ParsedArgs;
  try {
    const parsed = parseCommandLine(argv);
    if (parsed.kind === 'help') {
      const spec = parsed.command;
      io.out(spec === undefined ? globalHelp() : commandHelp(spec, await isAvailable(spec, context)));
      return EXIT_OK;
    }
    // `start` is the main job; which command does that job is one constant (START_RUNS), run with its defaults.
    args = parsed.args.command === 'start' ? parseFlags(COMMANDS[START_RUNS], START_ARGS) : parsed.args;
  } catch (error) {
    if (!isUsageError(error)) throw error;
    io.err(error.line());
    return EXIT_USAGE;
  }
  return runCommand(args, context);
}

async function runCommand(args: ParsedArgs, context: CommandContext): Promise<number> {
  const modulePath = commandModulePath(args.spec);
  try {
    const module = await context.importSimModule(modulePath);
    if (module === undefined) return notInThisBuild(args.spec, context);
    if (typeof module.execute !== 'function') {
      context.err(`leasehold: harness crash: ${simPath(modulePath)} does not export execute(args, context)`);
      return EXIT_HARNESS;
    }
    const code: unknown = await module.execute(args, context);
    if (typeof code !== 'number' || !Number.isInteger(code) || code < 0 || code > 255) {
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
export function reportCrash(where: string, error: unknown, io: CliIo): void {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  io.err(`leasehold: harness crash in ${where}: ${message}`);
  if (error instanceof Error && error.stack !== undefined) io.err(error.stack.split('\n').slice(1).join('\n'));
}

function notInThisBuild(spec: CommandSpec, context: CommandContext): number {
  const path = simPath(commandModulePath(spec));
  if (spec.pendingIssue === undefined) {
    context.err(`leasehold: harness crash: ${path} is missing from this build`);
  } else {
    context.err(`leasehold: ${spec.name} is not yet available in this build (${path} arrives with issue ${spec.pendingIssue}); nothing was run. Try: leasehold demo`);
  }
  return EXIT_HARNESS;
}

async function isAvailable(spec: CommandSpec, context: CommandContext): Promise<boolean> {
  return spec.pendingIssue === undefined || (await context.importSimModule(commandModulePath(spec))) !== undefined;
}

function commandModulePath(spec: CommandSpec): string {
  return `cli/commands/${spec.name}.ts`;
}
