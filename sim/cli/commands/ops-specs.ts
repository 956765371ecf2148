import type { CommandSpec, FlagSpec } from '../command-specs.ts';

/**
 * O1, O2: the operator's commands over a live queue (`--db FILE|URL`), declared here and registered in
 * command-specs.ts beside the harness's. They run the production queue only (none of the harness's
 * packages), and each takes --json. Their exit codes: 0 done, 64 bad usage or input, 65 refused by
 * the queue or no such task, 66 a database that is missing or cannot be opened as a queue, 69 a server
 * that does not answer (src/ops/errors.ts).
 */
export const OPS_COMMAND_NAMES = ['status', 'tasks', 'task', 'dead-letters', 'cancel', 'confirm-stopped', 'pause', 'resume', 'redrive', 'serve'] as const;
export type OpsCommandName = (typeof OPS_COMMAND_NAMES)[number];

type OpsSpec = Omit<CommandSpec, 'name'> & { name: OpsCommandName };

const db: FlagSpec = { name: 'db', kind: 'string', valueName: 'FILE|URL', example: 'queue.sqlite', help: "the queue: the SQLite file your workers open (never created here) or a postgres:// URL" };
const schema: FlagSpec = { name: 'schema', kind: 'string', valueName: 'NAME', example: 'leasehold', help: 'PostgreSQL only: the schema the queue lives in' };
const json: FlagSpec = { name: 'json', kind: 'boolean', help: 'print one JSON object instead of text' };
const config: FlagSpec = { name: 'config', kind: 'string', valueName: 'FILE', example: 'queue-config.json', help: "the workers' queue configuration as JSON (the config they give openWorkQueue): decides what confirm-stopped and redrive do" };
const defaultConfig: FlagSpec = { name: 'default-config', kind: 'boolean', help: 'run with the default queue configuration (when the workers do): confirm-stopped and redrive need this or --config' };
const common = [db, json, schema, config, defaultConfig];
const taskId = { name: 'ID', max: 1, help: 'the task id (a positive integer)' };
const tenant = { name: 'TENANT', max: 1, help: 'the tenant' };

export const OPS_COMMANDS: Readonly<Record<OpsCommandName, OpsSpec>> = {
  status: {
    name: 'status',
    summary: 'the state of a live queue at a glance: depth per tenant and state, leases and their ages, uncertain tasks, paused tenants, budgets, alerts, recent admission decisions',
    synopsis: '--db FILE|URL [--json]',
    flags: common,
    example: 'status --db queue.sqlite',
    requires: { flags: ['db'] },
  },
  tasks: {
    name: 'tasks',
    summary: 'list the tasks of a live queue, newest first, filtered by tenant, state and topic',
    synopsis: '--db FILE|URL [--tenant T] [--state S] [--topic T] [--limit N] [--json]',
    flags: [
      ...common,
      { name: 'tenant', kind: 'string', valueName: 'T', example: 'acme', help: "only this tenant's tasks" },
      { name: 'state', kind: 'string', valueName: 'S', example: 'uncertain', help: 'only tasks in this state: ready, running, uncertain, done, failed, superseded, cancelled, expired' },
      { name: 'topic', kind: 'string', valueName: 'T', example: 'ticket-17', help: 'only tasks of this topic' },
      { name: 'limit', kind: 'integer', valueName: 'N', example: '20', help: 'show at most N tasks (default 50, at most 10000)' },
    ],
    example: 'tasks --db queue.sqlite --state uncertain',
    requires: { flags: ['db'] },
  },
  task: {
    name: 'task',
    summary: 'one task with its events, last checkpoint, effects, reservations, admission decisions and dead letter',
    synopsis: 'ID --db FILE|URL [--json]',
    flags: common,
    positional: taskId,
    example: 'task 17 --db queue.sqlite',
    requires: { flags: ['db'] },
  },
  'dead-letters': {
    name: 'dead-letters',
    summary: 'the dead letters: tasks that ran out of deliveries, attempts or retry age, with their reason history',
    synopsis: '--db FILE|URL [--json]',
    flags: common,
    example: 'dead-letters --db queue.sqlite',
    requires: { flags: ['db'] },
  },
  cancel: {
    name: 'cancel',
    summary: 'cancel a task: a waiting one ends at once, a running one stops at its next step boundary (Q13)',
    synopsis: 'ID --db FILE|URL [--json]',
    flags: common,
    positional: taskId,
    example: 'cancel 17 --db queue.sqlite',
    requires: { flags: ['db'] },
  },
  'confirm-stopped': {
    name: 'confirm-stopped',
    summary: "confirm that an uncertain task's worker is gone, so the task goes back to ready (or ends): only once you know it (Q11)",
    synopsis: 'ID --generation G --db FILE|URL (--config FILE | --default-config) [--json]',
    flags: [...common, { name: 'generation', kind: 'integer', min: 0, valueName: 'G', example: '1', help: 'the generation you saw uncertain (`leasehold task ID`): a later one is refused stale_generation' }],
    positional: taskId,
    example: 'confirm-stopped 17 --generation 1 --db queue.sqlite --config queue-config.json',
    requires: { flags: ['db', 'generation'] },
  },
  pause: {
    name: 'pause',
    summary: "pause a tenant: it gets no new lease, its running leases continue (A2)",
    synopsis: 'TENANT --reason R --db FILE|URL [--json]',
    flags: [...common, { name: 'reason', kind: 'string', valueName: 'R', example: "'billing review'", help: 'why, recorded with the pause' }],
    positional: tenant,
    example: "pause acme --reason 'billing review' --db queue.sqlite",
    requires: { flags: ['db', 'reason'] },
  },
  resume: {
    name: 'resume',
    summary: 'resume a paused tenant (A2)',
    synopsis: 'TENANT --db FILE|URL [--json]',
    flags: common,
    positional: tenant,
    example: 'resume acme --db queue.sqlite',
    requires: { flags: ['db'] },
  },
  redrive: {
    name: 'redrive',
    summary: 'send a dead letter back to ready with a fresh set of attempts; its reason history is kept in the event log',
    synopsis: 'ID --db FILE|URL (--config FILE | --default-config) [--json]',
    flags: common,
    positional: taskId,
    example: 'redrive 17 --db queue.sqlite --config queue-config.json',
    requires: { flags: ['db'] },
  },
  serve: {
    name: 'serve',
    summary: 'serve the dashboard of a live queue (overview, task timelines, dead letters, /metrics, JSON API); read-only unless --allow-actions',
    synopsis: '--db FILE|URL [--host 127.0.0.1] [--port 8080] [--allow-actions (--config FILE | --default-config)] [--refresh-ms MS]',
    flags: [
      db,
      schema,
      config,
      defaultConfig,
      { name: 'host', kind: 'string', valueName: 'HOST', example: '127.0.0.1', help: 'the address to listen on (default 127.0.0.1, loopback only; anything else lets others reach it)' },
      { name: 'port', kind: 'integer', min: 0, valueName: 'PORT', example: '8080', help: 'the port (default 8080; 0 picks a free one)' },
      { name: 'allow-actions', kind: 'boolean', help: 'allow cancel, confirm-stopped, pause, resume and redrive, each with the token printed at start' },
      { name: 'refresh-ms', kind: 'integer', min: 250, valueName: 'MS', example: '2000', help: 'how often the pages refresh (default 2000)' },
    ],
    example: 'serve --db queue.sqlite',
    requires: { flags: ['db'] },
  },
};
