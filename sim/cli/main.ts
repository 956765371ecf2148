#!/usr/bin/env node
/**
 * The `leasehold` command (tools/leasehold.js runs this file through tsx; `npm start` runs `start`; the
 * packed package runs its compiled form, dist/sim/cli/main.js, with plain node).
 * Everything testable lives in dispatch.ts; this file only binds it to the process: standard streams,
 * the exit code, and a last line of defence that turns any stray error into exit 3 (S9: harness crash).
 */
import { reportCrash, runCli } from './dispatch.ts';
import type { CommandContext } from './command-context.ts';
import { EXIT_HARNESS, EXIT_OK } from './exit-codes.ts';

const io: CommandContext = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
};

/** Writes are flushed before exiting, so a piped report is never cut short. */
async function exit(code: number): Promise<never> {
  await Promise.all([process.stdout, process.stderr].map((stream) => new Promise<void>((resolve) => stream.write('', () => resolve()))));
  process.exit(code);
}

function crash(error: unknown): void {
  reportCrash('leasehold', error, io);
  void exit(EXIT_HARNESS);
}

// A reader that went away (`leasehold scenarios | head -1`) is not a crash.
process.stdout.on('error', (error: NodeJS.ErrnoException) => (error.code === 'EPIPE' ? process.exit(EXIT_OK) : crash(error)));
process.on('uncaughtException', crash);
process.on('unhandledRejection', crash);

try {
  await exit(await runCli(process.argv.slice(2), io));
} catch (error) {
  crash(error);
}
