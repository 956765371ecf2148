/**
 * What one supervised worker process does (SPEC W3), apart from the process it runs in: load the agent
 * module, open the queue, run the production Worker until a drain is asked for, and say so over `io`.
 * worker-process.ts, the entry script the Supervisor forks, wires `io` to the IPC channel and the
 * process's signals and exits with the code this returns; tests run it in-process with an `io` of their
 * own. Exit codes: 0 drained (EXIT_DRAINED), 78 the agent module did not load or build, which a
 * restart will not mend (EXIT_AGENT_MODULE), 70 the queue could not be opened or the worker loop failed
 * (EXIT_SOFTWARE).
 */
import { SystemClock } from '../adapters/clock.ts';
import { CryptoRandom } from '../adapters/random.ts';
import { TimerWaiter } from '../adapters/waiter.ts';
import type { Clock, Random, Waiter } from '../ports.ts';
import { RetryableStoreError } from '../queue/errors.ts';
import type { WorkQueue } from '../queue/types.ts';
import { openWorkQueue } from '../work-queue.ts';
import { buildAgent, loadAgentModule, productionAgentEnv } from './agent.ts';
import { Worker } from './worker.ts';
import { EXIT_AGENT_MODULE, EXIT_DRAINED, EXIT_SOFTWARE, type ChildMessage, type DrainMessage, type StartMessage } from './worker-protocol.ts';

export interface WorkerProcessIo {
  send(message: ChildMessage): void;
  /** Whether a drain was asked for already (a signal, a drain message, the supervisor gone). */
  drainRequested(): boolean;
  /** Registers what a later drain request does (replacing what it did before the Worker ran). */
  onDrainRequest(drain: () => void): void;
  clock?: Clock;
  random?: Random;
  waiter?: Waiter;
}

/** Runs one worker process's life; resolves to its exit code. */
export async function runWorkerProcess(start: StartMessage, io: WorkerProcessIo): Promise<number> {
  const clock = io.clock ?? new SystemClock();
  const random = io.random ?? new CryptoRandom();
  const waiter = io.waiter ?? new TimerWaiter();
  let parts;
  try {
    const definition = await loadAgentModule(start.agent);
    parts = buildAgent(definition, productionAgentEnv(definition, { clock, random }, start.agent), start.agent);
  } catch (error) {
    io.send({ type: 'fatal', phase: 'load', message: messageOf(error) });
    return EXIT_AGENT_MODULE;
  }
  // Told to stop while loading: nothing was claimed, so there is nothing to drain.
  if (io.drainRequested()) return EXIT_DRAINED;
  const queue = await openQueue(start, io, clock, random, waiter);
  if (typeof queue === 'number') return queue;
  const worker = new Worker({
    ...start.worker,
    queue,
    workerId: start.workerId,
    model: parts.model,
    tools: parts.tools,
    clock,
    waiter,
    random,
    log: (line) => io.send({ type: 'log', line: `${line.taskId === undefined ? '' : `task ${line.taskId} gen ${line.generation}: `}${line.message}` }),
    onOutcome: (outcome) => io.send({ type: 'outcome', outcome }),
  });
  let draining: Promise<void> | undefined;
  const drain = (): Promise<void> =>
    (draining ??= (async () => {
      const interrupted = await worker.drain(start.drainMs);
      io.send({ type: 'drained', interrupted });
    })());
  io.onDrainRequest(() => void drain());
  if (io.drainRequested()) void drain();
  io.send({ type: 'ready', workerId: start.workerId });
  let code = EXIT_DRAINED;
  try {
    await worker.runLoop();
    await drain();
  } catch (error) {
    // The loop itself failed (not a run: a run's failure is an outcome). Its runs stop with the process
    // and their leases lapse; the supervisor sees the exit and restarts it.
    io.send({ type: 'fatal', phase: 'run', message: `the worker loop failed: ${messageOf(error)}` });
    code = EXIT_SOFTWARE;
  }
  await queue.close().catch(() => {});
  return code;
}

