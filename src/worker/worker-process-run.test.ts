/**
 * SPEC W3, W2: one supervised worker process's life, run in-process (worker-process.ts wires the same
 * function to the IPC channel and the process's signals; supervisor.test.ts runs it for real, killed and
 * paused). Each test ends on a state, never on a duration.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SystemClock } from '../adapters/clock.ts';
import { dropSchema, freshSchemaName, PG_URL } from '../store/__test-helpers__/pg-test-store.ts';
import { openWorkQueue } from '../work-queue.ts';
import { EventEmitter } from 'node:events';
import { attachWorkerProcess, messageOf, runWorkerProcess, type ProcessLike, type WorkerProcessIo } from './worker-process-run.ts';
import { EXIT_AGENT_MODULE, EXIT_DRAINED, EXIT_SOFTWARE, type ChildMessage, type StartMessage } from './worker-protocol.ts';

const AGENT_TS = JSON.stringify(join(import.meta.dirname, 'agent.ts'));
const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function scratch(): string {
  const directory = mkdtempSync(join(tmpdir(), 'leasehold-wp-'));
  directories.push(directory);
  return directory;
}

function agentFile(directory: string, source = `import { defineAgent } from ${AGENT_TS};
export default defineAgent(() => ({
  model: { decide: async () => ({ toolCalls: [], final: 'ok', usage: { inputTokens: 1, outputTokens: 1 } }) },
  tools: [],
}));`): string {
  const path = join(directory, 'agent.mjs');
  writeFileSync(path, source);
  return path;
}

function start(db: string, agent: string): StartMessage {
  return { type: 'start', workerId: 'host:1:1', db, agent, drainMs: 1_000, config: {}, worker: { idleWaitMs: 20 } };
}

/** An io that records what the process says; `drain()` asks it to drain, as SIGTERM does. */
function io(onMessage: (message: ChildMessage, all: ChildMessage[]) => void = () => {}): WorkerProcessIo & { messages: ChildMessage[]; drain(): void } {
  const messages: ChildMessage[] = [];
  let requested = false;
  let drainer = () => {};
  return {
    messages,
    send: (message) => {
      messages.push(message);
      onMessage(message, messages);
    },
    drainRequested: () => requested,
    onDrainRequest: (drain) => (drainer = drain),
    drain: () => {
      requested = true;
      drainer();
    },
  };
}

