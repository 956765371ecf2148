import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { StorageFaults } from '../../sim/store/storage-faults.ts';
import { ManualClock, request } from '../queue/__test-helpers__/test-kit.ts';
import type { WorkQueue } from '../queue/types.ts';
import { openWorkQueue } from '../work-queue.ts';
import type { Model, RunOutcome, WorkerLogLine } from './types.ts';
import { Worker } from './worker.ts';

const BIG = 'x'.repeat(64 * 1024);
const HEARTBEAT_MS = 10_000;
const BUSY_WAIT_MS = 7;
const BUSY_WAIT_MAX_MS = 50;
/** A store-trouble wait (W2): anything shorter than a heartbeat. */
const isRetryWait = (ms: number) => ms <= BUSY_WAIT_MAX_MS;

const flush = async () => {
  for (let i = 0; i < 50; i++) await new Promise((resolve) => setImmediate(resolve));
};

/**
 * A worker on a real queue over a real in-memory database, beneath which the test fills the disk (for
 * real, max_page_count) or arms an I/O error (injected beneath the statements: sim/store/storage-faults.ts
 * says why it cannot be real). Sleeps are the test's: `onSleep` decides, per sleep, whether it ends.
 */
function harness(model: Model, onSleep: (ms: number, index: number) => boolean | Promise<void>, sleeps: number[] = []) {
  const faults = new StorageFaults();
  const raw = new Database(':memory:');
  const queue = openWorkQueue({ db: faults.attach(raw), clock: new ManualClock() });
  const heartbeats: unknown[] = [];
  const watched = new Proxy(queue, {
    get(target, property, receiver) {
      if (property === 'heartbeat') {
        return (...args: unknown[]) =>
          (target.heartbeat as (...a: unknown[]) => Promise<unknown>)(...args).then(
            (answer) => (heartbeats.push(answer), answer),
            (error: unknown) => {
              heartbeats.push((error as { code?: string }).code);
              throw error;
            },
          );
      }
      return Reflect.get(target, property, receiver);
    },
  }) as WorkQueue;
  const outcomes: RunOutcome[] = [];
  const logs: WorkerLogLine[] = [];
  const workerClock = new ManualClock();
  const worker = new Worker({
    queue: watched,
    workerId: 'w1',
    model,
    tools: [],
    waiter: {
      sleep: (ms) => {
        const ends = onSleep(ms, sleeps.push(ms) - 1);
        return ends === true ? Promise.resolve() : ends === false ? new Promise<void>(() => {}) : ends;
      },
    },
    clock: workerClock,
    // The jitter's draw is fixed at its top, so each wait is the backoff itself: 7, 14, 28, 50, 50, ...
    random: { next: () => 0.999999 },
    heartbeatMs: HEARTBEAT_MS,
    busyWaitMs: BUSY_WAIT_MS,
    busyWaitMaxMs: BUSY_WAIT_MAX_MS,
    log: (line) => logs.push(line),
    onOutcome: (outcome) => outcomes.push(outcome),
  });
  return { faults, raw, queue, worker, outcomes, logs, heartbeats, workerClock };
}

function fill(raw: Database.Database): () => void {
  const room = raw.pragma('max_page_count', { simple: true }) as number;
  raw.pragma(`max_page_count = ${raw.pragma('page_count', { simple: true }) as number}`);
  return () => void raw.pragma(`max_page_count = ${room}`);
}

