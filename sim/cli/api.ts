/**
 * `leasehold/cli`: the `leasehold` command as a function, for a script or a test that runs it without a
 * child process. `runCli(['check', '--scenario', 'mixed', '--seeds', '5'])` runs what `leasehold check
 * --scenario mixed --seeds 5` runs and resolves to its exit code (SPEC S9: EXIT_OK 0, EXIT_SAFETY 1,
 * EXIT_LIVENESS 2, EXIT_HARNESS 3, EXIT_COVERAGE 4, EXIT_USAGE 64); it never exits the process. What
 * the command prints goes to `output`, line by line (standard output and standard error by default).
 *
 * Loading this entry loads no command: each is loaded when run. The harness's commands (check, run,
 * replay, report, scenarios, merge, demo) need the optional packages zod and seedrandom; without them
 * such a command prints one line naming them (`npm install zod seedrandom`) and returns EXIT_USAGE.
 */
import { InputError } from '../../src/queue/errors.ts';
import type { CommandContext } from './command-context.ts';
import { runCli as dispatch } from './dispatch.ts';

export { EXIT_COVERAGE, EXIT_HARNESS, EXIT_LIVENESS, EXIT_OK, EXIT_SAFETY, EXIT_USAGE, type ExitCode } from './exit-codes.ts';

/** Where a command's lines go: `out` for standard output, `err` for standard error (each call is one or more lines, without the trailing newline). */
export type CliOutput = CommandContext;

const STANDARD_STREAMS: CliOutput = {
  out: (text) => void process.stdout.write(`${text}\n`),
  err: (text) => void process.stderr.write(`${text}\n`),
};

/**
 * Runs `leasehold ...argv` in this process and resolves to its exit code. Bad usage resolves to
 * EXIT_USAGE (64) with the one-line message on `output.err`, as the command does; only an argv that is
 * not an array of strings rejects (InputError).
 */
export async function runCli(argv: readonly string[], output: CliOutput = STANDARD_STREAMS): Promise<number> {
  if (!Array.isArray(argv) || argv.some((argument) => typeof argument !== 'string')) throw new InputError('argv', 'expected an array of strings, as process.argv.slice(2)');
  if (output === null || typeof output !== 'object' || typeof output.out !== 'function' || typeof output.err !== 'function') {
    throw new InputError('output', 'expected { out(text), err(text) }');
  }
  return dispatch(argv, output);
}