describe('a supervised worker process (W3)', () => {
  it('says ready, runs the queue\'s tasks with the agent module, and on a drain request drains and exits 0', async () => {
    const directory = scratch();
    const db = join(directory, 'queue.sqlite');
    const queue = openWorkQueue({ db, clock: new SystemClock() });
    for (let i = 0; i < 3; i++) await queue.enqueue({ tenant: 'acme', topic: `t${i}`, version: 1, priority: 1, input: {} });
    const channel = io((message, all) => {
      if (message.type === 'outcome' && all.filter((m) => m.type === 'outcome').length === 3) channel.drain();
    });
    expect(await runWorkerProcess(start(db, agentFile(directory)), channel)).toBe(EXIT_DRAINED);
    expect(channel.messages[0]).toEqual({ type: 'ready', workerId: 'host:1:1' });
    expect(channel.messages.filter((m) => m.type === 'outcome').map((m) => m.type === 'outcome' && m.outcome.kind)).toEqual(['completed', 'completed', 'completed']);
    expect(channel.messages.at(-1)).toEqual({ type: 'drained', interrupted: 0 });
    expect((await queue.snapshot()).live).toBe(0);
    await queue.close();
  });

  it('exits 78 with the module\'s error when the agent module does not load, and opens no queue', async () => {
    const directory = scratch();
    const channel = io();
    expect(await runWorkerProcess(start(join(directory, 'queue.sqlite'), agentFile(directory, 'export const nothing = 1;')), channel)).toBe(EXIT_AGENT_MODULE);
    expect(channel.messages).toEqual([{ type: 'fatal', phase: 'load', message: expect.stringMatching(/no default export/) }]);
  });

  it('exits 0 without opening the queue when a drain was asked for while the module loaded', async () => {
    const directory = scratch();
    const channel = io();
    channel.drain();
    expect(await runWorkerProcess(start(join(directory, 'queue.sqlite'), agentFile(directory)), channel)).toBe(EXIT_DRAINED);
    expect(channel.messages).toEqual([]);
  });

  it('exits 70 saying why when the database is not one (a restart will not mend it)', async () => {
    const directory = scratch();
    const db = join(directory, 'not-a-database.sqlite');
    writeFileSync(db, 'this is not a SQLite file, and it is long enough to have a header '.repeat(20));
    const channel = io();
    expect(await runWorkerProcess(start(db, agentFile(directory)), channel)).toBe(EXIT_SOFTWARE);
    expect(channel.messages).toEqual([{ type: 'fatal', phase: 'run', message: expect.stringMatching(/opening the queue failed: OpenError.*not a SQLite database/) }]);
  });

  it('W2: waits out a database that is locked when it opens the queue, then runs; a drain during the wait exits 0', async () => {
    const directory = scratch();
    const db = join(directory, 'queue.sqlite');
    // A fresh file whose schema the process must create, locked by another connection's open write transaction.
    const holder = new Database(db);
    holder.pragma('journal_mode = WAL');
    holder.exec('CREATE TABLE hold (x INTEGER)');
    holder.exec('BEGIN IMMEDIATE');
    holder.exec('INSERT INTO hold VALUES (1)');
    const waits: number[] = [];
    const channel = io((message) => {
      // Let go of the lock once the process said it is waiting; then stop it once it is ready.
      if (message.type === 'log' && /opening the queue: the database refused it \(db_busy\), attempt 2/.test(message.line)) holder.exec('COMMIT');
      if (message.type === 'ready') channel.drain();
    });
    channel.waiter = { sleep: (ms) => (waits.push(ms), Promise.resolve()) };
    channel.random = { next: () => 0 };
    const config = { ...start(db, agentFile(directory)), config: { busyTimeoutMs: 1 } };
    expect(await runWorkerProcess(config, channel)).toBe(EXIT_DRAINED);
    holder.close();
    const logs = channel.messages.filter((m) => m.type === 'log').map((m) => (m.type === 'log' ? m.line : ''));
    expect(logs.filter((line) => line.startsWith('opening the queue'))).toEqual([
      'opening the queue: the database refused it (db_busy), attempt 1; retrying in 50 ms',
      'opening the queue: the database refused it (db_busy), attempt 2; retrying in 100 ms',
    ]);
    expect(channel.messages.some((m) => m.type === 'ready')).toBe(true);

    // Locked again, and asked to drain while it waits: it stops waiting and exits 0.
    const other = join(scratch(), 'queue.sqlite');
    const second = new Database(other);
    second.pragma('journal_mode = WAL');
    second.exec('CREATE TABLE hold (x INTEGER); BEGIN IMMEDIATE; INSERT INTO hold VALUES (1)');
    const stopping = io((message) => {
      if (message.type === 'log') stopping.drain();
    });
    stopping.waiter = { sleep: () => Promise.resolve() };
    expect(await runWorkerProcess({ ...start(other, agentFile(directory)), config: { busyTimeoutMs: 1 } }, stopping)).toBe(EXIT_DRAINED);
    expect(stopping.messages.some((m) => m.type === 'ready')).toBe(false);
    second.exec('ROLLBACK');
    second.close();
  });
});

describe('a supervised worker process: what it says, and where', () => {
  it("passes the Worker's log lines on, a run's prefixed with its task and generation", async () => {
    const directory = scratch();
    const db = join(directory, 'queue.sqlite');
    const queue = openWorkQueue({ db, clock: new SystemClock() });
    const enqueued = await queue.enqueue({ tenant: 'acme', topic: 't', version: 1, priority: 1, input: {} });
    if (!enqueued.ok) throw new Error(enqueued.message);
    const holder = new Database(db);
    let holding = false;
    const channel = io((message) => {
      // The run crashes (its model throws); then the idle claim meets a locked database and says so.
      if (message.type === 'outcome' && !holding) {
        holding = true;
        holder.exec('BEGIN IMMEDIATE');
      }
      if (message.type === 'log' && message.line.startsWith('claim:') && holding) {
        holder.exec('COMMIT');
        holding = false;
        channel.drain();
      }
    });
    const agent = agentFile(
      directory,
      `import { defineAgent } from ${AGENT_TS};
export default defineAgent(() => ({ model: { decide: async () => { throw 'the model client gave up'; } }, tools: [] }));`,
    );
    expect(await runWorkerProcess({ ...start(db, agent), config: { busyTimeoutMs: 1 } }, channel)).toBe(EXIT_DRAINED);
    holder.close();
    const lines = channel.messages.filter((m) => m.type === 'log').map((m) => (m.type === 'log' ? m.line : ''));
    expect(lines).toContain(`task ${enqueued.taskId} gen 1: run crashed: the model client gave up`);
    expect(lines).toContain('claim: the database refused it (db_busy); trying again after the idle wait');
    await queue.close();
  });

  it('asked to drain while it waited to open a locked database that then opened: it says ready, drains at once and claims nothing', async () => {
    const directory = scratch();
    const db = join(directory, 'queue.sqlite');
    const holder = new Database(db);
    holder.pragma('journal_mode = WAL');
    holder.exec('CREATE TABLE hold (x INTEGER); BEGIN IMMEDIATE; INSERT INTO hold VALUES (1)');
    const channel = io((message) => {
      if (message.type === 'log' && message.line.startsWith('opening the queue')) {
        channel.drain();
        holder.exec('COMMIT');
      }
    });
    channel.waiter = { sleep: () => Promise.resolve() };
    expect(await runWorkerProcess({ ...start(db, agentFile(directory)), config: { busyTimeoutMs: 1 } }, channel)).toBe(EXIT_DRAINED);
    holder.close();
    expect(channel.messages.map((m) => m.type)).toEqual(['log', 'ready', 'drained']);
    expect(channel.messages.at(-1)).toEqual({ type: 'drained', interrupted: 0 });
  });

  it('on PostgreSQL opens the queue in the schema of its start message', async () => {
    const directory = scratch();
    const schema = freshSchemaName();
    const queue = openWorkQueue({ db: PG_URL, schema, clock: new SystemClock() });
    try {
      const enqueued = await queue.enqueue({ tenant: 'acme', topic: 't', version: 1, priority: 1, input: {} });
      if (!enqueued.ok) throw new Error(enqueued.message);
      const channel = io((message) => {
        if (message.type === 'outcome') channel.drain();
      });
      expect(await runWorkerProcess({ ...start(PG_URL, agentFile(directory)), schema }, channel)).toBe(EXIT_DRAINED);
      expect(channel.messages.filter((m) => m.type === 'outcome').map((m) => m.type === 'outcome' && m.outcome)).toEqual([{ kind: 'completed', taskId: enqueued.taskId, outcome: 'done' }]);
      expect((await queue.get(enqueued.taskId))?.state).toBe('done');
    } finally {
      await queue.close();
      await dropSchema(schema);
    }
  });
});

