import { Worker } from 'node:worker_threads';
import type { ScenarioSpec } from '../scenario.ts';
import type { Job } from './seeds.ts';
import type { SimStore } from '../store/pglite.ts';
import type { DigestRequest, FromWorker, JobResult, ToWorker, WorkerSetup } from './types.ts';

const BOOTSTRAP = new URL('./worker-bootstrap.mjs', import.meta.url);

export interface PoolOptions {
  threads: number;
  scenarios: Record<string, ScenarioSpec>;
  /** Threads attach a report digest to each first run's result. */
  digest?: DigestRequest;
  /** The database the threads' worlds run on (default sqlite). */
  store?: SimStore;
  /** T2: the agent module (absolute path) the threads' worlds run. */
  agent?: string;
  /** Called for each result as it arrives (progress, early failure lines). */
  onResult(result: JobResult): void;
  /**
   * --bail: called after onResult; once it says true, no further job is handed out. The jobs already
   * running finish and are reported; the rest are returned, unrun, in `notRun`.
   */
  stopWhen?(result: JobResult): boolean;
}

/** A thread that died: a harness crash (S9, exit 3), with the job it was running when it did. */
export interface ThreadDeath {
  threadIndex: number;
  job: Job | undefined;
  error: string;
}

export interface PoolOutcome {
  /** In the order they arrived; sort by job id for a stable report. */
  results: JobResult[];
  death?: ThreadDeath;
  /** Set when stopWhen stopped the pool: the result that stopped it, and the jobs never handed out, in queue order. */
  stopped?: { by: JobResult; notRun: Job[] };
}

/**
 * Runs jobs on worker threads, one job per thread at a time, handing the next job to whichever thread
 * finishes first. A thread that dies stops the whole pool: the remaining seeds would be judged by a
 * harness that is known to be broken, so the run ends at once with exit 3 instead. With stopWhen
 * (--bail) the pool stops handing out jobs after the first result it picks, lets the running ones
 * finish, and returns the rest unrun.
 */
export function runPool(jobs: readonly Job[], options: PoolOptions): Promise<PoolOutcome> {
  return new Promise((resolve) => {
    const results: JobResult[] = [];
    const queue = [...jobs];
    const inFlight = new Map<Worker, Job | undefined>();
    let finished = false;
    let stopped: PoolOutcome['stopped'];

    const finish = (death?: ThreadDeath) => {
      if (finished) return;
      finished = true;
      const stopping = [...inFlight.keys()].map((worker) => worker.terminate());
      void Promise.allSettled(stopping).then(() => resolve({ results, ...(death === undefined ? {} : { death }), ...(stopped === undefined ? {} : { stopped }) }));
    };
    const feed = (worker: Worker) => {
      const job = queue.shift();
      inFlight.set(worker, job);
      if (job !== undefined) worker.postMessage({ type: 'job', job } satisfies ToWorker);
      else if ([...inFlight.values()].every((pending) => pending === undefined)) finish();
    };

    const threads = Math.max(1, Math.min(options.threads, jobs.length));
    if (jobs.length === 0) return resolve({ results });
    for (let threadIndex = 0; threadIndex < threads; threadIndex++) {
      const setup: WorkerSetup = {
        scenarios: options.scenarios,
        ...(options.digest === undefined ? {} : { digest: options.digest }),
        ...(options.store === undefined ? {} : { store: options.store }),
        ...(options.agent === undefined ? {} : { agent: options.agent }),
      };
      const worker = new Worker(BOOTSTRAP, { workerData: setup, execArgv: execArgvWithoutTsx(process.execArgv) });
      inFlight.set(worker, undefined);
      worker.on('message', (message: FromWorker) => {
        if (finished || message.type !== 'result') return;
        results.push(message.result);
        options.onResult(message.result);
        // Jobs leave the queue in order, so every job planned before the one that stopped the pool has run or is running.
        if (stopped === undefined && options.stopWhen?.(message.result) === true) stopped = { by: message.result, notRun: queue.splice(0) };
        feed(worker);
      });
      const died = (error: string) => {
        if (!finished) finish({ threadIndex, job: inFlight.get(worker), error });
      };
      // An error of a class the thread boundary does not carry (better-sqlite3's SqliteError) arrives as a plain object: show its stack or message, not [object Object].
      worker.on('error', (error: unknown) => died(describeThreadError(error)));
      worker.on('exit', (code) => died(`the thread exited with code ${code}`));
      feed(worker);
    }
  });
}

/**
 * The parent's Node flags minus tsx's own: the bootstrap registers tsx in the thread, and a second
 * copy of the loader inherited from `tsx`/`--import tsx` would only transform every file twice.
 */
export function execArgvWithoutTsx(execArgv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let index = 0; index < execArgv.length; index++) {
    const flag = execArgv[index] as string;
    const [name, inlineValue] = flag.split(/=(.*)/s, 2) as [string, string | undefined];
    const loads = ['--import', '--require', '-r', '--loader', '--experimental-loader'].includes(name);
    if (!loads) {
      kept.push(flag);
      continue;
    }
    const value = inlineValue ?? execArgv[index + 1] ?? '';
    if (inlineValue === undefined) index++;
    if (!/(^|[\\/])tsx([\\/]|$)/.test(value)) kept.push(...(inlineValue === undefined ? [flag, value] : [flag]));
  }
  return kept;
}

function describeThreadError(error: unknown): string {
  if (error instanceof Error) return error.stack ?? error.message;
  if (typeof error === 'object' && error !== null) {
    const { stack, message, name } = error as { stack?: unknown; message?: unknown; name?: unknown };
    if (typeof stack === 'string') return stack;
    if (typeof message === 'string') return typeof name === 'string' ? `${name}: ${message}` : message;
  }
  return String(error);
}
