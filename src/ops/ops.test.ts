import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { MissingDependencyError } from '../queue/errors.ts';
import type { WorkQueue } from '../queue/types.ts';
import { openWorkQueue } from '../work-queue.ts';
import { runAction } from './actions.ts';
import { OPS_EXIT, OPS_HTTP_STATUS, OpsError } from './errors.ts';
import { readStatus, readTask, readTasks, parseTaskId, requireState, inputErrorOf } from './model.ts';
import { describeDb, openOpsQueue, opsErrorOf } from './open.ts';
import { APP_JS, pageHtml } from './page.ts';
import { hostName, SECURITY_HEADERS, startOpsServer, type RunningOpsServer } from './server.ts';
import { duration, fitWidths, instant, paint, renderTable, safeText, terminalStyle, wrap } from './table.ts';
import { formatDeadLetters, formatStatus, formatTask, formatTasks } from './text.ts';
import { HOSTILE, populate, type Populated } from './__test-helpers__/populated.ts';
import { ConnectionError, OpenError, BusyError } from '../queue/errors.ts';

const scratch = mkdtempSync(join(tmpdir(), 'leasehold-ops-'));
const opened: WorkQueue[] = [];
const servers: RunningOpsServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const queue of opened.splice(0)) await queue.close();
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let files = 0;
async function populated(): Promise<Populated> {
  const path = join(scratch, `q${++files}.sqlite`);
  const result = await populate(path);
  opened.push(result.queue);
  return result;
}

const PLAIN = { width: Number.POSITIVE_INFINITY, color: false };
/** No control character but the line breaks of the text itself: nothing from the database can steer a terminal. */
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

describe('tables for people', () => {
  it('fits the terminal: the width of a TTY, else COLUMNS, else unlimited; colour only on a TTY without NO_COLOR', () => {
    expect(terminalStyle({ isTTY: true, columns: 80 }, {})).toEqual({ width: 80, color: true });
    expect(terminalStyle({ isTTY: true, columns: 80 }, { NO_COLOR: '1' })).toEqual({ width: 80, color: false });
    expect(terminalStyle({ isTTY: true, columns: 80 }, { TERM: 'dumb' }).color).toBe(false);
    expect(terminalStyle({ isTTY: false }, { COLUMNS: '60' })).toEqual({ width: 60, color: false });
    expect(terminalStyle({}, { COLUMNS: 'wide' }).width).toBe(Number.POSITIVE_INFINITY);
    expect(terminalStyle({ isTTY: true, columns: 0 }, { NO_COLOR: '' })).toEqual({ width: Number.POSITIVE_INFINITY, color: true });
  });

  it('shows database values as one line of text, control characters replaced', () => {
    expect(safeText('a\u001b[31mred\nb\tc\u0007\u009b')).toBe('a\ufffd[31mred b c\ufffd\ufffd');
    expect(safeText({ a: 1 })).toBe('{"a":1}');
    expect(safeText(undefined)).toBe('');
    expect(safeText(7)).toBe('7');
  });

  it('cuts the flexible columns, widest first, down to their header, and keeps the rest', () => {
    const columns = [{ header: 'ID', align: 'right' as const }, { header: 'TENANT', flex: true }, { header: 'TOPIC', flex: true }];
    const rows = [[{ text: '1' }, { text: 'a'.repeat(30) }, { text: 'b'.repeat(20) }]];
    expect(fitWidths(columns, rows, 200)).toEqual([2, 30, 20]);
    expect(fitWidths(columns, rows, 40)).toEqual([2, 17, 17]);
    expect(fitWidths(columns, rows, 5)).toEqual([2, 6, 6]);
    const lines = renderTable(columns, [['1', 'a'.repeat(30), 'b'.repeat(20)]], { width: 40, color: false });
    expect(lines.every((line) => line.length <= 40)).toBe(true);
    expect(lines[1]).toBe(` 1  ${'a'.repeat(16)}…  ${'b'.repeat(16)}…`);
    expect(renderTable(columns, [], PLAIN)).toEqual(['ID  TENANT  TOPIC', '(none)']);
    expect(renderTable([{ header: 'S' }], [[{ text: 'x', tone: 'red' }]], { width: 80, color: true })[1]).toBe('\u001b[31mx\u001b[0m');
    expect(paint('x', 'bold', PLAIN)).toBe('x');
  });

  it('writes durations, instants and wrapped prose for people', () => {
    expect([850, 12_340, 245_000, 7_620_000, 273_600_000, -1_500, Number.NaN].map(duration)).toEqual(['850ms', '12.3s', '4m 05s', '2h 07m', '3d 04h', '-1.5s', '-']);
    expect(instant(Date.UTC(2026, 0, 2, 3, 4, 5, 678))).toBe('2026-01-02T03:04:05Z');
    expect(wrap('one two three four five six seven eight nine ten', 25, '  ')).toEqual(['  one two three four five', '  six seven eight nine', '  ten']);
    expect(wrap('short', Number.POSITIVE_INFINITY)).toEqual(['short']);
  });
});

