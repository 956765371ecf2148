#!/usr/bin/env node
// The `leasehold` command, the package's bin. In this repository (the TypeScript sources are here, with
// tsx) it runs sim/cli/main.ts through tsx, so `npx leasehold ...` and `npm run leasehold -- ...` need no
// build step; in an installed package (no sources) it runs the compiled dist/sim/cli/main.js in this
// process. Through tsx the CLI is a child process: a signal sent to this one (SIGTERM from a supervisor
// or a service manager, SIGINT, SIGHUP) is passed on, so `leasehold work` drains as if run directly, and
// the exit code is the CLI's, or 128 + the signal's number if a signal ended it.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const sources = join(root, 'sim', 'cli', 'main.ts');

function tsxCli() {
  try {
    return createRequire(import.meta.url).resolve('tsx/cli');
  } catch {
    return undefined;
  }
}

const tsx = existsSync(sources) ? tsxCli() : undefined;
if (tsx === undefined) {
  await import(pathToFileURL(join(root, 'dist', 'sim', 'cli', 'main.js')).href);
} else {
  const child = spawn(process.execPath, [tsx, sources, ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('error', (error) => {
    process.stderr.write(`leasehold: could not start the CLI: ${error.message}\n`);
    process.exit(70);
  });
  child.on('exit', (code, signal) => process.exit(signal === null ? (code ?? 3) : 128 + (constants.signals[signal] ?? 0)));
}
