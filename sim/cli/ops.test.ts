/**
 * The operator's commands (SPEC O1, O2) as a person runs them: in-process through runCli over a real
 * SQLite file with work in every state (src/ops/__test-helpers__/populated.ts), each read as a table and
 * as JSON, each action's success and its refusal (exit code, one line, nothing changed), --help, a
 * missing file, NO_COLOR and a narrow terminal; and `leasehold serve` as a real process, stopped with
 * SIGTERM.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POPULATED_CONFIG, populate, type Populated } from '../../src/ops/__test-helpers__/populated.ts';
import { openWorkQueue } from '../../src/work-queue.ts';
import { runCli } from './dispatch.ts';
import { EXIT_OK, EXIT_USAGE } from './exit-codes.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-ops-cli-'));
const TEMPLATE = join(scratch, 'template.sqlite');
let ids: Populated['ids'];
beforeAll(async () => {
  const populated = await populate(TEMPLATE);
  ids = populated.ids;
  await populated.queue.close();
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The workers' queue configuration as an operator hands it to --config, and two that are refused. */
const CONFIG = join(scratch, 'queue-config.json');
const BAD_CONFIG = join(scratch, 'bad-config.json');
const NOT_JSON = join(scratch, 'not-json.json');
writeFileSync(CONFIG, JSON.stringify(POPULATED_CONFIG));
writeFileSync(BAD_CONFIG, JSON.stringify({ maxAttempts: 0 }));
writeFileSync(NOT_JSON, '{ maxAttempts: 1 }');

let copies = 0;
/** A fresh copy of the populated queue's file. */
function queueFile(): string {
  const path = join(scratch, `q${++copies}.sqlite`);
  copyFileSync(TEMPLATE, path);
  return path;
}

