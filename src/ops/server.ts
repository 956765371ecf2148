import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { MissingDependencyError } from '../queue/errors.ts';
import type { Signals, TaskEvent, TaskView, WorkQueue } from '../queue/types.ts';
import { ACTIONS, runAction, type ActionName, type OpsAction } from './actions.ts';
import { OPS_HTTP_STATUS, OpsError } from './errors.ts';
import { readStatus, readTask, readTasks } from './model.ts';
import { opsErrorOf } from './open.ts';
import { APP_CSS, APP_JS, pageHtml } from './page.ts';

/**
 * O2, O3: the dashboard over one queue: a few HTML pages that draw themselves from the JSON API
 * (/api/...), /metrics in Prometheus text, and the operator's actions as same-origin POSTs with the
 * token. Node's own http, no framework, nothing to bundle.
 *
 * Safe by default: the CLI binds it to loopback; it answers only to a Host it serves (a page on another
 * name that resolves here, DNS rebinding, is refused); actions are off unless `allowActions`, and then
 * each needs the token (header x-leasehold-token) and a POST of application/json whose Origin, when the
 * browser sends one, is this server (so another site's page can neither read nor act); every value from
 * the database reaches the page as JSON and is put into it as text (textContent), never as markup, under
 * a Content-Security-Policy that allows this server's own script and nothing inline. A bad request
 * answers 4xx with a typed JSON error and changes nothing.
 */
export interface OpsServerOptions {
  queue: WorkQueue;
  /** What --db named, shown in the header (a URL without its password). */
  db: string;
  /** Which queue configuration the queue was opened with (the --config file, or 'defaults'): shown, and in /api/status. */
  configuration?: string;
  allowActions: boolean;
  /** The secret every action must carry; printed by the CLI at start. */
  token: string;
  /** The task page's timeline as an SVG document (sim/report/live-timeline.ts); without it the page shows the events only. */
  timeline?: (task: TaskView, events: readonly TaskEvent[], at: number) => string;
  /** Renders /metrics; by default the same exporter as scrapePrometheus, loaded on first use (prom-client is optional). */
  renderMetrics?: (signals: Signals) => Promise<string>;
  /**
   * The Host names it answers to: by default loopback's only (localhost, 127.0.0.1, [::1]), so a page on
   * another name that resolves to this machine (DNS rebinding) gets nothing; 'any' for a server bound
   * to a network address, which anyone who can reach it may name as they like (the token still guards
   * every action).
   */
  hosts?: readonly string[] | 'any';
  /** How often the pages refresh, in ms (default 2000). */
  refreshMs?: number;
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]', '::1'];
const MAX_BODY = 16 * 1024;

/** Headers of every answer: no caching, no sniffing, no framing, no referrer, and only this server's script. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'cross-origin-resource-policy': 'same-origin',
};

export function createOpsHandler(options: OpsServerOptions): (request: IncomingMessage, response: ServerResponse) => Promise<void> {
  const hosts = options.hosts === 'any' ? 'any' : new Set([...LOOPBACK_NAMES, ...(options.hosts ?? [])].map((name) => name.toLowerCase()));
  const config = { actions: options.allowActions, refreshMs: options.refreshMs ?? 2_000, db: options.db, configuration: options.configuration ?? 'defaults' };
  return async (request, response) => {
    try {
      await route(request, response, options, hosts, config);
    } catch (error) {
      const known = opsErrorOf(error, options.db);
      if (known instanceof OpsError) sendJson(response, OPS_HTTP_STATUS[known.code], known.toJSON());
      else sendJson(response, 500, { error: 'internal', message: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
    }
  };
}

type PageConfig = { actions: boolean; refreshMs: number; db: string; configuration: string };

async function route(request: IncomingMessage, response: ServerResponse, options: OpsServerOptions, hosts: ReadonlySet<string> | 'any', config: PageConfig): Promise<void> {
  // A request an http.Server hands over always has its url and method (only a client's request lacks them).
  const url = new URL(request.url as string, 'http://dashboard.invalid');
  const path = url.pathname;
  if (hosts !== 'any' && !hosts.has(hostName(request.headers.host))) throw new OpsError('forbidden', `this dashboard does not answer to host ${JSON.stringify(request.headers.host ?? '')}`);
  const method = request.method as string;
  if (path.startsWith('/api/actions/')) {
    if (method !== 'POST') return methodNotAllowed(response, 'POST');
    const done = await act(request, path.slice('/api/actions/'.length), options);
    return sendJson(response, 200, done);
  }
  if (method !== 'GET' && method !== 'HEAD') return methodNotAllowed(response, 'GET');
  const { queue } = options;
  const taskPath = /^\/api\/task\/([^/]+)(\/timeline\.svg)?$/.exec(path);
  if (taskPath !== null) {
    const detail = await readTask(queue, decodeURIComponent(taskPath[1]!));
    if (taskPath[2] === undefined) return sendJson(response, 200, detail);
    if (options.timeline === undefined) throw new OpsError('not_found', 'this dashboard draws no timeline');
    return send(response, 200, 'image/svg+xml; charset=utf-8', options.timeline(detail.task, detail.events, detail.at));
  }
  switch (path) {
    case '/':
    case '/dead-letters':
      return send(response, 200, 'text/html; charset=utf-8', pageHtml(config));
    case '/app.js':
      return send(response, 200, 'text/javascript; charset=utf-8', APP_JS);
    case '/app.css':
      return send(response, 200, 'text/css; charset=utf-8', APP_CSS);
    case '/api/status':
      return sendJson(response, 200, { ...(await readStatus(queue, options.db)), actions: config.actions, configuration: options.configuration ?? 'defaults' });
    case '/api/tasks': {
      const limit = url.searchParams.get('limit');
      const filter = {
        ...optional('tenant', url.searchParams.get('tenant')),
        ...optional('state', url.searchParams.get('state')),
        ...optional('topic', url.searchParams.get('topic')),
        ...(limit === null ? {} : { limit: /^\d{1,6}$/.test(limit) ? Number(limit) : Number.NaN }),
      };
      return sendJson(response, 200, await readTasks(queue, filter));
    }
    case '/api/dead-letters':
      return sendJson(response, 200, { deadLetters: await queue.deadLetters(), actions: config.actions });
    case '/metrics':
      return metrics(response, options);
    default:
      if (/^\/task\/[^/]+$/.test(path)) return send(response, 200, 'text/html; charset=utf-8', pageHtml(config));
      throw new OpsError('not_found', `no page ${path}`);
  }
}

function optional(name: string, value: string | null): Record<string, string> {
  return value === null ? {} : { [name]: value };
}

/** The host name of a Host header, lower case, without its port ('' when missing). */
export function hostName(header: string | undefined): string {
  const value = (header ?? '').trim().toLowerCase();
  const match = /^(\[[^\]]*\]|[^:]*)(?::\d+)?$/.exec(value);
  return match === null ? '' : match[1]!;
}

