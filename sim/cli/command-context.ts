import type { ParsedArgs } from './args.ts';

/** What a command is given: where to write. Tests pass collectors; the real CLI passes stdout and stderr. */
export interface CommandContext {
  /** One or more lines for standard output (a trailing newline is added). */
  out(text: string): void;
  /** One or more lines for standard error. */
  err(text: string): void;
}

/**
 * The contract of every module in sim/cli/commands/: `execute(args, context)` resolves to the exit
 * code (S9). Bad usage may be thrown as a UsageError (exit 64); anything else thrown is a crash (exit 3).
 */
export interface CommandModule {
  execute(args: ParsedArgs, context: CommandContext): Promise<number>;
}