/**
 * W2: a database that is busy when the process opens it (another process holds the lock, say one
 * stopped mid-transaction) is waited out with capped, jittered backoff, as a run waits out store
 * trouble; anything else (a file that is no database, a newer schema, bad options) ends the process.
 * Resolves to the queue, or to the exit code when there is none to run.
 */
async function openQueue(start: StartMessage, io: WorkerProcessIo, clock: Clock, random: Random, waiter: Waiter): Promise<WorkQueue | number> {
  for (let attempt = 1, waitMs = 100; ; attempt++) {
    try {
      return openWorkQueue({ db: start.db, clock, random, config: start.config, ...(start.schema === undefined ? {} : { schema: start.schema }) });
    } catch (error) {
      if (!(error instanceof RetryableStoreError)) {
        io.send({ type: 'fatal', phase: 'run', message: `opening the queue failed: ${messageOf(error)}` });
        return EXIT_SOFTWARE;
      }
      if (io.drainRequested()) return EXIT_DRAINED;
      const delayMs = Math.ceil(waitMs * (0.5 + random.next() / 2));
      io.send({ type: 'log', line: `opening the queue: the database refused it (${error.code}), attempt ${attempt}; retrying in ${delayMs} ms` });
      await waiter.sleep(delayMs);
      waitMs = Math.min(5_000, waitMs * 2);
    }
  }
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** What attachWorkerProcess needs of node's process: its IPC channel, its signals, its exit. */
export interface ProcessLike {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- node's own signature
  send?: (message: any, callback: (error: Error | null) => void) => boolean;
  readonly connected?: boolean;
  on(event: 'SIGTERM' | 'SIGINT' | 'disconnect', listener: () => void): unknown;
  on(event: 'message', listener: (message: StartMessage | DrainMessage) => void): unknown;
  exit(code: number): void;
  exitCode?: number | string | undefined;
  readonly stderr: { write(text: string): unknown };
}

/**
 * Wires one worker process to its supervisor (worker-process.ts calls it with node's `process`): the
 * first `start` message runs runWorkerProcess; SIGTERM, SIGINT, a `drain` message or the supervisor going
 * away (the channel closes) drains (R8), also while the module still loads; the process exits with the
 * code once a last `bye` has left. Started by hand, without a channel, it says so and exits 64.
 */
export function attachWorkerProcess(proc: ProcessLike): void {
  if (proc.send === undefined) {
    proc.stderr.write('worker-process: this is the entry script of a supervised worker process; start workers with `leasehold work` or the Supervisor\n');
    proc.exitCode = 64;
    return;
  }
  const send = (message: ChildMessage): void => {
    // The channel may already be gone (the supervisor died); the process then drains on 'disconnect'.
    if (proc.connected === true) proc.send?.(message, () => {});
  };
  // Ends the process once the messages sent so far have left: an agent's client may hold a socket open,
  // so the process does not wait to run out of work by itself.
  const finish = async (code: number): Promise<void> => {
    if (proc.connected === true) await new Promise<void>((resolve) => proc.send?.({ type: 'bye', code } satisfies ChildMessage, () => resolve()) ?? resolve());
    proc.exit(code);
  };
  let drainRequested = false;
  let drainNow = (): void => {};
  const requestDrain = (): void => {
    drainRequested = true;
    drainNow();
  };
  // Installed before the agent module is loaded (the slow part), so a stop during that load is a clean exit.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) proc.on(signal, requestDrain);
  proc.on('disconnect', requestDrain);
  let started = false;
  proc.on('message', (message: StartMessage | DrainMessage) => {
    if (message.type === 'drain') return requestDrain();
    if (started) return;
    started = true;
    const io: WorkerProcessIo = { send, drainRequested: () => drainRequested, onDrainRequest: (drain) => (drainNow = drain) };
    void runWorkerProcess(message, io).then(finish, (error: unknown) => {
      proc.stderr.write(`worker-process: ${messageOf(error)}\n`);
      return finish(EXIT_SOFTWARE);
    });
  });
}
