/**
 * What a Supervisor (supervisor.ts) and its worker processes (worker-process.ts) say to each other over
 * the IPC channel of node's fork, and the exit codes of a worker process (SPEC W3). Kept apart from the
 * entry script, which starts listening as soon as it is imported.
 */
import type { QueueConfig } from '../queue/types.ts';
import type { RunOutcome } from './types.ts';
import type { WorkerOptions } from './worker.ts';

/** The options of a worker process's Worker that a supervisor may set (the rest are the process's own). */
export type WorkerProcessOptions = Pick<WorkerOptions, 'slots' | 'heartbeatMs' | 'maxSteps' | 'toolTimeoutMs' | 'idleWaitMs' | 'maxIdleWaitMs' | 'toolConcurrency'>;

export interface StartMessage {
  type: 'start';
  workerId: string;
  db: string;
  schema?: string;
  agent: string;
  drainMs: number;
  config: Partial<QueueConfig>;
  worker: WorkerProcessOptions;
}

/** Supervisor to process after start: drain and exit (what SIGTERM does, for a process that may not have its handler yet). */
export interface DrainMessage {
  type: 'drain';
}

export type ChildMessage =
  | { type: 'ready'; workerId: string }
  | { type: 'fatal'; phase: 'load' | 'run'; message: string }
  | { type: 'log'; line: string }
  | { type: 'outcome'; outcome: RunOutcome }
  | { type: 'drained'; interrupted: number }
  /** The last message: the process exits with `code` once it has left. */
  | { type: 'bye'; code: number };

export const EXIT_DRAINED = 0;
export const EXIT_SOFTWARE = 70;
/** EX_CONFIG from BSD sysexits.h: the agent module is broken, so restarting this process will not help. */
export const EXIT_AGENT_MODULE = 78;

