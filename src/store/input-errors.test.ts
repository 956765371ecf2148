/**
 * The queue's argument and configuration checks, on one store: each bad value is a typed error (or an
 * `invalid_input` answer) naming the field, and nothing is written. These checks run before any store
 * is touched, so they do not differ by store and are not part of the contract suite.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, InputError } from '../queue/errors.ts';
import { ManualClock, T0 } from '../queue/__test-helpers__/test-kit.ts';
import type { QueueConfig, WorkQueue } from '../queue/types.ts';
import { openWorkQueue } from '../work-queue.ts';
import { YieldingSqliteStore } from './__test-helpers__/yielding-store.ts';

const opened: WorkQueue[] = [];
const scratch: string[] = [];

afterEach(async () => {
  for (const queue of opened.splice(0)) await queue.close();
  for (const directory of scratch.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function open(config: Partial<QueueConfig> = {}, db: string = ':memory:'): WorkQueue {
  const queue = openWorkQueue({ db, clock: new ManualClock(), config });
  opened.push(queue);
  return queue;
}

function scratchFile(): string {
  const directory = mkdtempSync(join(tmpdir(), 'leasehold-input-errors-'));
  scratch.push(directory);
  return join(directory, 'queue.sqlite');
}

const TASK = { tenant: 'acme', topic: 't', version: 1, priority: 0, input: { n: 1 } };

/** The error `call` threw (synchronously or by rejecting), for assertions on its class and field. */
async function caught(call: () => unknown): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail');
}

/** A queue holding one claimed task: its id, worker and generation. */
async function claimedTask(queue: WorkQueue, request: Record<string, unknown> = {}) {
  const enqueued = await queue.enqueue({ ...TASK, ...request });
  if (!enqueued.ok) throw new Error(`enqueue refused: ${enqueued.message}`);
  const claimed = await queue.claim('w1');
  if (!claimed.ok) throw new Error(`claim refused: ${claimed.reason}`);
  return { id: claimed.task.id, generation: claimed.task.generation, task: claimed.task };
}

