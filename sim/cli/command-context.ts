import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ParsedArgs } from './args.ts';

/** Where a command writes. Tests pass collectors; the real CLI passes stdout and stderr. */
export interface CliIo {
  /** One or more lines for standard output (a trailing newline is added). */
  out(text: string): void;
  /** One or more lines for standard error. */
  err(text: string): void;
}

/**
 * Loads a module of the harness by its path under sim/ (for example 'run-scenario.ts'), or returns
 * undefined when the file is not in this build. Only absence is forgiven: a module that exists but
 * fails to load throws, and that is a harness crash (exit 3) with its own message.
 */
export type SimModuleLoader = (pathUnderSim: string) => Promise<Record<string, unknown> | undefined>;

export interface CommandContext extends CliIo {
  importSimModule: SimModuleLoader;
}

/**
 * The contract of every module in sim/cli/commands/: `execute(args, context)` resolves to the exit
 * code (S9). Bad usage may be thrown as a UsageError (exit 64); anything else thrown is a crash (exit 3).
 */
export interface CommandModule {
  execute(args: ParsedArgs, context: CommandContext): Promise<number>;
}

const SIM_ROOT = new URL('../', import.meta.url);
/** '.ts' when running from source (tsx), '.js' when running the compiled package (dist/). */
const OWN_EXTENSION = import.meta.url.endsWith('.js') ? '.js' : '.ts';

export const importSimModule: SimModuleLoader = async (pathUnderSim) => {
  const url = new URL(pathUnderSim.replace(/\.ts$/, OWN_EXTENSION), SIM_ROOT);
  if (!existsSync(fileURLToPath(url))) return undefined;
  // The specifier is computed, so TypeScript does not insist the file exists when type-checking.
  return (await import(url.href)) as Record<string, unknown>;
};

/** The path as people see it in the tree, for messages. */
export function simPath(pathUnderSim: string): string {
  return `sim/${pathUnderSim}`;
}
