import { parentPort, workerData } from 'node:worker_threads';
import { runJob } from './run-job.ts';
import type { SimAgent } from '../actors/agent-module.ts';
import type { FromWorker, ToWorker, WorkerSetup } from './types.ts';

/**
 * One check thread (started through worker-bootstrap.mjs, which makes tsx load this file). It runs
 * the jobs the pool hands it, one at a time, and posts each result back.
 */
const setup = workerData as WorkerSetup;
const port = parentPort;
if (port === null) throw new Error('check-worker.ts must run in a worker thread');

// T2: the agent module, imported once per thread by its path (the check loaded it once already, so a bad module never reaches here).
let agent: Promise<SimAgent> | undefined;

port.on('message', (message: ToWorker) => {
  if (message.type !== 'job') return;
  const spec = setup.scenarios[message.job.scenario];
  if (spec === undefined) throw new Error(`check thread got a job for unknown scenario ${message.job.scenario}`);
  if (setup.agent !== undefined) agent ??= import('../actors/agent-module.ts').then((module) => module.loadSimAgent(setup.agent as string));
  void (agent ?? Promise.resolve(undefined))
    .then((loaded) => runJob(message.job, spec, setup.digest, setup.store ?? 'sqlite', loaded))
    .then((result) => port.postMessage({ type: 'result', result } satisfies FromWorker));
});
