// The entry of a `leasehold check` worker thread. Node 20 refuses a .ts file as a Worker's entry
// (ERR_UNKNOWN_FILE_EXTENSION) even when the parent runs under tsx, so this plain module registers
// tsx's loader in the thread first and then imports the TypeScript worker.
import { register } from 'tsx/esm/api';

register();
await import('./check-worker.ts');