describe('openWorkQueue refuses bad options by name', () => {
  it('options that are not an object', () => {
    for (const options of [null, 'queue.sqlite', 7]) {
      const error = (() => {
        try {
          openWorkQueue(options as never);
        } catch (thrown) {
          return thrown;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe('options');
    }
  });

  it('a schema for a SQLite database, and creates no file', async () => {
    const path = scratchFile();
    expect(() => openWorkQueue({ db: path, clock: new ManualClock(), schema: 'tenant_a' })).toThrow(
      expect.objectContaining({ name: 'ConfigError', field: 'schema' }),
    );
    // The file is still free to open as a queue: nothing was created under it.
    const queue = open({}, path);
    expect(await queue.schemaMigrations()).not.toHaveLength(0);
    expect(await queue.liveCount()).toBe(0);
  });

  it.each([
    ['an array', [], 'budgets'],
    ['a budget that is not an object', { gpu: 4 }, 'budgets.gpu'],
    ['a budget that is a list', { gpu: [1] }, 'budgets.gpu'],
    ['a meter that is neither tokens nor modelCalls', { spend: { kind: 'total', limit: 10, per: 'run', meter: 'dollars' } }, 'budgets.spend.meter'],
  ])('budgets: %s', (_what, budgets, field) => {
    const error = (() => {
      try {
        openWorkQueue({ db: ':memory:', clock: new ManualClock(), config: { budgets: budgets as never } });
      } catch (thrown) {
        return thrown;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe(field);
  });
});

describe('the read calls refuse bad arguments by name', () => {
  it('eventListSince: a cursor that is not a non-negative integer, a limit that is not positive', async () => {
    const queue = open();
    await queue.enqueue(TASK);
    for (const cursor of [-1, 1.5, Number.NaN, '0']) {
      const error = await caught(() => queue.eventsSince(cursor as number));
      expect(error).toBeInstanceOf(InputError);
      expect((error as InputError).field).toBe('cursor');
    }
    for (const limit of [0, -3, 2.5]) {
      const error = await caught(() => queue.eventsSince(0, limit));
      expect(error).toBeInstanceOf(InputError);
      expect((error as InputError).field).toBe('limit');
    }
    // The same read with good arguments answers: the enqueue's events, from the start.
    const events = await queue.eventsSince(0, 10);
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((event) => event.taskId === events[0]!.taskId)).toBe(true);
  });

  it('effectResult: an empty or non-string request key', async () => {
    const queue = open();
    for (const key of ['', 42, undefined]) {
      const error = await caught(() => queue.effectResult(key as string));
      expect(error).toBeInstanceOf(InputError);
      expect((error as InputError).field).toBe('requestKey');
    }
    expect(await queue.effectResult('never-recorded')).toBeUndefined();
  });
});

describe('watch', () => {
  it('refuses a listener that is not a function, at once', () => {
    const queue = open();
    for (const listener of [undefined, 'ping', {}]) {
      expect(() => queue.watch(listener as never)).toThrow(expect.objectContaining({ name: 'InputError', field: 'listener' }));
    }
  });

  it('on a store that cannot be heard, hands back an unwatch that does nothing: the caller polls', async () => {
    const queue = openWorkQueue({ db: YieldingSqliteStore.open(':memory:'), clock: new ManualClock() });
    opened.push(queue);
    let heard = 0;
    const unwatch = queue.watch(() => heard++);
    expect(await queue.enqueue(TASK)).toMatchObject({ ok: true });
    expect(heard).toBe(0);
    unwatch();
    unwatch();
    // The queue still works after it, and polling finds the task.
    expect(await queue.claim('w1')).toMatchObject({ ok: true });
  });
});

describe('the holder writes refuse bad arguments by name and write nothing', () => {
  it('recordEffect: an empty request key or action; a missing result is recorded as null', async () => {
    const queue = open();
    const { id, generation } = await claimedTask(queue);
    const before = await queue.allEvents();
    for (const [effect, field] of [
      [{ requestKey: '', action: 'send', result: 1 }, 'requestKey'],
      [{ requestKey: 7, action: 'send', result: 1 }, 'requestKey'],
      [undefined, 'requestKey'],
      [{ requestKey: 'k1', action: '', result: 1 }, 'action'],
      [{ requestKey: 'k1', result: 1 }, 'action'],
    ] as const) {
      const error = await caught(() => queue.recordEffect(id, 'w1', generation, effect as never));
      expect(error).toBeInstanceOf(InputError);
      expect((error as InputError).field).toBe(field);
    }
    expect(await queue.effects()).toEqual([]);
    expect(await queue.allEvents()).toEqual(before);

    const recorded = await queue.recordEffect(id, 'w1', generation, { requestKey: 'k1', action: 'send' } as never);
    expect(recorded).toEqual({ ok: true, repeated: false, result: null });
    expect(await queue.effectResult('k1')).toBeNull();
  });

  it('checkpoint: a kind that is not A or B, a step that is not a non-negative integer, usage missing a counter', async () => {
    const queue = open();
    const { id, generation } = await claimedTask(queue);
    const usage = { inputTokens: 1, outputTokens: 2, modelCalls: 1 };
    const before = await queue.allEvents();
    for (const [checkpoint, field] of [
      [{ kind: 'C', step: 0, state: {}, usage }, 'kind'],
      [undefined, 'kind'],
      [{ kind: 'A', step: -1, state: {}, usage }, 'step'],
      [{ kind: 'B', step: 1.5, state: {}, usage }, 'step'],
      [{ kind: 'B', step: 0, state: {} }, 'usage.inputTokens'],
      [{ kind: 'B', step: 0, state: {}, usage: { inputTokens: 1, outputTokens: -2, modelCalls: 1 } }, 'usage.outputTokens'],
      [{ kind: 'B', step: 0, state: {}, usage: { inputTokens: 1, outputTokens: 2, modelCalls: '1' } }, 'usage.modelCalls'],
    ] as const) {
      const error = await caught(() => queue.checkpoint(id, 'w1', generation, checkpoint as never));
      expect(error).toBeInstanceOf(InputError);
      expect((error as InputError).field).toBe(field);
    }
    expect(await queue.lastCheckpoint(id)).toBeUndefined();
    expect(await queue.allEvents()).toEqual(before);

    // A checkpoint without state stores null, and reads it back as null.
    expect(await queue.checkpoint(id, 'w1', generation, { kind: 'B', step: 0, usage } as never)).toMatchObject({ ok: true });
    expect(await queue.lastCheckpoint(id)).toMatchObject({ kind: 'B', step: 0, state: null, usage });
  });

  it('fail: a message that is not a string is recorded as its text, a missing one as empty', async () => {
    const queue = open();
    const first = await claimedTask(queue, { topic: 'a' });
    expect(await queue.fail(first.id, 'w1', first.generation, { errorClass: 'business_error', message: 429 } as never)).toEqual({ ok: true, next: 'failed' });
    expect(await queue.get(first.id)).toMatchObject({ state: 'failed', errorClass: 'business_error', errorMessage: '429' });

    const second = await claimedTask(queue, { topic: 'b' });
    expect(await queue.fail(second.id, 'w1', second.generation, { errorClass: 'business_error' } as never)).toEqual({ ok: true, next: 'failed' });
    expect(await queue.get(second.id)).toMatchObject({ state: 'failed', errorClass: 'business_error', errorMessage: '' });
  });
});

describe('enqueue describes a bad value in its answer, and accepts nothing', () => {
  it('a long string is cut at 40 characters, an object is named by its type', async () => {
    const queue = open();
    const long = await queue.enqueue({ ...TASK, version: 'v'.repeat(50) as never });
    expect(long).toMatchObject({ ok: false, error: 'invalid_input', field: 'version' });
    expect(!long.ok && long.message).toContain(`got "${'v'.repeat(40)}..."`);
    const object = await queue.enqueue({ ...TASK, version: { major: 1 } as never });
    expect(object).toMatchObject({ ok: false, error: 'invalid_input', field: 'version' });
    expect(!object.ok && object.message).toContain('got object');
    expect(await queue.liveCount()).toBe(0);
    expect(await queue.allEvents()).toEqual([]);
  });
});

describe('needs and budgets', () => {
  const budgets = {
    gpu: { kind: 'concurrency', limit: 2 },
    tokens: { kind: 'total', limit: 1_000, per: 'run', meter: 'tokens' },
  } as const;

  it('a need naming a budget, when none is configured, says so and enqueues nothing', async () => {
    const queue = open();
    const answer = await queue.enqueue({ ...TASK, needs: { gpu: 1 } });
    expect(answer).toMatchObject({ ok: false, error: 'invalid_input', field: 'needs.gpu' });
    expect(!answer.ok && answer.message).toContain('none is configured');
    expect(await queue.liveCount()).toBe(0);
  });

  it('needs of zero units are no needs: the claim reserves nothing, and reserve() of zero takes nothing', async () => {
    const queue = open({ budgets });
    const { id, generation, task } = await claimedTask(queue, { needs: { gpu: 0, tokens: 0 } });
    expect(task.needs).toBeUndefined();
    expect(await queue.reservations()).toEqual([]);
    expect(await queue.reserve(id, 'w1', generation, { tokens: 0 })).toEqual({ ok: true, reserved: {} });
    // Without needs asked, reserve() takes the task's metered needs again: it has none.
    expect(await queue.reserve(id, 'w1', generation)).toEqual({ ok: true, reserved: {} });
    expect(await queue.reservations()).toEqual([]);
    expect(await queue.budgetLevels()).toEqual([]);
  });

  it('a budget dropped from the config on reopen is no longer reported, reserved again or held back', async () => {
    const path = scratchFile();
    const clock = new ManualClock();
    const before = openWorkQueue({ db: path, clock, config: { budgets } });
    const { id, generation } = await claimedTask(before, { needs: { gpu: 1, tokens: 100 } });
    expect((await before.budgetLevels()).map((level) => level.budget).sort()).toEqual(['gpu', 'tokens']);
    await before.close();

    const after = openWorkQueue({ db: path, clock, config: { budgets: { gpu: budgets.gpu } } });
    opened.push(after);
    // The stored level of `tokens` is still there, but no configured budget reads it.
    expect((await after.budgetLevels()).map((level) => level.budget)).toEqual(['gpu']);
    // reserve() again takes the task's metered needs, and `tokens` is not a configured (metered) budget now.
    expect(await after.reserve(id, 'w1', generation)).toEqual({ ok: true, reserved: {} });
    expect(await after.complete(id, 'w1', generation, { done: true })).toMatchObject({ ok: true });
    // The end of the attempt gives back every reservation it held, the dropped budget's whole as well.
    const rows = await after.reservations();
    expect(rows.map((row) => [row.budget, row.released, row.releasedAt])).toEqual([
      ['gpu', 1, T0],
      ['tokens', 100, T0],
    ]);
    expect(await after.budgetLevels()).toEqual([expect.objectContaining({ budget: 'gpu', level: 0 })]);
  });
});
