/**
 * The operator's views and the dashboard at their edges: tenants with no waiting work, several uncertain
 * tasks (one with a cancel pending), per-tenant budgets and a session's deferral, a run its total budget
 * ended, short rows and odd values in a table, requests with no Host, token or content type, a dashboard
 * on IPv6 or with extra host names, and the same reads over a PostgreSQL schema.
 */
import { connect } from 'node:net';
import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { InputError } from '../queue/errors.ts';
import type { WorkQueue } from '../queue/types.ts';
import { dropSchema, freshSchemaName, PG_URL } from '../store/__test-helpers__/pg-test-store.ts';
import { openWorkQueue } from '../work-queue.ts';
import { OpsError } from './errors.ts';
import { inputErrorOf, readStatus, readTask, readTasks } from './model.ts';
import { describeDb, openOpsQueue } from './open.ts';
import { createOpsHandler, startOpsServer, type RunningOpsServer } from './server.ts';
import { renderTable, safeText } from './table.ts';
import { formatStatus, formatTask } from './text.ts';

const PLAIN = { width: Number.POSITIVE_INFINITY, color: false };
const opened: WorkQueue[] = [];
const servers: RunningOpsServer[] = [];
const plainServers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const server of plainServers.splice(0)) await new Promise((resolve) => server.close(resolve));
  for (const queue of opened.splice(0)) await queue.close();
});

function memoryQueue(config: Parameters<typeof openWorkQueue>[0]['config'] = {}) {
  const clock = { t: 1_000_000, now: () => clock.t };
  const queue = openWorkQueue({ db: ':memory:', clock, config });
  opened.push(queue);
  return { queue, clock };
}

async function enqueued(queue: WorkQueue, tenant: string, topic: string, extra: { version?: number; needs?: Record<string, number> } = {}): Promise<number> {
  const answer = await queue.enqueue({ tenant, topic, version: extra.version ?? 1, priority: 5, input: {}, ...(extra.needs === undefined ? {} : { needs: extra.needs }) });
  if (!answer.ok) throw new Error(answer.message);
  return answer.taskId;
}

async function claimed(queue: WorkQueue, worker: string) {
  const answer = await queue.claim(worker);
  if (!answer.ok) throw new Error(`claim by ${worker}: ${answer.reason}`);
  return answer.task;
}

/**
 * Tenant zeta: a session whose first version runs out its lease (uncertain) while its second waits
 * (DEFER session_busy); beta: two tasks gone uncertain, one with a cancel pending, nothing waiting;
 * aaa: paused with no work at all (its row comes last from the pauses and sorts first).
 */
async function edgeQueue() {
  const { queue, clock } = memoryQueue({ maxAttempts: 3, globalLimit: 8, perTenantLimit: 4, sessionPolicy: 'serial', budgets: { slots: { kind: 'concurrency', limit: 5, scope: 'tenant' } } });
  const zetaV1 = await enqueued(queue, 'zeta', 's', { needs: { slots: 1 } });
  await claimed(queue, 'w-zeta');
  const beta1 = await enqueued(queue, 'beta', 'u1');
  const beta2 = await enqueued(queue, 'beta', 'u2');
  await claimed(queue, 'w-beta-1');
  await claimed(queue, 'w-beta-2');
  const zetaV2 = await enqueued(queue, 'zeta', 's', { version: 2, needs: { slots: 1 } });
  const deferred = await queue.claim('w-idle');
  clock.t += 31_000;
  await queue.expireLeases();
  await queue.cancel(beta2);
  await queue.pauseTenant('aaa', 'no work yet');
  return { queue, clock, deferred, ids: { zetaV1, zetaV2, beta1, beta2 } };
}

