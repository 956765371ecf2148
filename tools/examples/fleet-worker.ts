/**
 * A runnable example (SPEC P1-P3, issue 19): one worker process of a fleet that shares one PostgreSQL
 * queue. Start as many as you like, on as many hosts as reach the server; each claims under the same
 * quotas (the claim is one transaction on the server), heartbeats its leases and runs the agent loop
 * with a stub model and one read-only tool. One of them, started with --supervise, also expires
 * overdue leases and re-queues what a dead worker left (reconciliation 'auto', R5).
 *
 *   # host A (it also seeds 60 tasks; enqueue is idempotent, so seeding twice adds nothing)
 *   npx tsx tools/examples/fleet-worker.ts --db postgres://postgres@db-host:5432/test --worker a1 --seed-tasks 60 --supervise
 *   npx tsx tools/examples/fleet-worker.ts --db postgres://postgres@db-host:5432/test --worker a2
 *   # host B
 *   npx tsx tools/examples/fleet-worker.ts --db postgres://postgres@db-host:5432/test --worker b1
 *
 * Each process exits 0 once the queue has tasks and none of them has been ready, running or uncertain
 * for --idle-exit-ms (default 3000), printing what it completed; Ctrl-C drains it (R8). Production
 * adapters only.
 *
 * This example starts its worker processes by hand. In production, each host runs the shipped Supervisor
 * instead (`leasehold work --db URL --agent MODULE --processes N`, docs/workers.md). The Supervisor
 * restarts its processes, expires leases and runs the reconciler, and confirms the tasks of a process it
 * saw exit (Q11). --supervise here does only the first two: a hand-started process cannot know that
 * another one died, so the example runs under reconciliation 'auto' (R5).
 */
import { parseArgs } from 'node:util';
import { SystemClock, TimerWaiter, Worker, openWorkQueue, type Tool } from '../../src/index.ts';

const usage = 'usage: fleet-worker.ts --db postgres://... --worker ID [--seed-tasks N] [--supervise] [--slots N] [--idle-exit-ms MS]';
let values: ReturnType<typeof parse>['values'];
function parse() {
  return parseArgs({
    options: {
      db: { type: 'string', default: process.env.LEASEHOLD_PG_URL },
      worker: { type: 'string' },
      'seed-tasks': { type: 'string', default: '0' },
      supervise: { type: 'boolean', default: false },
      slots: { type: 'string', default: '2' },
      'idle-exit-ms': { type: 'string', default: '3000' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
}
try {
  values = parse().values;
} catch (error) {
  console.error(`${(error as Error).message}\n${usage}`);
  process.exit(64);
}
if (values.help) {
  console.log(usage);
  process.exit(0);
}
const db = values.db;
const workerId = values.worker;
const seedTasks = Number(values['seed-tasks']);
const slots = Number(values.slots);
const idleExitMs = Number(values['idle-exit-ms']);
if (db === undefined || !/^postgres(ql)?:\/\//.test(db) || workerId === undefined || !Number.isInteger(seedTasks) || seedTasks < 0 || !Number.isInteger(slots) || slots < 1 || !(idleExitMs > 0)) {
  console.error(usage);
  process.exit(64);
}

const clock = new SystemClock();
const waiter = new TimerWaiter();
const queue = openWorkQueue({
  db,
  clock,
  config: { globalLimit: 4, perTenantLimit: 2, leaseMs: 10_000, heartbeatMs: 2_000, reconciliation: 'auto', graceMs: 1_000 },
});

const tenants = ['acme', 'globex', 'initech'];
for (let i = 0; i < seedTasks; i++) {
  const answer = await queue.enqueue({ tenant: tenants[i % tenants.length]!, topic: `ticket-${i}`, version: 1, priority: i % 5, input: { text: `ticket ${i}` } });
  if (!answer.ok) console.error(`enqueue ticket-${i}: ${answer.error}`);
}

const lookup: Tool = { name: 'lookup_order', readOnly: true, call: async (args) => ({ found: args }) };
let completed = 0;
const worker = new Worker({
  queue,
  workerId,
  slots,
  clock,
  waiter,
  tools: [lookup],
  model: {
    decide: async ({ step, input }) =>
      step === 0
        ? { toolCalls: [{ id: 'c0', tool: 'lookup_order', args: input }], usage: { inputTokens: 200, outputTokens: 40 } }
        : { toolCalls: [], final: { status: 'resolved' }, usage: { inputTokens: 120, outputTokens: 30 } },
  },
  onOutcome: (outcome) => {
    if (outcome.kind === 'completed') completed++;
  },
});
const loop = worker.runLoop();

let stopping = false;
process.on('SIGINT', () => {
  stopping = true;
});

// The supervisor's duties (Q10, R5) and the exit test, once a second.
let idleSince: number | undefined;
while (!stopping) {
  await waiter.sleep(1_000);
  if (values.supervise) {
    await queue.expireLeases();
    await queue.reconcile();
  }
  // live: the ready, running and uncertain tasks (Q3). A queue with no task yet is waiting for its seed.
  const snapshot = await queue.snapshot();
  if (snapshot.live > 0 || snapshot.tasks.length === 0) idleSince = undefined;
  else if (idleSince === undefined) idleSince = clock.now();
  else if (clock.now() - idleSince >= idleExitMs) break;
}
const unfinished = await worker.drain(30_000);
await loop;
console.log(JSON.stringify({ worker: workerId, completed, unfinished }));
await queue.close();
