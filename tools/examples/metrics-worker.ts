/**
 * A runnable example (A5): a worker process that exposes the queue's control-plane signals on
 * GET /metrics in the Prometheus text exposition format.
 *
 *   npx tsx tools/examples/metrics-worker.ts          # PORT=9464 by default
 *   curl localhost:9464/metrics
 *
 * It opens a queue on a temporary file, enqueues a few tasks for two tenants (one of them paused, so
 * its work waits), and runs a Worker whose model is a stub that answers at once. Production adapters
 * only: the system clock, real timers, the OS random source. Ctrl-C stops the worker and the server.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROMETHEUS_CONTENT_TYPE, scrapePrometheus } from '../../src/export/prometheus.ts';
import { SystemClock, TimerWaiter, Worker, openWorkQueue } from '../../src/index.ts';

const port = Number(process.env.PORT ?? 9464);
const dir = mkdtempSync(join(tmpdir(), 'leasehold-metrics-'));
const clock = new SystemClock();
const queue = openWorkQueue({ db: join(dir, 'queue.db'), clock, config: { globalLimit: 2, perTenantLimit: 1, capacity: 4, criticalHeadroom: 0 } });

await queue.pauseTenant('globex', 'example: a paused tenant waits');
for (const [tenant, topic, priority] of [
  ['acme', 'welcome-mail', 5],
  ['acme', 'weekly-report', 0],
  ['globex', 'invoice', 3],
  ['acme', 'cleanup', 0],
  ['acme', 'one-too-many', 0],
] as const) {
  const answer = await queue.enqueue({ tenant, topic, version: 1, priority, input: { text: `do ${topic}` } });
  console.log(`enqueue ${tenant}/${topic}: ${answer.ok ? `task ${answer.taskId}` : answer.error}`);
}

const worker = new Worker({
  queue,
  workerId: 'example-worker',
  model: { decide: async () => ({ toolCalls: [], final: 'done', usage: { inputTokens: 100, outputTokens: 20 } }) },
  tools: [],
  waiter: new TimerWaiter(),
  clock,
  idleWaitMs: 500,
  onOutcome: (outcome) => console.log(`run: ${JSON.stringify(outcome)}`),
});
const loop = worker.runLoop();

const server = createServer((request, response) => {
  if (request.method !== 'GET' || request.url !== '/metrics') {
    response.writeHead(404, { 'content-type': 'text/plain' }).end('try GET /metrics\n');
    return;
  }
  scrapePrometheus(queue).then(
    (text) => response.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE }).end(text),
    (error: unknown) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(error)}\n`),
  );
});
server.listen(port, () => console.log(`serving the signals on http://localhost:${port}/metrics`));

async function shutdown(): Promise<void> {
  worker.stop();
  server.close();
  await loop;
  await worker.drain(5_000);
  await queue.close();
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}
process.on('SIGINT', () => void shutdown());
process.on('SIGTERM', () => void shutdown());