describe('status at its edges', () => {
  it('sorts tenants by name whatever order they are met in, and shows one with nothing waiting as "-"', async () => {
    const { queue, ids } = await edgeQueue();
    const status = await readStatus(queue, 'edge');
    expect(status.tenants.map(({ tenant, ready, uncertain, paused }) => [tenant, ready, uncertain, paused])).toEqual([
      ['aaa', 0, 0, true],
      ['beta', 0, 2, false],
      ['zeta', 1, 1, false],
    ]);
    expect(status.tenants.find(({ tenant }) => tenant === 'beta')?.oldestWaiting).toBeUndefined();
    expect(status.uncertain.map(({ taskId, workerId, cancelRequested, uncertainForMs }) => [taskId, workerId, cancelRequested, uncertainForMs])).toEqual([
      [ids.zetaV1, 'w-zeta', false, 1_000],
      [ids.beta1, 'w-beta-1', false, 1_000],
      [ids.beta2, 'w-beta-2', true, 1_000],
    ]);
    const text = formatStatus(status, PLAIN);
    expect(text).toMatch(/^beta +0 +0 +2 +- *$/m);
    expect(text).toMatch(new RegExp(`^ *${ids.beta2} +beta +u2 +w-beta-2 +1 +1\\.0s +requested$`, 'm'));
    expect(text).toContain('warning: 3 uncertain tasks awaiting confirmation');
  });

  it('names the tenant of a per-tenant budget and the task of a recorded decision', async () => {
    const { queue, deferred, ids } = await edgeQueue();
    expect(deferred).toMatchObject({ ok: false });
    const status = await readStatus(queue, 'edge');
    expect(status.budgets.map(({ budget, scope }) => [budget, scope])).toContainEqual(['slots', 'tenant:zeta']);
    const decision = status.recentDecisions.find(({ action }) => action === 'DEFER');
    expect(decision).toMatchObject({ reason: 'session_busy', taskId: ids.zetaV2 });
    expect(decision?.budget).toBeUndefined();
    const text = formatStatus(status, PLAIN);
    expect(text).toMatch(/^slots +tenant:zeta +concurrency +\d+ +5$/m);
    expect(text).not.toMatch(/^slots +\(global\)/m);
    expect(text).toMatch(new RegExp(`DEFER +session_busy +zeta +${ids.zetaV2}$`, 'm'));
  });

  it("shows a task's per-tenant reservation and a deferral with no budget and no retry time", async () => {
    const { queue, ids } = await edgeQueue();
    const first = await readTask(queue, ids.zetaV1);
    expect(first.reservations.map(({ scope }) => scope)).toEqual(['tenant:zeta']);
    expect(formatTask(first, PLAIN)).toMatch(/^slots +tenant:zeta +1 +1 +\d+ +held$/m);
    const second = await readTask(queue, ids.zetaV2);
    expect(second.admissionDecisions).toEqual([expect.objectContaining({ action: 'DEFER', reason: 'session_busy' })]);
    expect(second.admissionDecisions[0]?.retryAt).toBeUndefined();
    expect(formatTask(second, PLAIN)).toMatch(/^\S+Z +DEFER +session_busy *$/m);
  });
});

describe('a task ended by its total budget', () => {
  it('shows the error message the queue recorded, with no error class', async () => {
    const { queue } = memoryQueue({ budgets: { run_tokens: { kind: 'total', limit: 10, per: 'run' } } });
    const id = await enqueued(queue, 'acme', 't', { needs: { run_tokens: 10 } });
    const task = await claimed(queue, 'w');
    expect(await queue.reserve(id, 'w', task.generation, { run_tokens: 5 })).toMatchObject({ ok: false, error: 'budget' });
    const detail = await readTask(queue, id);
    expect([detail.task.state, detail.task.errorClass, detail.task.errorMessage]).toEqual(['failed', undefined, 'budget run_tokens exhausted']);
    expect(formatTask(detail, PLAIN)).toMatch(/^error +budget run_tokens exhausted$/m);
    const done = await enqueued(queue, 'acme', 'ok');
    const held = await claimed(queue, 'w2');
    await queue.complete(done, 'w2', held.generation, {});
    expect(formatTask(await readTask(queue, done), PLAIN)).not.toMatch(/^error /m);
  });
});

describe('tables and errors at their edges', () => {
  it('fills a short row with empty cells and shows a value JSON cannot write as its string', () => {
    const lines = renderTable([{ header: 'A' }, { header: 'B', align: 'right' }, { header: 'C' }], [['x'], [{ text: 'yy' }, '7', 'z']], PLAIN);
    expect(lines).toEqual(['A   B  C', 'x      ', 'yy  7  z']);
    expect(safeText(Symbol('odd'))).toBe('Symbol(odd)');
    expect(safeText(() => 1)).toBe('() => 1');
  });

  it("turns the queue's InputError into invalid_input, keeping it as the cause", () => {
    const cause = new InputError('taskId', 'expected a positive integer, got 0');
    const error = inputErrorOf(cause);
    expect(error).toBeInstanceOf(OpsError);
    expect([(error as OpsError).code, (error as OpsError).message, (error as OpsError).cause]).toEqual(['invalid_input', cause.message, cause]);
  });
});

/** Sends raw HTTP/1.0 (no Host header unless given) and resolves to the status code and the body. */
function rawRequest(port: number, host: string, lines: string[], body = ''): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, host);
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('end', () => {
      const [head = '', rest = ''] = answer.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.\d (\d{3})/.exec(head)?.[1]), body: rest });
    });
    socket.on('error', reject);
    socket.write([...lines, `content-length: ${Buffer.byteLength(body)}`, '', body].join('\r\n'));
  });
}

