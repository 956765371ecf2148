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
import { runWorkerProcess, messageOf } from './worker-process-run.ts';
import { EXIT_SOFTWARE, type ChildMessage, type DrainMessage, type StartMessage } from './worker-protocol.ts';

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
    const io = {
      send,
      drainRequested: () => drainRequested,
      onDrainRequest: (drain: () => void) => {
        requestDrain = () => {
          drainRequested = true;
          drain();
        };
      },
    };
    void runWorkerProcess(message, io).then(finish, (error: unknown) => {
      process.stderr.write(`worker-process: ${messageOf(error)}\n`);
      void finish(EXIT_SOFTWARE);
    });
  });
}