describe('opening the queue an operator names', () => {
  it('refuses what is not a queue file, with the code and exit code that say why', async () => {
    const text = join(scratch, 'notes.txt');
    writeFileSync(text, 'not a database');
    const cases: [string, string][] = [
      ['', 'invalid_input'],
      [':memory:', 'invalid_input'],
      [join(scratch, 'missing.sqlite'), 'missing_database'],
      [scratch, 'missing_database'],
      [text, 'cannot_open'],
      ['postgres://postgres@127.0.0.1:1/nothing', 'unreachable'],
    ];
    for (const [db, code] of cases) {
      const error = await openOpsQueue(db, { now: () => 0 }).catch((thrown: unknown) => thrown);
      expect(error, db).toBeInstanceOf(OpsError);
      expect((error as OpsError).code, db).toBe(code);
    }
    expect(OPS_EXIT).toMatchObject({ missing_database: 66, cannot_open: 66, unreachable: 69, refused: 65, invalid_input: 64 });
  });

  it('opens a queue file and reads it', async () => {
    const { queue } = await populated();
    const path = join(scratch, `q${files}.sqlite`);
    await queue.close();
    const again = await openOpsQueue(path, { now: () => 0 });
    opened.push(again);
    expect(await again.liveCount()).toBe(5);
  });

  it('hides a URL password and maps store errors, leaving anything else alone', () => {
    expect(describeDb('postgres://app:secret@db:5432/prod')).toBe('postgres://app:***@db:5432/prod');
    expect(describeDb('postgres://db/prod')).toBe('postgres://db/prod');
    expect(describeDb('postgres://[bad')).toBe('postgres://(malformed URL)');
    expect(describeDb('q.sqlite')).toBe('q.sqlite');
    expect((opsErrorOf(new OpenError('x', 'newer_schema', 'newer'), 'x') as OpsError).code).toBe('cannot_open');
    expect((opsErrorOf(new ConnectionError('read', 'connection_lost', { sqlState: undefined, message: 'gone', maybeCommitted: false, attempts: 1 }), 'x') as OpsError).code).toBe('unreachable');
    expect((opsErrorOf(new BusyError('read', 3), 'x') as OpsError).code).toBe('unreachable');
    const known = new OpsError('refused', 'no');
    expect(opsErrorOf(known, 'x')).toBe(known);
    const other = new TypeError('bug');
    expect(opsErrorOf(other, 'x')).toBe(other);
    expect(inputErrorOf(other)).toBe(other);
  });
});

