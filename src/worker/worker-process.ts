/**
 * The entry script of one supervised worker process (SPEC W3), forked by the Supervisor
 * (src/worker/supervisor.ts) with an IPC channel; it is not meant to be started by hand. The supervisor
 * sends one `start` message (the worker id it chose, the database, the agent module, the options); the
 * process loads the agent module, opens the queue and runs the production Worker until told to stop.
 *
 * SIGTERM or SIGINT, or the supervisor going away (the IPC channel closes), drains (R8): the worker
 * stops claiming, lets its runs finish for up to drainMs, hands the rest back `interrupted`, closes the
 * queue and exits 0. Exit 78 (EX_CONFIG) means the agent module did not load or build, which a restart
 * will not mend; the supervisor is told why first. Exit 70 (EX_SOFTWARE) means the worker loop failed.
 */
import { SystemClock } from '../adapters/clock.ts';
import { CryptoRandom } from '../adapters/random.ts';
import { TimerWaiter } from '../adapters/waiter.ts';
import { RetryableStoreError } from '../queue/errors.ts';
import type { WorkQueue } from '../queue/types.ts';
import { openWorkQueue } from '../work-queue.ts';
import { buildAgent, loadAgentModule, productionAgentEnv } from './agent.ts';
import { Worker } from './worker.ts';
import { EXIT_AGENT_MODULE, EXIT_DRAINED, EXIT_SOFTWARE, type ChildMessage, type DrainMessage, type StartMessage } from './worker-protocol.ts';

function send(message: ChildMessage): void {
  // The channel may already be gone (the supervisor died); the process then drains on 'disconnect'.
  if (process.connected) process.send?.(message);
}

/**
 * Ends the process with `code` once the messages sent so far have left: an agent's client may hold a
 * socket open, so the process does not wait to run out of work by itself.
 */
async function finish(code: number): Promise<never> {
  if (process.connected) await new Promise<void>((resolve) => process.send?.({ type: 'bye', code } satisfies ChildMessage, () => resolve()) ?? resolve());
  process.exit(code);
}

/** Set when a drain was asked for (SIGTERM, SIGINT, a drain message, the supervisor gone) before the worker ran. */
let drainRequested = false;
let requestDrain = (): void => {
  drainRequested = true;
};

async function main(start: StartMessage): Promise<never> {
  const clock = new SystemClock();
  const random = new CryptoRandom();
  const waiter = new TimerWaiter();
  let parts;
  try {
    const definition = await loadAgentModule(start.agent);
    parts = buildAgent(definition, productionAgentEnv(definition, { clock, random }, start.agent), start.agent);
  } catch (error) {
    send({ type: 'fatal', phase: 'load', message: messageOf(error) });
    return finish(EXIT_AGENT_MODULE);
  }
  // Told to stop while loading: nothing was claimed, so there is nothing to drain.
  if (drainRequested) return finish(EXIT_DRAINED);
  // W2: a database that is busy when the process opens it (another process holds the lock, say one
  // stopped mid-transaction) is waited out with capped, jittered backoff, as a run waits out store
  // trouble; anything else (a file that is no database, a newer schema, bad options) ends the process.
  let queue: WorkQueue | undefined;
  for (let attempt = 1, waitMs = 100; queue === undefined; attempt++) {
    try {
      queue = openWorkQueue({ db: start.db, clock, random, config: start.config, ...(start.schema === undefined ? {} : { schema: start.schema }) });
    } catch (error) {
      if (!(error instanceof RetryableStoreError)) {
        send({ type: 'fatal', phase: 'run', message: `opening the queue failed: ${messageOf(error)}` });
        return finish(EXIT_SOFTWARE);
      }
      if (drainRequested) return finish(EXIT_DRAINED);
      const delayMs = Math.ceil(waitMs * (0.5 + random.next() / 2));
      send({ type: 'log', line: `opening the queue: the database refused it (${error.code}), attempt ${attempt}; retrying in ${delayMs} ms` });
      await waiter.sleep(delayMs);
      waitMs = Math.min(5_000, waitMs * 2);
    }
  }
  const worker = new Worker({
    ...start.worker,
    queue,
    workerId: start.workerId,
    model: parts.model,
    tools: parts.tools,
    clock,
    waiter,
    log: (line) => send({ type: 'log', line: `${line.taskId === undefined ? '' : `task ${line.taskId} gen ${line.generation}: `}${line.message}` }),
    onOutcome: (outcome) => send({ type: 'outcome', outcome }),
  });
  let draining: Promise<void> | undefined;
  const drain = (): Promise<void> =>
    (draining ??= (async () => {
      const interrupted = await worker.drain(start.drainMs);
      send({ type: 'drained', interrupted });
    })());
  requestDrain = () => void drain();
  send({ type: 'ready', workerId: start.workerId });
  let code = EXIT_DRAINED;
  try {
    await worker.runLoop();
    await drain();
  } catch (error) {
    // The loop itself failed (not a run: a run's failure is an outcome). Its runs stop with the process
    // and their leases lapse; the supervisor sees the exit and restarts it.
    send({ type: 'fatal', phase: 'run', message: `the worker loop failed: ${messageOf(error)}` });
    code = EXIT_SOFTWARE;
  }
  await queue.close().catch(() => {});
  return finish(code);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

if (process.send === undefined) {
  process.stderr.write('worker-process: this is the entry script of a supervised worker process; start workers with `leasehold work` or the Supervisor\n');
  process.exitCode = 64;
} else {
  // Installed before the agent module is loaded (the slow part), so a stop during that load is a clean exit.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => requestDrain());
  process.on('disconnect', () => requestDrain());
  let started = false;
  process.on('message', (message: StartMessage | DrainMessage) => {
    if (message.type === 'drain') return requestDrain();
    if (started) return;
    started = true;
    void main(message).catch((error: unknown) => {
      process.stderr.write(`worker-process: ${messageOf(error)}\n`);
      void finish(EXIT_SOFTWARE);
    });
  });
}
