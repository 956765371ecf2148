/**
 * Test-only agent module (SPEC T2, W3, W4) for the supervised fleet's real-process test
 * (src/worker/supervisor.test.ts): one write tool per task whose effect goes to a provider stub through
 * `env.external('provider')`, with the tool's requestKey as the idempotency key. The stub is the
 * module's production external (`externals.provider`), so the test also exercises how a team supplies a
 * real client in place of a twin. It stands for a real provider: it keeps its records in a SQLite file
 * of its own (PROVIDER_DB), shared by every worker process, and like a real provider it executes a key
 * once and answers a repeat with the first result (W4), while counting every call it received.
 */
import Database from 'better-sqlite3';
import { defineAgent, type External } from '../../index.ts';

function providerAt(path: string, delayMs: number): External {
  const db = new Database(path, { timeout: 10_000 });
  db.pragma('journal_mode = WAL');
  db.exec(`CREATE TABLE IF NOT EXISTS executions (key TEXT PRIMARY KEY, task_id INTEGER NOT NULL, pid INTEGER NOT NULL);
           CREATE TABLE IF NOT EXISTS calls (id INTEGER PRIMARY KEY, key TEXT, task_id INTEGER NOT NULL, pid INTEGER NOT NULL)`);
  // Past the setup (once per process), no busy timeout: SQLite's busy handler sleeps synchronously, and a worker process blocked in it for
  // seconds misses its heartbeats (on a loaded machine its lease lapsed mid-drain). A real provider is
  // across a network and never blocks the worker's event loop, so the stub waits for a lock as one does:
  // asynchronously, in `execute` below.
  db.pragma('busy_timeout = 0');
  const logCall = db.prepare('INSERT INTO calls (key, task_id, pid) VALUES (?, ?, ?)');
  const execute = db.prepare('INSERT INTO executions (key, task_id, pid) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING');
  const first = db.prepare('SELECT task_id AS taskId, pid FROM executions WHERE key = ?');
  const call = db.transaction((key: string, taskId: number) => {
    logCall.run(key, taskId, process.pid);
    execute.run(key, taskId, process.pid);
    return first.get(key) as { taskId: number; pid: number };
  });
  return {
    async execute(operation, payload, options) {
      const taskId = (payload as { taskId: number }).taskId;
      if (operation !== 'record' || options?.idempotencyKey === undefined) throw new Error(`provider stub: expected record with an idempotency key, got ${operation}`);
      // A little latency, as a real provider has, so that a kill can fall between its answer and recordEffect;
      // PROVIDER_DELAY_MS makes every call slow, for the tests of a drain and of the shutdown deadline.
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs)); // allow-ambient: a test provider's latency, never a decision of the core
      else await new Promise((resolve) => setImmediate(resolve));
      for (let attempt = 0; ; attempt++) {
        try {
          return { receipt: call(options.idempotencyKey, taskId) };
        } catch (error) {
          if ((error as { code?: unknown }).code !== 'SQLITE_BUSY' || attempt >= 2_000) throw error;
          await new Promise((resolve) => setTimeout(resolve, 5)); // allow-ambient: a test provider waiting for its own file's lock
        }
      }
    },
  };
}

export default defineAgent({
  externals: {
    provider: () => {
      const path = process.env.PROVIDER_DB;
      if (path === undefined) throw new Error('PROVIDER_DB is not set');
      return providerAt(path, Number(process.env.PROVIDER_DELAY_MS ?? 0));
    },
  },
  build: (env) => ({
    model: {
      decide: async ({ step, taskId }) =>
        step === 0
          ? { toolCalls: [{ id: 'c0', tool: 'record_effect', args: { taskId } }], usage: { inputTokens: 10, outputTokens: 5 } }
          : { toolCalls: [], final: { status: 'resolved' }, usage: { inputTokens: 10, outputTokens: 5 } },
    },
    tools: [
      {
        name: 'record_effect',
        readOnly: false,
        call: (args, context) => env.external('provider').execute('record', { taskId: (args as { taskId: number }).taskId }, { idempotencyKey: context.requestKey }),
      },
    ],
  }),
});