describe('what an operator reads', () => {
  it('status: depth per tenant and state equal to signals(), uncertain ages, pauses, budgets, alerts, decisions', async () => {
    const { queue, ids } = await populated();
    const status = await readStatus(queue, 'q.sqlite');
    const signals = await queue.signals();
    expect(status.totals).toEqual({ ready: 3, running: 1, uncertain: 1, deadLetters: 1, pausedTenants: 1 });
    expect(status.totals.ready).toBe(signals.depth.reduce((sum, { n }) => sum + n, 0));
    expect(status.totals.running).toBe(signals.leases.length);
    expect(status.totals.uncertain).toBe(signals.awaitingReconciliation);
    expect(status.tenants.map(({ tenant, ready, running, uncertain, paused }) => [tenant, ready, running, uncertain, paused])).toEqual([
      ['acme', 1, 0, 1, false],
      ['globex', 1, 0, 0, false],
      ['initech', 1, 1, 0, true],
    ]);
    expect(status.tenants[0]?.oldestWaiting).toEqual({ taskId: ids.ready, waitedMs: signals.oldestWaiting[0]!.waitedMs });
    expect(status.uncertain).toEqual([{ taskId: ids.uncertain, tenant: 'acme', topic: 'order-1', workerId: 'w-uncertain', generation: 1, attempts: 1, uncertainForMs: 7_000, cancelRequested: false }]);
    expect(status.alerts.map(({ level }) => level)).toEqual(['warning', 'warning', 'warning']);
    expect(status.budgets.map(({ budget }) => budget)).toEqual(['model_tokens']);
    expect(status.recentDecisions[0]).toMatchObject({ action: 'PAUSE', tenant: 'initech' });
    expect(status.limits.live).toBe(5);

    const text = formatStatus(status, { width: 72, color: false });
    expect(text.split('\n').every((line) => line.length <= 72)).toBe(true);
    expect(text).toContain('uncertain 1,');
    expect(formatStatus(status, { width: 100, color: true })).toContain('\u001b[1mTenants\u001b[0m');
  });

  it('status of an empty queue: no alerts; the stuck alert is critical when it fires', async () => {
    let now = 0;
    const queue = openWorkQueue({ db: ':memory:', clock: { now: () => now } });
    opened.push(queue);
    const empty = await readStatus(queue, ':memory:');
    expect(empty.alerts).toEqual([]);
    expect(formatStatus(empty, PLAIN)).toContain('none');
    await queue.enqueue({ tenant: 'acme', topic: 't', version: 1, priority: 1, input: {} });
    now += 11 * 60_000;
    const stuck = await readStatus(queue, ':memory:');
    expect(stuck.alerts[0]).toMatchObject({ level: 'critical' });
    expect(formatStatus(stuck, { width: 80, color: true })).toContain('\u001b[31m');
  });

  it('tasks: by tenant, state and topic, newest first, limited, and refuses a bad filter', async () => {
    const { queue, ids } = await populated();
    expect((await readTasks(queue, {})).total).toBe(10);
    expect((await readTasks(queue, { state: 'failed' })).tasks.map(({ id }) => id)).toEqual([ids.dead, ids.failed]);
    expect((await readTasks(queue, { tenant: 'acme', state: 'ready' })).tasks.map(({ id }) => id)).toEqual([ids.ready]);
    expect((await readTasks(queue, { tenant: 'initech', topic: 'ticket-2' })).tasks.map(({ state }) => state)).toEqual(['ready', 'superseded']);
    const limited = await readTasks(queue, { limit: 2 });
    expect([limited.total, limited.tasks.length]).toEqual([10, 2]);
    expect(formatTasks(limited, PLAIN)).toContain('2 of 10 tasks');
    expect(formatTasks(await readTasks(queue, { state: 'running' }), PLAIN)).toContain('1 task');
    const hostile = formatTasks(await readTasks(queue, {}), { width: 90, color: true });
    expect(hostile.split('\n').every((line) => !CONTROL.test(line.replace(/\u001b\[\d+m/g, '')))).toBe(true);
    for (const filter of [{ state: 'sleeping' }, { limit: 0 }, { limit: 10_001 }, { tenant: '' }, { topic: 3 as unknown as string }]) {
      await expect(readTasks(queue, filter)).rejects.toMatchObject({ code: 'invalid_input' });
    }
    expect(requireState('done')).toBe('done');
  });

  it('task: events, checkpoint, effects, reservations, decisions and dead letter, as text', async () => {
    const { queue, ids } = await populated();
    const done = await readTask(queue, String(ids.done));
    expect(done.events.map(({ type }) => type)).toEqual(['enqueued', 'claimed', 'checkpoint', 'effect_recorded', 'completed'].filter((type) => done.events.some((event) => event.type === type)));
    expect(done.lastCheckpoint).toMatchObject({ kind: 'B', step: 1 });
    expect(done.effects).toHaveLength(1);
    expect(done.reservations).toHaveLength(1);
    const text = formatTask(done, PLAIN);
    expect(text).toContain('Task 3');
    expect(text).toContain('B step 1');
    const dead = await readTask(queue, ids.dead);
    expect(dead.deadLetter?.reason).toBe('attempts_exhausted');
    expect(formatTask(dead, { width: 80, color: true })).toContain('dead letter');
    const failed = formatTask(await readTask(queue, ids.failed), PLAIN);
    expect(failed).toContain('business_error');
    expect(formatTask(await readTask(queue, ids.running), PLAIN)).toContain('lease until');
    await queue.cancel(ids.running);
    expect(formatTask(await readTask(queue, ids.running), PLAIN)).toContain('requested');
    const deferred = await readTask(queue, ids.superseded);
    expect(formatTask(deferred, PLAIN)).toContain('superseded');
    await expect(readTask(queue, '999')).rejects.toMatchObject({ code: 'not_found' });
    for (const id of ['0', '-1', '1.5', 'abc', '', '99999999999999999', 0]) await expect(readTask(queue, id)).rejects.toMatchObject({ code: 'invalid_input' });
    expect(parseTaskId(7)).toBe(7);
    expect(formatDeadLetters(await queue.deadLetters(), PLAIN)).toContain('1 dead letter; run one again');
    expect(formatDeadLetters([], PLAIN)).toContain('0 dead letters');
  });

  it('shows budget decisions with their budget and retry time', async () => {
    let now = 0;
    const queue = openWorkQueue({ db: ':memory:', clock: { now: () => now }, config: { budgets: { tokens: { kind: 'rate', capacity: 10, refill: 10, periodMs: 60_000 } } } });
    opened.push(queue);
    const first = await queue.enqueue({ tenant: 'a', topic: 't1', version: 1, priority: 1, input: {}, needs: { tokens: 10 } });
    await queue.enqueue({ tenant: 'b', topic: 't2', version: 1, priority: 1, input: {}, needs: { tokens: 10 } });
    await queue.claim('w1');
    await queue.claim('w2');
    const blocked = (await queue.admissionDecisions()).find((decision) => decision.action === 'DEFER');
    expect(blocked?.retryAt).toBeGreaterThan(0);
    const detail = await readTask(queue, blocked!.taskId!);
    expect(formatTask(detail, PLAIN)).toMatch(/rate_limited \(tokens\)/);
    expect(first.ok).toBe(true);
  });
});

describe('what an operator does', () => {
  it('runs each action through the queue API and says what happened', async () => {
    const { queue, ids } = await populated();
    expect(await runAction(queue, { action: 'confirm-stopped', taskId: String(ids.uncertain), generation: '1' })).toMatchObject({ message: `task ${ids.uncertain} generation 1 confirmed stopped: now failed` });
    expect((await queue.events(ids.uncertain)).at(-1)?.data).toMatchObject({ source: 'operator' });
    expect((await runAction(queue, { action: 'cancel', taskId: ids.ready })).message).toBe(`task ${ids.ready} cancelled`);
    expect((await runAction(queue, { action: 'cancel', taskId: ids.running })).message).toContain('cancel requested');
    expect((await runAction(queue, { action: 'pause', tenant: 'acme', reason: 'audit' })).message).toBe('tenant acme paused');
    expect((await runAction(queue, { action: 'pause', tenant: 'acme', reason: 'audit' })).message).toContain('already paused');
    expect((await runAction(queue, { action: 'resume', tenant: 'acme' })).message).toBe('tenant acme resumed');
    expect((await runAction(queue, { action: 'resume', tenant: 'acme' })).message).toContain('already resumed');
    expect((await runAction(queue, { action: 'redrive', taskId: ids.dead })).result).toEqual({ ok: true, state: 'ready' });
  });

  it('refuses with a typed error and changes nothing', async () => {
    const { queue, ids } = await populated();
    const before = JSON.stringify([await queue.snapshot(), await queue.allEvents(), await queue.pausedTenants()]);
    const refusals: [Parameters<typeof runAction>[1], string, string?][] = [
      [{ action: 'confirm-stopped', taskId: ids.uncertain, generation: 2 }, 'refused', 'stale_generation'],
      [{ action: 'confirm-stopped', taskId: ids.ready, generation: 0 }, 'refused', 'not_uncertain'],
      [{ action: 'confirm-stopped', taskId: 999, generation: 1 }, 'not_found', 'not_found'],
      [{ action: 'confirm-stopped', taskId: ids.uncertain, generation: 'one' }, 'invalid_input'],
      [{ action: 'confirm-stopped', taskId: ids.uncertain, generation: -1 }, 'invalid_input'],
      [{ action: 'cancel', taskId: ids.done }, 'refused', 'already_terminal'],
      [{ action: 'cancel', taskId: 999 }, 'not_found', 'not_found'],
      [{ action: 'cancel', taskId: 'x' }, 'invalid_input'],
      [{ action: 'redrive', taskId: ids.done }, 'refused', 'not_dead_lettered'],
      [{ action: 'redrive', taskId: 999 }, 'not_found'],
      [{ action: 'pause', tenant: '', reason: 'r' }, 'invalid_input'],
      [{ action: 'pause', tenant: 'acme', reason: ' ' }, 'invalid_input'],
      [{ action: 'resume', tenant: 42 }, 'invalid_input'],
      [{ action: 'explode' } as never, 'invalid_input'],
    ];
    for (const [request, code, queueError] of refusals) {
      const error = await runAction(queue, request).catch((thrown: unknown) => thrown);
      expect(error, JSON.stringify(request)).toBeInstanceOf(OpsError);
      expect([(error as OpsError).code, (error as OpsError).queueError]).toEqual([code, queueError]);
    }
    expect(JSON.stringify([await queue.snapshot(), await queue.allEvents(), await queue.pausedTenants()])).toBe(before);
    expect(new OpsError('refused', 'no', { queueError: 'x' }).toJSON()).toEqual({ error: 'refused', message: 'no', queueError: 'x' });
    expect(OPS_HTTP_STATUS.forbidden).toBe(403);
  });

  it('turns a pause the queue refuses into invalid_input', async () => {
    const queue = openWorkQueue({ db: ':memory:', clock: { now: () => 0 } });
    opened.push(queue);
    const refusing = new Proxy(queue, { get: (target, name) => (name === 'pauseTenant' ? async () => ({ ok: false, error: 'invalid_input', field: 'reason', message: 'reason too long' }) : Reflect.get(target, name)) });
    await expect(runAction(refusing, { action: 'pause', tenant: 'a', reason: 'b' })).rejects.toMatchObject({ code: 'invalid_input', queueError: 'invalid_input' });
  });
});

/** A GET of /api/status with a Host header of our choosing (fetch always sends the URL's). */
function getWithHost(url: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const target = new URL('api/status', url);
    const request = httpRequest({ host: target.hostname, port: target.port, path: target.pathname, headers: { host } }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('error', reject);
    request.end();
  });
}