describe('the worker runtime recovers from a full disk and an I/O error (issue 15)', () => {
  it('a checkpoint that meets a full disk is retried, not failed: once there is room the run completes on its first attempt', async () => {
    let empty: (() => void) | undefined;
    const setup = harness({ decide: async () => ({ toolCalls: [], final: { blob: BIG }, usage: { inputTokens: 1, outputTokens: 1 } }) }, (ms) => {
      if (!isRetryWait(ms)) return false;
      // The first retry finds the disk still full; room comes back before the second.
      if (empty !== undefined && setup.logs.filter((line) => /disk_full/.test(line.message)).length >= 2) {
        empty();
        empty = undefined;
      }
      return true;
    });
    const { queue, worker, outcomes, logs, raw } = setup;
    const taskId = (await queue.enqueue(request({ tenant: 'a' }))) as { ok: true; taskId: number };
    empty = fill(raw);
    expect(await worker.claimOne()).toBe(true);
    await flush();
    expect(outcomes).toEqual([{ kind: 'completed', taskId: taskId.taskId, outcome: 'done' }]);
    expect(logs.filter((line) => /checkpoint A: the database refused the call \(disk_full\), attempt \d+; retrying in \d+ ms/.test(line.message))).toHaveLength(2);
    // No attempt burned: no fail was written, the task was never scheduled for a retry.
    const events = await queue.events(taskId.taskId);
    expect(events.map((event) => event.type)).not.toContain('retry_scheduled');
    expect(await queue.get(taskId.taskId)).toMatchObject({ state: 'done', attempts: 1 });
    worker.stop();
    await queue.close();
  });

  it('a heartbeat that meets an I/O error skips one beat: the next beat renews the lease, and the run completes', async () => {
    let decide!: (value: Awaited<ReturnType<Model['decide']>>) => void;
    const setup = harness({ decide: () => new Promise((resolve) => (decide = resolve)) }, (ms, index) => {
      if (ms !== HEARTBEAT_MS) return false;
      // The first heartbeat meets an I/O error; the second goes through; then the beats stop.
      if (index === 0) setup.faults.armIoError(0, () => {});
      return index <= 1;
    });
    const { queue, worker, outcomes, heartbeats } = setup;
    const enqueued = (await queue.enqueue(request({ tenant: 'a' }))) as { ok: true; taskId: number };
    expect(await worker.claimOne()).toBe(true);
    await flush();
    expect(heartbeats).toMatchObject(['io_error', { ok: true, cancelRequested: false }]);
    decide({ toolCalls: [], final: 'ok', usage: { inputTokens: 1, outputTokens: 1 } });
    await flush();
    expect(outcomes).toEqual([{ kind: 'completed', taskId: enqueued.taskId, outcome: 'done' }]);
    worker.stop();
    await queue.close();
  });

  it('a claim that meets an I/O error finds nothing this time, without a crash; the next claim takes the task', async () => {
    const setup = harness({ decide: async () => ({ toolCalls: [], final: 'ok', usage: { inputTokens: 1, outputTokens: 1 } }) }, () => false);
    const { queue, worker, faults, outcomes } = setup;
    const enqueued = (await queue.enqueue(request({ tenant: 'a' }))) as { ok: true; taskId: number };
    const fired: string[] = [];
    faults.armIoError(0, (sql) => fired.push(sql));
    expect(await worker.claimOne()).toBe(false);
    expect(fired).toHaveLength(1);
    expect(await queue.get(enqueued.taskId)).toMatchObject({ state: 'ready', generation: 0 });
    expect(await worker.claimOne()).toBe(true);
    await flush();
    expect(outcomes).toEqual([{ kind: 'completed', taskId: enqueued.taskId, outcome: 'done' }]);
    worker.stop();
    await queue.close();
  });

  it('W2: a write that keeps meeting I/O errors is retried for as long as they last, with capped exponential backoff, and the run then completes on its first attempt', async () => {
    let decide!: (value: Awaited<ReturnType<Model['decide']>>) => void;
    const sleeps: number[] = [];
    const setup = harness({ decide: () => new Promise((resolve) => (decide = resolve)) }, (ms) => isRetryWait(ms), sleeps);
    const { queue, worker, outcomes, faults } = setup;
    const enqueued = (await queue.enqueue(request({ tenant: 'a' }))) as { ok: true; taskId: number };
    expect(await worker.claimOne()).toBe(true);
    await flush();
    const fired: string[] = [];
    for (let i = 0; i < 20; i++) faults.armIoError(0, (sql) => fired.push(sql));
    decide({ toolCalls: [], final: 'ok', usage: { inputTokens: 1, outputTokens: 1 } });
    for (let i = 0; i < 10 && outcomes.length === 0; i++) await flush();
    // Every armed error met a write of the run (checkpoint A, 20 times), none of them ended it.
    expect(fired).toHaveLength(20);
    expect(sleeps.filter(isRetryWait)).toEqual([7, 14, 28, ...Array(17).fill(50)]);
    expect(outcomes).toEqual([{ kind: 'completed', taskId: enqueued.taskId, outcome: 'done' }]);
    expect(await queue.get(enqueued.taskId)).toMatchObject({ state: 'done', generation: 1, attempts: 1 });
    worker.stop();
    await queue.close();
  });

  it('W2: a drain that gives up on a run still retrying store trouble ends it abandoned, with no terminal write; the lease is left to lapse', async () => {
    let decide!: (value: Awaited<ReturnType<Model['decide']>>) => void;
    // The first five retry waits end at once; the sixth ends when the test says, after the drain gave up.
    let endSixth!: () => void;
    const sixth = new Promise<void>((resolve) => (endSixth = resolve));
    let retries = 0;
    let draining = false;
    const setup = harness({ decide: () => new Promise((resolve) => (decide = resolve)) }, (ms) => {
      if (!isRetryWait(ms)) {
        // The drain's wait: its time passes at once.
        if (draining) setup.workerClock.advanceBy(ms);
        return draining;
      }
      retries++;
      return retries <= 5 ? true : retries === 6 ? sixth : false;
    });
    const { queue, worker, outcomes, faults } = setup;
    const enqueued = (await queue.enqueue(request({ tenant: 'a' }))) as { ok: true; taskId: number };
    expect(await worker.claimOne()).toBe(true);
    await flush();
    for (let i = 0; i < 1_000; i++) faults.armIoError(0, () => {});
    decide({ toolCalls: [], final: 'ok', usage: { inputTokens: 1, outputTokens: 1 } });
    await flush();
    expect(retries).toBe(6);
    expect(outcomes).toEqual([]);
    draining = true;
    await worker.drain(1_000);
    endSixth();
    for (let i = 0; i < 10 && outcomes.length === 0; i++) await flush();
    expect(outcomes).toEqual([expect.objectContaining({ kind: 'abandoned', taskId: enqueued.taskId, generation: 1 })]);
    faults.stop();
    expect(await queue.get(enqueued.taskId)).toMatchObject({ state: 'running', generation: 1, attempts: 1 });
    await queue.close();
  });
});
