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
import { attachWorkerProcess } from './worker-process-run.ts';

attachWorkerProcess(process);