describe('the dashboard over HTTP', () => {
  async function serve(queue: WorkQueue, options: { allowActions?: boolean; renderMetrics?: (s: unknown) => Promise<string>; timeline?: boolean; host?: string } = {}) {
    const running = await startOpsServer({
      queue,
      db: 'q.sqlite',
      host: options.host ?? '127.0.0.1',
      port: 0,
      allowActions: options.allowActions ?? false,
      token: 'secret-token',
      ...(options.timeline === false ? {} : { timeline: (task) => `<svg xmlns="http://www.w3.org/2000/svg"><title>${task.id}</title></svg>` }),
      ...(options.renderMetrics === undefined ? {} : { renderMetrics: options.renderMetrics }),
    });
    servers.push(running);
    return running;
  }
  const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-leasehold-token': 'secret-token', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });

  it('serves the pages, the JSON API and the timeline with its security headers', async () => {
    const { queue, ids } = await populated();
    const { url } = await serve(queue);
    const page = await fetch(url);
    expect(page.status).toBe(200);
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(page.headers.get(name)).toBe(value);
    expect(await page.text()).toContain('<script src="/app.js" defer></script>');
    for (const path of ['dead-letters', `task/${ids.done}`]) expect((await fetch(url + path)).status).toBe(200);
    expect(await (await fetch(`${url}app.js`)).text()).toBe(APP_JS);
    expect((await fetch(`${url}app.css`)).headers.get('content-type')).toContain('text/css');
    const status = (await (await fetch(`${url}api/status`)).json()) as { totals: unknown; actions: boolean };
    expect(status).toMatchObject({ totals: { ready: 3, running: 1, uncertain: 1 }, actions: false });
    expect(((await (await fetch(`${url}api/tasks?tenant=acme&state=ready&topic=order-3&limit=5`)).json()) as { total: number }).total).toBe(1);
    expect((await fetch(`${url}api/tasks?limit=x`)).status).toBe(400);
    expect((await fetch(`${url}api/tasks?state=nope`)).status).toBe(400);
    const detail = (await (await fetch(`${url}api/task/${ids.failed}`)).json()) as { task: { tenant: string } };
    expect(detail.task.tenant).toBe(HOSTILE);
    const svg = await fetch(`${url}api/task/${ids.done}/timeline.svg`);
    expect([svg.status, svg.headers.get('content-type'), await svg.text()]).toEqual([200, 'image/svg+xml; charset=utf-8', `<svg xmlns="http://www.w3.org/2000/svg"><title>${ids.done}</title></svg>`]);
    expect(((await (await fetch(`${url}api/dead-letters`)).json()) as { deadLetters: unknown[] }).deadLetters).toHaveLength(1);
    expect((await fetch(`${url}api/task/999`)).status).toBe(404);
    expect(await (await fetch(`${url}api/task/abc`)).json()).toMatchObject({ error: 'invalid_input' });
    expect((await fetch(`${url}nowhere`)).status).toBe(404);
    expect((await fetch(url, { method: 'HEAD' })).status).toBe(200);
    const wrongMethod = await fetch(`${url}api/status`, { method: 'DELETE' });
    expect([wrongMethod.status, wrongMethod.headers.get('allow')]).toEqual([405, 'GET']);
    expect((await fetch(`${url}api/actions/cancel`)).status).toBe(405);
  });

  it('draws no timeline when it has no renderer', async () => {
    const { queue, ids } = await populated();
    const { url } = await serve(queue, { timeline: false });
    expect((await fetch(`${url}api/task/${ids.done}/timeline.svg`)).status).toBe(404);
  });

  it('answers only to loopback names, unless bound to another address', async () => {
    const { queue } = await populated();
    const { url } = await serve(queue);
    const port = new URL(url).port;
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) expect((await getWithHost(url, host)).status, host).toBe(200);
    const rebound = await getWithHost(url, `evil.example:${port}`);
    expect([rebound.status, (JSON.parse(rebound.body) as { error: string }).error]).toEqual([403, 'forbidden']);
    expect([hostName(undefined), hostName('EXAMPLE.com:80'), hostName('[::1]:1'), hostName('a:b:c')]).toEqual(['', 'example.com', '[::1]', '']);
    const open = await serve(queue, { host: '0.0.0.0' });
    expect((await getWithHost(`http://127.0.0.1:${new URL(open.url).port}/`, 'queue.internal')).status).toBe(200);
  });

  it('is read-only unless actions are allowed', async () => {
    const { queue, ids } = await populated();
    const { url } = await serve(queue);
    const answer = await post(`${url}api/actions/confirm-stopped`, { taskId: ids.uncertain, generation: 1 });
    expect([answer.status, ((await answer.json()) as { message: string }).message]).toEqual([403, expect.stringContaining('--allow-actions')]);
    expect((await queue.get(ids.uncertain))?.state).toBe('uncertain');
  });

  it('acts with the token from its own origin, and refuses every other request unchanged', async () => {
    const { queue, ids } = await populated();
    const { url } = await serve(queue, { allowActions: true });
    const origin = url.slice(0, -1);
    const before = JSON.stringify(await queue.allEvents());
    const refused: [Response, number][] = [
      [await post(`${url}api/actions/confirm-stopped`, { taskId: ids.uncertain, generation: 1 }, { 'x-leasehold-token': '' }), 403],
      [await post(`${url}api/actions/confirm-stopped`, { taskId: ids.uncertain, generation: 1 }, { 'x-leasehold-token': 'secret-tokem' }), 403],
      [await post(`${url}api/actions/confirm-stopped`, { taskId: ids.uncertain, generation: 1 }, { origin: 'http://evil.example' }), 403],
      [await post(`${url}api/actions/confirm-stopped`, { taskId: ids.uncertain, generation: 1 }, { 'sec-fetch-site': 'cross-site' }), 403],
      [await post(`${url}api/actions/confirm-stopped`, { taskId: ids.uncertain, generation: 1 }, { 'content-type': 'text/plain' }), 400],
      [await post(`${url}api/actions/confirm-stopped`, '{not json', { origin }), 400],
      [await post(`${url}api/actions/confirm-stopped`, '[1]'), 400],
      [await post(`${url}api/actions/confirm-stopped`, { taskId: ids.uncertain, pad: 'x'.repeat(20_000) }), 400],
      [await post(`${url}api/actions/explode`, {}), 404],
      [await post(`${url}api/actions/confirm-stopped`, { taskId: ids.uncertain, generation: 5 }), 409],
      [await post(`${url}api/actions/confirm-stopped`, { taskId: 999, generation: 1 }), 404],
      [await post(`${url}api/actions/confirm-stopped`, { taskId: '<script>', generation: 1 }), 400],
    ];
    for (const [response, status] of refused) {
      expect(response.status).toBe(status);
      expect(Object.keys((await response.json()) as object)).toContain('error');
    }
    expect(JSON.stringify(await queue.allEvents())).toBe(before);
    const done = await post(`${url}api/actions/confirm-stopped`, { taskId: ids.uncertain, generation: 1 }, { origin, 'sec-fetch-site': 'same-origin' });
    expect([done.status, await done.json()]).toEqual([200, expect.objectContaining({ action: 'confirm-stopped', result: { ok: true, next: 'failed' } })]);
    expect((await queue.events(ids.uncertain)).at(-1)?.data).toMatchObject({ source: 'operator (dashboard)' });
  });

  it('serves /metrics through the Prometheus exporter, and a clear 501 without prom-client', async () => {
    const { queue } = await populated();
    const { url } = await serve(queue);
    const metrics = await fetch(`${url}metrics`);
    expect(metrics.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(await metrics.text()).toMatch(/^leasehold_awaiting_reconciliation 1$/m);
    const without = await serve(queue, { renderMetrics: () => Promise.reject(new MissingDependencyError('Prometheus text (renderPrometheus)', ['prom-client'])) });
    const missing = await fetch(`${without.url}metrics`);
    expect([missing.status, await missing.text()]).toEqual([501, expect.stringContaining('npm install prom-client')]);
    const broken = await serve(queue, { renderMetrics: () => Promise.reject(new TypeError('exporter bug')) });
    const crashed = await fetch(`${broken.url}metrics`);
    expect([crashed.status, await crashed.json()]).toEqual([500, { error: 'internal', message: 'TypeError: exporter bug' }]);
    const thrown = await serve(queue, { renderMetrics: () => Promise.reject('plain') });
    expect(await (await fetch(`${thrown.url}metrics`)).json()).toEqual({ error: 'internal', message: 'plain' });
  });

  it('answers 503 with the reason when the database stops answering', async () => {
    const { queue } = await populated();
    const failing = new Proxy(queue, { get: (target, name) => (name === 'signals' ? () => Promise.reject(new BusyError('signals', 3)) : Reflect.get(target, name)) });
    const { url } = await serve(failing);
    const answer = await fetch(`${url}api/status`);
    expect([answer.status, ((await answer.json()) as { error: string }).error]).toEqual([503, 'unreachable']);
  });

  it('refuses a port already taken', async () => {
    const { queue } = await populated();
    const first = await serve(queue);
    await expect(startOpsServer({ queue, db: 'q', host: '127.0.0.1', port: Number(new URL(first.url).port), allowActions: false, token: 't' })).rejects.toMatchObject({ code: 'EADDRINUSE' });
  });

  it('builds its shell with no value from the database in it, and attribute text escaped', () => {
    const html = pageHtml({ actions: true, refreshMs: 1_000 });
    expect(html).toContain('data-actions="true" data-refresh="1000"');
    expect(html).not.toMatch(/<script>/);
    expect(APP_JS).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(/);
  });
});