describe('the dashboard at its edges', () => {
  async function handlerServer(queue: WorkQueue, hosts?: readonly string[]) {
    const handler = createOpsHandler({ queue, db: 'edge', allowActions: true, token: 'tok', ...(hosts === undefined ? {} : { hosts }) });
    const server = createServer((request, response) => void handler(request, response));
    plainServers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as { port: number }).port;
  }

  it('answers to loopback names by default and to the extra names it is given, and refuses a request with no Host', async () => {
    const { queue } = memoryQueue();
    const plain = await handlerServer(queue);
    const named = await handlerServer(queue, ['Queue.Internal']);
    expect((await rawRequest(plain, '127.0.0.1', ['GET /api/status HTTP/1.0', 'host: localhost'])).status).toBe(200);
    expect((await rawRequest(plain, '127.0.0.1', ['GET /api/status HTTP/1.0', 'host: queue.internal'])).status).toBe(403);
    expect((await rawRequest(named, '127.0.0.1', ['GET /api/status HTTP/1.0', 'host: queue.internal:9'])).status).toBe(200);
    expect((await rawRequest(named, '127.0.0.1', ['GET /api/status HTTP/1.0', 'host: localhost'])).status).toBe(200);
    const bare = await rawRequest(plain, '127.0.0.1', ['GET /api/status HTTP/1.0']);
    expect([bare.status, JSON.parse(bare.body)]).toEqual([403, { error: 'forbidden', message: 'this dashboard does not answer to host ""' }]);
  });

  it('refuses an action with no token header, or no content type, changing nothing', async () => {
    const { queue } = memoryQueue();
    const id = await enqueued(queue, 'acme', 't');
    const port = await handlerServer(queue);
    const body = JSON.stringify({ taskId: id });
    const noToken = await rawRequest(port, '127.0.0.1', ['POST /api/actions/cancel HTTP/1.0', 'host: localhost', 'content-type: application/json'], body);
    expect([noToken.status, (JSON.parse(noToken.body) as { message: string }).message]).toEqual([403, expect.stringContaining('needs the token')]);
    const noType = await rawRequest(port, '127.0.0.1', ['POST /api/actions/cancel HTTP/1.0', 'host: localhost', 'x-leasehold-token: tok'], body);
    expect([noType.status, JSON.parse(noType.body)]).toEqual([400, { error: 'invalid_input', message: 'an action is a POST of application/json' }]);
    expect((await queue.get(id))?.state).toBe('ready');
    const done = await rawRequest(port, '127.0.0.1', ['POST /api/actions/cancel HTTP/1.0', 'host: localhost', 'x-leasehold-token: tok', 'content-type: application/json'], body);
    expect([done.status, (await queue.get(id))?.state]).toEqual([200, 'cancelled']);
  });

  it('on a network address, refuses an action whose Origin comes with no Host', async () => {
    const { queue } = memoryQueue();
    const id = await enqueued(queue, 'acme', 't');
    const running = await startOpsServer({ queue, db: 'edge', host: '0.0.0.0', port: 0, allowActions: true, token: 'tok' });
    servers.push(running);
    const port = Number(new URL(running.url).port);
    const answer = await rawRequest(port, '127.0.0.1', ['POST /api/actions/cancel HTTP/1.0', 'origin: http://127.0.0.1', 'x-leasehold-token: tok', 'content-type: application/json'], JSON.stringify({ taskId: id }));
    expect([answer.status, JSON.parse(answer.body)]).toEqual([403, { error: 'forbidden', message: 'cross-origin action refused (Origin "http://127.0.0.1")' }]);
    expect((await queue.get(id))?.state).toBe('ready');
  });

  it('listens on IPv6 loopback, its URL bracketed', async () => {
    const { queue } = memoryQueue();
    const running = await startOpsServer({ queue, db: 'edge', host: '::1', port: 0, allowActions: false, token: 'tok' });
    servers.push(running);
    expect(running.url).toMatch(/^http:\/\/\[::1\]:\d+\/$/);
    const status = await fetch(`${running.url}api/status`);
    expect([status.status, ((await status.json()) as { totals: { ready: number } }).totals.ready]).toEqual([200, 0]);
  });
});

describe('the same reads on PostgreSQL', () => {
  it('opens a queue in a named schema and reads what its workers wrote', async () => {
    const schema = freshSchemaName();
    const clock = { now: () => 5_000_000 };
    const writer = openWorkQueue({ db: PG_URL, schema, clock });
    try {
      await enqueued(writer, 'acme', 'pg-1');
      await enqueued(writer, 'acme', 'pg-2');
      const reader = await openOpsQueue(PG_URL, clock, schema);
      try {
        const status = await readStatus(reader, describeDb(PG_URL));
        expect([status.totals.ready, status.tenants.map(({ tenant, ready }) => [tenant, ready])]).toEqual([2, [['acme', 2]]]);
        expect((await readTasks(reader, { tenant: 'acme' })).tasks.map(({ topic }) => topic)).toEqual(['pg-2', 'pg-1']);
      } finally {
        await reader.close();
      }
    } finally {
      await writer.close();
      await dropSchema(schema);
    }
  });
});
