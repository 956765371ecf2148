// The entry of a `leasehold check` worker thread. Node 20 refuses a .ts file as a Worker's entry
// (ERR_UNKNOWN_FILE_EXTENSION) even when the parent runs under tsx, so from source this plain module
// registers tsx's loader in the thread first and then imports the TypeScript worker. In the compiled
// package (dist/sim/check/, where the build copies this file) check-worker.js sits beside it and is
// imported with plain node: tsx is not needed there.
import { existsSync } from 'node:fs';

const compiled = new URL('./check-worker.js', import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('./check-worker.ts');
}