async function cli(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

/** Runs `body` with these environment variables (undefined: unset), restoring them after. */
async function withEnv<T>(vars: Record<string, string | undefined>, body: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((name) => [name, process.env[name]]));
  const set = (values: Record<string, string | undefined>) => {
    for (const [name, value] of Object.entries(values)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
  set(vars);
  try {
    return await body();
  } finally {
    set(saved);
  }
}

/** Everything a command could change: the tasks, the event log, the pauses, the dead letters. */
async function everything(db: string): Promise<string> {
  const queue = openWorkQueue({ db, clock: { now: () => 0 } });
  try {
    return JSON.stringify([await queue.snapshot(), await queue.allEvents(), await queue.pausedTenants(), await queue.deadLetters()]);
  } finally {
    await queue.close();
  }
}

async function stateOf(db: string, id: number): Promise<string | undefined> {
  const queue = openWorkQueue({ db, clock: { now: () => 0 } });
  try {
    return (await queue.get(id))?.state;
  } finally {
    await queue.close();
  }
}

const lines = (text: string) => text.split('\n');

describe('leasehold status, tasks, task, dead-letters', () => {
  it('status: a table for people and the same view as JSON', async () => {
    const db = queueFile();
    const text = await withEnv({ COLUMNS: undefined }, () => cli(['status', '--db', db]));
    expect([text.code, text.stderr]).toEqual([EXIT_OK, '']);
    expect(text.stdout).toContain(`Leasehold ${db} at `);
    expect(text.stdout).toContain('ready 3, running 1, uncertain 1, dead letters 1, paused tenants 1');
    expect(text.stdout).toMatch(/^acme +1 +0 +1 +task 6, /m);
    expect(text.stdout).toMatch(/^initech +1 +1 +0 +task 9, .* paused$/m);
    expect(text.stdout).toMatch(/^ *1 +acme +order-1 +w-uncertain +1 /m);
    const json = await cli(['status', '--db', db, '--json']);
    expect(json.code).toBe(EXIT_OK);
    const view = JSON.parse(json.stdout) as { db: string; configuration: string; totals: unknown; tenants: { tenant: string }[]; uncertain: { taskId: number }[] };
    expect(view.totals).toEqual({ ready: 3, running: 1, uncertain: 1, deadLetters: 1, pausedTenants: 1 });
    expect(view.tenants.map(({ tenant }) => tenant)).toEqual(['acme', 'globex', 'initech']);
    expect(view.uncertain.map(({ taskId }) => taskId)).toEqual([ids.uncertain]);
    expect(view.db).toBe(db);
    expect(view.configuration).toBe('defaults');
    expect(lines(text.stdout).at(-1)).toBe('Alerts and budgets judged by the queue configuration: the defaults (no --config)');
    const configured = await cli(['status', '--db', db, '--config', CONFIG]);
    expect(lines(configured.stdout).at(-1)).toBe(`Alerts and budgets judged by the queue configuration: ${CONFIG}`);
    expect((JSON.parse((await cli(['status', '--db', db, '--config', CONFIG, '--json'])).stdout) as { configuration: string }).configuration).toBe(CONFIG);
  });

  it('tasks: filtered by tenant and state, as a table and as JSON; a bad filter is exit 64', async () => {
    const db = queueFile();
    const acme = await withEnv({ COLUMNS: undefined }, () => cli(['tasks', '--db', db, '--tenant', 'acme']));
    expect(acme.code).toBe(EXIT_OK);
    expect(lines(acme.stdout).map((line) => line.trim().split(/ +/).slice(0, 5).join(' '))).toEqual([
      'ID TENANT TOPIC VER STATE',
      `${ids.ready} acme order-3 1 ready`,
      `${ids.dead} acme order-2 1 failed`,
      `${ids.uncertain} acme order-1 1 uncertain`,
      '3 tasks',
    ]);
    const failed = await cli(['tasks', '--db', db, '--state', 'failed', '--json']);
    expect((JSON.parse(failed.stdout) as { total: number; tasks: { id: number }[] }).tasks.map(({ id }) => id)).toEqual([ids.dead, ids.failed]);
    const both = JSON.parse((await cli(['tasks', '--db', db, '--tenant', 'acme', '--state', 'ready', '--json'])).stdout) as { total: number; tasks: { id: number }[] };
    expect([both.total, both.tasks.map(({ id }) => id)]).toEqual([1, [ids.ready]]);
    const limited = await cli(['tasks', '--db', db, '--limit', '2']);
    expect(lines(limited.stdout).at(-1)).toBe('2 of 10 tasks (newest first; --limit N for more)');
    const bad = await cli(['tasks', '--db', db, '--state', 'sleeping']);
    expect([bad.code, bad.stdout, bad.stderr]).toEqual([EXIT_USAGE, '', expect.stringMatching(/^leasehold tasks: invalid input: state expects one of ready, .*got "sleeping"$/)]);
  });

  it('task ID: everything recorded about it; a missing id is exit 65, a bad one 64', async () => {
    const db = queueFile();
    const done = await cli(['task', String(ids.done), '--db', db]);
    expect(done.code).toBe(EXIT_OK);
    expect(done.stdout).toMatch(new RegExp(`^Task ${ids.done}$`, 'm'));
    expect(done.stdout).toMatch(/^state +done$/m);
    expect(done.stdout).toContain('B step 1, generation 1');
    const json = JSON.parse((await cli(['task', String(ids.dead), '--db', db, '--json'])).stdout) as { task: { id: number; state: string }; deadLetter: { reason: string } };
    expect([json.task.id, json.task.state, json.deadLetter.reason]).toEqual([ids.dead, 'failed', 'attempts_exhausted']);
    const missing = await cli(['task', '999', '--db', db]);
    expect([missing.code, missing.stdout, missing.stderr]).toEqual([65, '', 'leasehold task: not found: no task 999']);
    const missingJson = await cli(['task', '999', '--db', db, '--json']);
    expect([missingJson.code, JSON.parse(missingJson.stdout)]).toEqual([65, { error: 'not_found', message: 'no task 999' }]);
    for (const id of ['abc', '0', '-1', '1.5']) {
      const bad = await cli(['task', id, '--db', db]);
      expect([bad.code, bad.stdout], id).toEqual([EXIT_USAGE, '']);
      expect(bad.stderr, id).toMatch(/^leasehold(?: task)?: /);
    }
    const none = await cli(['task', '--db', db]);
    expect([none.code, none.stderr]).toEqual([EXIT_USAGE, 'leasehold: task needs ID. Try: leasehold task 17 --db queue.sqlite']);
  });

  it('dead-letters: the table with the way back, and JSON', async () => {
    const db = queueFile();
    const text = await cli(['dead-letters', '--db', db]);
    expect(text.code).toBe(EXIT_OK);
    expect(text.stdout).toMatch(new RegExp(`^ *${ids.dead} +acme +order-2 +1 +\\S+Z +attempts_exhausted +lease_expired, attempts_exhausted$`, 'm'));
    expect(lines(text.stdout).at(-1)).toBe('1 dead letter; run one again: leasehold redrive ID --db ...');
    const json = JSON.parse((await cli(['dead-letters', '--db', db, '--json'])).stdout) as { deadLetters: { taskId: number }[] };
    expect(json.deadLetters.map(({ taskId }) => taskId)).toEqual([ids.dead]);
  });
});

describe('leasehold cancel, confirm-stopped, pause, resume, redrive', () => {
  it('each does what it says, through the queue, and says so', async () => {
    const db = queueFile();
    const cancel = await cli(['cancel', String(ids.ready), '--db', db]);
    expect([cancel.code, cancel.stdout]).toEqual([EXIT_OK, `task ${ids.ready} cancelled`]);
    expect(await stateOf(db, ids.ready)).toBe('cancelled');
    const confirm = await cli(['confirm-stopped', String(ids.uncertain), '--generation', '1', '--db', db, '--config', CONFIG, '--json']);
    // The workers' configuration (maxAttempts 1) decides: the uncertain task's one attempt is spent, so it ends failed (with the defaults it went back to ready).
    expect([confirm.code, JSON.parse(confirm.stdout)]).toEqual([
      EXIT_OK,
      { action: 'confirm-stopped', message: `task ${ids.uncertain} generation 1 confirmed stopped: now failed`, result: { ok: true, next: 'failed' }, configuration: CONFIG },
    ]);
    expect(await stateOf(db, ids.uncertain)).toBe('failed');
    const pause = await cli(['pause', 'globex', '--reason', 'billing review', '--db', db]);
    expect([pause.code, pause.stdout]).toEqual([EXIT_OK, 'tenant globex paused']);
    const again = await cli(['pause', 'globex', '--reason', 'billing review', '--db', db]);
    expect([again.code, again.stdout]).toEqual([EXIT_OK, 'tenant globex was already paused: nothing changed']);
    const resume = await cli(['resume', 'initech', '--db', db]);
    expect([resume.code, resume.stdout]).toEqual([EXIT_OK, 'tenant initech resumed']);
    const redrive = await cli(['redrive', String(ids.dead), '--db', db, '--config', CONFIG]);
    expect([redrive.code, redrive.stdout]).toEqual([EXIT_OK, `task ${ids.dead} redriven: ready again with a fresh set of attempts (queue configuration: ${CONFIG})`]);
    expect(await stateOf(db, ids.dead)).toBe('ready');
    const queue = openWorkQueue({ db, clock: { now: () => 0 } });
    try {
      expect((await queue.pausedTenants()).map(({ tenant, reason }) => [tenant, reason])).toEqual([['globex', 'billing review']]);
      const confirmed = (await queue.events(ids.uncertain)).at(-1);
      expect(confirmed?.data).toMatchObject({ source: 'operator (cli)' });
    } finally {
      await queue.close();
    }
  });

  it.each([
    [['cancel', 'DONE'], 65, 'leasehold cancel: refused: already_terminal: task DONE already ended done'],
    [['cancel', '999'], 65, 'leasehold cancel: not found: no task 999'],
    [['confirm-stopped', 'UNCERTAIN', '--generation', '5', '--default-config'], 65, 'leasehold confirm-stopped: refused: stale_generation: task UNCERTAIN is at generation 1, not 5'],
    [['confirm-stopped', 'READY', '--generation', '0', '--default-config'], 65, 'leasehold confirm-stopped: refused: not_uncertain: task READY is ready'],
    [['confirm-stopped', 'UNCERTAIN'], EXIT_USAGE, /^leasehold: confirm-stopped needs --generation\. Try: /],
    [['confirm-stopped', 'UNCERTAIN', '--generation', '1'], EXIT_USAGE, /^leasehold confirm-stopped: invalid input: confirm-stopped needs the workers' queue configuration, which decides its outcome .* pass --config FILE .*, or --default-config if they run with the defaults\. Nothing was changed$/],
    [['confirm-stopped', 'UNCERTAIN', '--generation', '1', '--config', 'CONFIG', '--default-config'], EXIT_USAGE, "leasehold confirm-stopped: invalid input: --config FILE and --default-config exclude each other: name the workers' configuration, or take the defaults"],
    [['confirm-stopped', 'UNCERTAIN', '--generation', '1', '--config', 'ABSENT'], EXIT_USAGE, 'leasehold confirm-stopped: invalid input: --config: no configuration file at ABSENT'],
    [['confirm-stopped', 'UNCERTAIN', '--generation', '1', '--config', 'NOTJSON'], EXIT_USAGE, /^leasehold confirm-stopped: invalid input: --config .*not-json\.json: not JSON \(/],
    [['confirm-stopped', 'UNCERTAIN', '--generation', '1', '--config', 'BADCONFIG'], EXIT_USAGE, "leasehold confirm-stopped: invalid input: --config BADCONFIG: invalid config field 'maxAttempts': expected an integer >= 1, got 0"],
    [['pause', 'acme'], EXIT_USAGE, /^leasehold: pause needs --reason\. Try: /],
    [['pause', 'acme', '--reason', ' '], EXIT_USAGE, 'leasehold pause: invalid input: reason expects a non-empty string'],
    [['resume'], EXIT_USAGE, 'leasehold: resume needs TENANT. Try: leasehold resume acme --db queue.sqlite'],
    [['redrive', 'READY', '--config', 'CONFIG'], 65, 'leasehold redrive: refused: not_dead_lettered: task READY is not a dead letter (only a failed task in deadLetters() can be redriven) (task READY is ready)'],
    [['redrive', 'x', '--default-config'], EXIT_USAGE, 'leasehold redrive: invalid input: a task id is a positive integer, got "x"'],
    [['redrive', 'DEAD'], EXIT_USAGE, /^leasehold redrive: invalid input: redrive needs the workers' queue configuration, which decides its outcome /],
  ] as const)('%j is refused with exit %i and one line, changing nothing', async (argv, code, message) => {
    const db = queueFile();
    const named = (text: string) =>
      text
        .replaceAll('DONE', String(ids.done))
        .replaceAll('UNCERTAIN', String(ids.uncertain))
        .replaceAll('READY', String(ids.ready))
        .replaceAll('DEAD', String(ids.dead))
        .replaceAll('BADCONFIG', BAD_CONFIG)
        .replaceAll('NOTJSON', NOT_JSON)
        .replaceAll('ABSENT', join(scratch, 'absent-config.json'))
        .replaceAll('CONFIG', CONFIG);
    const before = await everything(db);
    const result = await cli([...argv.map(named), '--db', db]);
    expect([result.code, result.stdout]).toEqual([code, '']);
    if (typeof message === 'string') expect(result.stderr).toBe(named(message));
    else expect(result.stderr).toMatch(message);
    expect(await everything(db)).toBe(before);
  });

  it('confirm-stopped and redrive run with the configuration named: --default-config takes the defaults knowingly', async () => {
    const db = queueFile();
    // The defaults allow 3 attempts: the same uncertain task that the workers' configuration ends failed goes back to ready.
    const confirm = await cli(['confirm-stopped', String(ids.uncertain), '--generation', '1', '--db', db, '--default-config']);
    expect([confirm.code, confirm.stdout]).toEqual([EXIT_OK, `task ${ids.uncertain} generation 1 confirmed stopped: now ready (queue configuration: defaults)`]);
    expect(await stateOf(db, ids.uncertain)).toBe('ready');
    // A capacity the queue is already at (5 live tasks) refuses the redrive queue_full, changing nothing.
    const full = join(scratch, 'full-config.json');
    writeFileSync(full, JSON.stringify({ ...POPULATED_CONFIG, capacity: 5, globalLimit: 4 }));
    const before = await everything(db);
    const redrive = await cli(['redrive', String(ids.dead), '--db', db, '--config', full, '--json']);
    expect([redrive.code, JSON.parse(redrive.stdout)]).toEqual([65, { error: 'refused', message: `queue_full: the queue holds 5 live tasks (capacity) (task ${ids.dead} is failed)`, queueError: 'queue_full' }]);
    expect(await everything(db)).toBe(before);
  });

  it('cancel, pause and resume do not depend on the configuration, and need none', async () => {
    const db = queueFile();
    expect((await cli(['cancel', String(ids.ready), '--db', db])).code).toBe(EXIT_OK);
    expect((await cli(['pause', 'acme', '--reason', 'r', '--db', db])).code).toBe(EXIT_OK);
    expect((await cli(['resume', 'acme', '--db', db])).code).toBe(EXIT_OK);
  });

  it('a refusal under --json is one JSON object with the queue\'s own error', async () => {
    const db = queueFile();
    const before = await everything(db);
    const result = await cli(['cancel', String(ids.done), '--db', db, '--json']);
    expect([result.code, JSON.parse(result.stdout), result.stderr]).toEqual([65, { error: 'refused', message: `already_terminal: task ${ids.done} already ended done`, queueError: 'already_terminal' }, '']);
    expect(await everything(db)).toBe(before);
  });
});

describe('the operator commands: help, a missing database, the terminal', () => {
  it.each([
    ['status', '--db FILE|URL [--json]'],
    ['tasks', '--tenant T'],
    ['task', 'ID --db FILE|URL'],
    ['dead-letters', '--db FILE|URL'],
    ['cancel', 'ID --db FILE|URL'],
    ['confirm-stopped', 'ID --generation G --db FILE|URL'],
    ['pause', 'TENANT --reason R --db FILE|URL'],
    ['resume', 'TENANT --db FILE|URL'],
    ['redrive', 'ID --db FILE|URL'],
    ['serve', '--allow-actions'],
  ])('%s --help prints its usage, flags and example', async (command, synopsis) => {
    const help = await cli([command, '--help']);
    expect([help.code, help.stderr]).toEqual([EXIT_OK, '']);
    expect(lines(help.stdout)[0]!.startsWith(`Usage: leasehold ${command} `)).toBe(true);
    expect(lines(help.stdout)[0]).toContain(synopsis);
    expect(help.stdout).toMatch(/^ {2}--db FILE\|URL +the queue/m);
    expect(help.stdout).toMatch(new RegExp(`^Example: leasehold ${command} `, 'm'));
  });

  it('lists the operator commands under leasehold --help', async () => {
    const help = await cli(['--help']);
    for (const command of ['status', 'tasks', 'task', 'dead-letters', 'cancel', 'confirm-stopped', 'pause', 'resume', 'redrive', 'serve']) {
      expect(help.stdout, command).toMatch(new RegExp(`^ {2}${command} +\\S`, 'm'));
    }
  });

  it.each([['status'], ['tasks'], ['dead-letters'], ['task', '1'], ['cancel', '1'], ['resume', 'acme']])('%s over a file that does not exist is exit 66 and creates nothing', async (...argv) => {
    const db = join(scratch, `absent-${argv[0]}.sqlite`);
    const result = await cli([...argv, '--db', db]);
    expect([result.code, result.stdout, result.stderr]).toEqual([66, '', `leasehold ${argv[0]}: missing database: no database at ${db}: name the SQLite file your workers open (a look never creates one)`]);
    expect(existsSync(db)).toBe(false);
    expect(existsSync(`${db}-wal`)).toBe(false);
  });

  it('an empty file, or a SQLite database with no queue tables, is exit 66 and gets no tables', async () => {
    const empty = join(scratch, 'empty.sqlite');
    writeFileSync(empty, '');
    const other = join(scratch, 'other.sqlite');
    const handle = new Database(other);
    handle.exec('CREATE TABLE notes (body TEXT)');
    handle.close();
    for (const db of [empty, other]) {
      for (const argv of [['status'], ['cancel', '1'], ['confirm-stopped', '1', '--generation', '1', '--default-config'], ['serve', '--port', '0']]) {
        const result = await cli([...argv, '--db', db]);
        expect([result.code, result.stdout, result.stderr], `${db} ${argv[0]}`).toEqual([
          66,
          '',
          `leasehold ${argv[0]}: missing database: no Leasehold queue in ${db}: it has no queue tables; name the file your workers open (a look never creates one)`,
        ]);
      }
    }
    const check = new Database(other, { readonly: true });
    expect(check.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all()).toEqual([{ name: 'notes' }]);
    check.close();
    expect(readFileSync(empty).length).toBe(0);
  });

  it("a SQLite file with another tool's schema_migrations (text versions) is exit 66 and is left as it was", async () => {
    const db = join(scratch, 'rails.sqlite');
    const handle = new Database(db);
    handle.exec("CREATE TABLE schema_migrations (version TEXT PRIMARY KEY); INSERT INTO schema_migrations VALUES ('20260101120000')");
    handle.close();
    const result = await cli(['status', '--db', db]);
    expect([result.code, result.stdout, result.stderr]).toEqual([66, '', `leasehold status: cannot open: ${db} is not a Leasehold queue: its schema_migrations table is another tool's (version "20260101120000")`]);
    const after = new Database(db, { readonly: true });
    expect(after.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all()).toEqual([{ name: 'schema_migrations' }]);
    after.close();
  });

  it('a queue at an older schema version is exit 66 and is not migrated', async () => {
    const db = queueFile();
    const handle = new Database(db);
    const latest = (handle.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number }).v;
    handle.prepare('DELETE FROM schema_migrations WHERE version = ?').run(latest);
    handle.close();
    const result = await cli(['status', '--db', db]);
    expect([result.code, result.stdout, result.stderr]).toEqual([
      66,
      '',
      `leasehold status: cannot open: the queue in ${db} is at schema version ${latest - 1}, older than this Leasehold's ${latest}: use the Leasehold version its workers run (opening it here would migrate it under them)`,
    ]);
    const after = new Database(db, { readonly: true });
    expect((after.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number }).v).toBe(latest - 1);
    after.close();
  });

  it('serve --allow-actions needs the workers\' configuration too (its page can confirm and redrive): exit 64 before it listens', async () => {
    const db = queueFile();
    const result = await cli(['serve', '--db', db, '--port', '0', '--allow-actions']);
    expect([result.code, result.stdout]).toEqual([EXIT_USAGE, '']);
    expect(result.stderr).toMatch(/^leasehold serve: invalid input: serve --allow-actions needs the workers' queue configuration, which decides its outcome .* Nothing was changed$/);
  });

  it('a file that is not a queue is exit 66, and --schema on SQLite is exit 64', async () => {
    const notQueue = join(REPO, 'package.json');
    const result = await cli(['status', '--db', notQueue]);
    expect([result.code, result.stdout]).toEqual([66, '']);
    expect(result.stderr).toMatch(/^leasehold status: cannot open: /);
    const schema = await cli(['status', '--db', queueFile(), '--schema', 'x']);
    expect([schema.code, schema.stderr]).toEqual([EXIT_USAGE, 'leasehold: --schema is for a postgres:// database only. Try: leasehold status --db queue.sqlite']);
  });

  it('fits a narrow terminal (COLUMNS), cutting the long values with an ellipsis', async () => {
    const db = queueFile();
    for (const argv of [['status'], ['tasks'], ['dead-letters'], ['task', String(ids.failed)], ['task', String(ids.done)]]) {
      const wide = await withEnv({ COLUMNS: undefined }, () => cli([...argv, '--db', db]));
      expect(Math.max(...lines(wide.stdout).map((line) => line.length)), argv.join(' ')).toBeGreaterThan(80);
      const narrow = await withEnv({ COLUMNS: '80' }, () => cli([...argv, '--db', db]));
      expect(narrow.code).toBe(EXIT_OK);
      for (const line of lines(narrow.stdout)) expect(line.length, `${argv.join(' ')}: ${line}`).toBeLessThanOrEqual(80);
      expect(narrow.stdout, argv.join(' ')).toContain('…');
    }
  });

  it('paints a terminal unless NO_COLOR is set, and never paints --json', async () => {
    const db = queueFile();
    const stdout = process.stdout as NodeJS.WriteStream & { isTTY?: boolean; columns?: number };
    const saved = { isTTY: Object.getOwnPropertyDescriptor(stdout, 'isTTY'), columns: Object.getOwnPropertyDescriptor(stdout, 'columns') };
    Object.defineProperty(stdout, 'isTTY', { value: true, configurable: true });
    Object.defineProperty(stdout, 'columns', { value: 100, configurable: true });
    try {
      const painted = await withEnv({ NO_COLOR: undefined, TERM: 'xterm' }, () => cli(['tasks', '--db', db]));
      expect(painted.stdout).toContain('\u001b[1mID\u001b[0m');
      expect(painted.stdout).toMatch(/\u001b\[33muncertain {0,2}\u001b\[0m/);
      for (const line of lines(painted.stdout)) expect(line.replace(/\u001b\[\d+m/g, '').length).toBeLessThanOrEqual(100);
      const plain = await withEnv({ NO_COLOR: '1', TERM: 'xterm' }, () => cli(['tasks', '--db', db]));
      expect(plain.stdout).not.toContain('\u001b');
      expect(plain.stdout).toBe(painted.stdout.replace(/\u001b\[\d+m/g, ''));
      const json = await withEnv({ NO_COLOR: undefined, TERM: 'xterm' }, () => cli(['status', '--db', db, '--json']));
      expect(json.stdout).not.toContain('\u001b[');
    } finally {
      for (const [name, descriptor] of Object.entries(saved)) {
        if (descriptor === undefined) delete (stdout as unknown as Record<string, unknown>)[name];
        else Object.defineProperty(stdout, name, descriptor);
      }
    }
  });
});

describe('leasehold serve: the process', () => {
  it('prints its URL, serves /api/status and the page, and exits 0 on SIGTERM', async () => {
    const db = queueFile();
    const child = spawn(process.execPath, [join(REPO, 'tools', 'leasehold.js'), 'serve', '--db', db, '--port', '0'], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no URL in 60s: ${stdout} ${stderr}`)), 60_000);
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          const match = /^Leasehold dashboard for .*: (http:\/\/127\.0\.0\.1:\d+\/)$/m.exec(stdout);
          if (match !== null && stdout.includes('Ctrl-C stops it.')) {
            clearTimeout(timer);
            resolve(match[1]!);
          }
        });
        child.on('close', () => reject(new Error(`exited before serving: ${stdout} ${stderr}`)));
      });
      expect(stdout).toContain('Read-only: start with --allow-actions');
      const status = await fetch(`${url}api/status`);
      expect(status.status).toBe(200);
      expect(((await status.json()) as { totals: unknown; actions: boolean })).toMatchObject({ totals: { ready: 3, running: 1, uncertain: 1, deadLetters: 1, pausedTenants: 1 }, actions: false, configuration: 'defaults' });
      expect(stdout).toContain('Queue configuration: the defaults (no --config)');
      const page = await fetch(url);
      expect([page.status, page.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
      expect(await page.text()).toContain('<script src="/app.js" defer></script>');
      const action = await fetch(`${url}api/actions/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ taskId: ids.ready }) });
      expect(action.status).toBe(403);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, stderr).toBe(EXIT_OK);
    expect(stderr).toBe('');
    expect(await stateOf(db, ids.ready)).toBe('ready');
  });
});