async function act(request: IncomingMessage, name: string, options: OpsServerOptions): Promise<unknown> {
  if (!options.allowActions) throw new OpsError('forbidden', 'this dashboard is read-only: start it with --allow-actions to act');
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== `http://${request.headers.host ?? ''}`) throw new OpsError('forbidden', `cross-origin action refused (Origin ${JSON.stringify(origin)})`);
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') throw new OpsError('forbidden', `cross-site action refused (Sec-Fetch-Site ${JSON.stringify(site)})`);
  if (!tokenMatches(request.headers['x-leasehold-token'], options.token)) throw new OpsError('forbidden', 'an action needs the token the dashboard printed at start (header x-leasehold-token)');
  if (!/^application\/json\b/i.test(request.headers['content-type'] ?? '')) throw new OpsError('invalid_input', 'an action is a POST of application/json');
  if (!(ACTIONS as readonly string[]).includes(name)) throw new OpsError('not_found', `no action ${JSON.stringify(name)}: one of ${ACTIONS.join(', ')}`);
  const body = await readJson(request);
  return runAction(options.queue, { ...body, action: name as ActionName } as OpsAction, 'operator (dashboard)');
}

function tokenMatches(given: string | string[] | undefined, token: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

async function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new OpsError('invalid_input', `an action's body is at most ${MAX_BODY} bytes`);
    chunks.push(chunk as Buffer);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new OpsError('invalid_input', "an action's body is a JSON object");
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new OpsError('invalid_input', "an action's body is a JSON object");
  return body as Record<string, unknown>;
}

async function metrics(response: ServerResponse, options: OpsServerOptions): Promise<void> {
  const signals = await options.queue.signals();
  let text: string;
  try {
    text = await (options.renderMetrics ?? defaultRenderMetrics)(signals);
  } catch (error) {
    if (!(error instanceof MissingDependencyError)) throw error;
    return send(response, 501, 'text/plain; charset=utf-8', `${error.message}\n`);
  }
  send(response, 200, 'text/plain; version=0.0.4; charset=utf-8', text);
}

/** scrapePrometheus's exporter, imported on first use so a dashboard without prom-client still serves the rest. */
async function defaultRenderMetrics(signals: Signals): Promise<string> {
  const { renderPrometheus } = await import('../export/prometheus.ts');
  return renderPrometheus(signals);
}

function methodNotAllowed(response: ServerResponse, allow: string): void {
  response.setHeader('allow', allow);
  sendJson(response, 405, { error: 'method_not_allowed', message: `use ${allow}` });
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  send(response, status, 'application/json; charset=utf-8', JSON.stringify(body));
}

function send(response: ServerResponse, status: number, contentType: string, body: string): void {
  response.writeHead(status, { ...SECURITY_HEADERS, 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  response.end(body);
}

export interface RunningOpsServer {
  server: Server;
  /** http://host:port/ */
  url: string;
  close(): Promise<void>;
}

/** Starts the dashboard on host:port (port 0: any free one) and resolves once it listens. */
export async function startOpsServer(options: OpsServerOptions & { host: string; port: number }): Promise<RunningOpsServer> {
  const loopback = LOOPBACK_NAMES.includes(options.host.toLowerCase());
  const handler = createOpsHandler({ ...options, hosts: options.hosts ?? (loopback ? [] : 'any') });
  const server = createServer((request, response) => void handler(request, response));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as { port: number };
  const shown = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    server,
    url: `http://${shown}:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