/** A process as attachWorkerProcess sees it: an IPC channel the test reads, signals it emits, an exit it records. */
class FakeProcess extends EventEmitter {
  readonly sent: ChildMessage[] = [];
  connected = true;
  exitCode: number | undefined;
  private readonly exits: ((code: number) => void)[] = [];
  readonly exited = new Promise<number>((resolve) => this.exits.push(resolve));
  readonly stderr = { text: '', write: (text: string) => (this.stderr.text += text) };
  send = (message: ChildMessage, callback: (error: Error | null) => void): boolean => {
    this.sent.push(message);
    callback(null);
    return true;
  };
  exit(code: number): void {
    for (const resolve of this.exits) resolve(code);
  }
}

describe('the worker process entry (attachWorkerProcess)', () => {
  it('runs on its start message, drains on SIGTERM, and exits with a last bye', async () => {
    const directory = scratch();
    const proc = new FakeProcess();
    attachWorkerProcess(proc as unknown as ProcessLike);
    proc.on('message', () => {});
    proc.emit('message', start(join(directory, 'queue.sqlite'), agentFile(directory)));
    // A second start is ignored; SIGTERM once it is ready drains it.
    proc.emit('message', start(join(directory, 'other.sqlite'), agentFile(directory)));
    for (let i = 0; i < 2_000 && !proc.sent.some((m) => m.type === 'ready'); i++) await new Promise((resolve) => setTimeout(resolve, 5));
    proc.emit('SIGTERM');
    expect(await proc.exited).toBe(EXIT_DRAINED);
    expect(proc.sent.map((m) => m.type)).toEqual(['ready', 'drained', 'bye']);
  });

  it('a drain message before the start ends it at once, and a closed channel sends nothing', async () => {
    const directory = scratch();
    const proc = new FakeProcess();
    attachWorkerProcess(proc as unknown as ProcessLike);
    proc.emit('message', { type: 'drain' });
    proc.connected = false;
    proc.emit('disconnect');
    proc.emit('message', start(join(directory, 'queue.sqlite'), agentFile(directory)));
    expect(await proc.exited).toBe(EXIT_DRAINED);
    expect(proc.sent).toEqual([]);
  });

  it('the supervisor gone (the channel closed) while it runs: it drains and exits 0, sending nothing more, no bye', async () => {
    const directory = scratch();
    const proc = new FakeProcess();
    attachWorkerProcess(proc as unknown as ProcessLike);
    proc.emit('message', start(join(directory, 'queue.sqlite'), agentFile(directory)));
    for (let i = 0; i < 2_000 && !proc.sent.some((m) => m.type === 'ready'); i++) await new Promise((resolve) => setTimeout(resolve, 5));
    proc.connected = false;
    proc.emit('disconnect');
    expect(await proc.exited).toBe(EXIT_DRAINED);
    expect(proc.sent.map((m) => m.type)).toEqual(['ready']);
  });

  it('started by hand, with no channel, it says what it is and exits 64', () => {
    const proc = new FakeProcess();
    (proc as { send?: unknown }).send = undefined;
    attachWorkerProcess(proc as unknown as ProcessLike);
    expect(proc.exitCode).toBe(64);
    expect(proc.stderr.text).toMatch(/entry script of a supervised worker process/);
  });

  it('describes an error that is not an Error by its text', () => {
    expect(messageOf('plain')).toBe('plain');
    expect(messageOf(new RangeError('r'))).toBe('RangeError: r');
  });
});
