import { afterEach, describe, expect, it } from 'vitest';
import { checkAndCloseQueues, enqueueOk, openTestQueue } from '../queue/__test-helpers__/test-kit.ts';
import { BusyError } from '../queue/errors.ts';
import type { ClaimedTask, WorkQueue } from '../queue/types.ts';
import type { Model, RunOutcome, WorkerLogLine } from './types.ts';
import { Worker, type WorkerOptions } from './worker.ts';

afterEach(checkAndCloseQueues);

describe('Worker', () => {
  it('survives a run that meets an unexpected error: the run ends crashed, logged, with no terminal write, and the worker claims on', async () => {
    const { queue, clock } = openTestQueue();
    const broken = await enqueueOk(queue, { tenant: 'a', priority: 30 });
    const healthy = await enqueueOk(queue, { tenant: 'b', priority: 0 });
    // The queue as the worker sees it: completing the first task throws, as a bug in the core would.
    const faulty = new Proxy(queue, {
      get(target, property, receiver) {
        if (property === 'complete') {
          return async (taskId: number, ...rest: unknown[]) => {
            if (taskId === broken) throw new TypeError('the core broke');
            return (target.complete as (...args: unknown[]) => unknown)(taskId, ...rest);
          };
        }
        return Reflect.get(target, property, receiver);
      },
    }) as WorkQueue;
    const outcomes: RunOutcome[] = [];
    const logs: WorkerLogLine[] = [];
    const worker = new Worker({
      queue: faulty,
      workerId: 'w1',
      model: { decide: async () => ({ toolCalls: [], final: 'ok', usage: { inputTokens: 1, outputTokens: 1 } }) },
      tools: [],
      // Timers never fire here: no heartbeat, no tool timeout; the runs finish on their own.
      waiter: { sleep: () => new Promise<void>(() => {}) },
      clock,
      slots: 1,
      log: (line) => logs.push(line),
      onOutcome: (outcome) => outcomes.push(outcome),
    });
    expect(await worker.claimOne()).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(outcomes).toEqual([{ kind: 'crashed', taskId: broken, generation: 1, error: 'TypeError: the core broke' }]);
    expect(logs.some((line) => line.taskId === broken && /run crashed: TypeError: the core broke/.test(line.message))).toBe(true);
    // No terminal write: the task still runs under its lease, which will lapse into uncertain (Q10).
    expect(await queue.get(broken)).toMatchObject({ state: 'running', generation: 1 });
    expect(await worker.claimOne()).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(outcomes.at(-1)).toEqual({ kind: 'completed', taskId: healthy, outcome: 'done' });
    worker.stop();
  });
});

/** The queue as the worker sees it, with the methods named in `overrides` replaced. */
function withOverrides(queue: WorkQueue, overrides: Partial<Record<keyof WorkQueue, (...args: never[]) => unknown>>): WorkQueue {
  return new Proxy(queue, {
    get(target, property, receiver) {
      return Object.hasOwn(overrides, property) ? overrides[property as keyof WorkQueue] : Reflect.get(target, property, receiver);
    },
  }) as WorkQueue;
}

/** A model whose first decision waits until the test says; then the final answer. */
function heldModel() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const model: Model = {
    decide: async () => {
      await released;
      return { toolCalls: [], final: 'ok', usage: { inputTokens: 1, outputTokens: 1 } };
    },
  };
  return { model, release };
}

const answering: Model = { decide: async () => ({ toolCalls: [], final: 'ok', usage: { inputTokens: 1, outputTokens: 1 } }) };
const never = { sleep: () => new Promise<void>(() => {}) };

describe('Worker options', () => {
  it('refuses a count or a wait that is not a positive integer, naming the option', () => {
    const { queue, clock } = openTestQueue();
    const base: WorkerOptions = { queue, workerId: 'w1', model: answering, tools: [], waiter: never, clock };
    expect(() => new Worker({ ...base, slots: 0 })).toThrow(new RangeError('worker option slots must be a positive integer, got 0'));
    expect(() => new Worker({ ...base, idleWaitMs: 1.5 })).toThrow('worker option idleWaitMs must be a positive integer, got 1.5');
    expect(() => new Worker({ ...base, busyWaitMs: -1 })).toThrow('worker option busyWaitMs must be a positive integer, got -1');
    expect(() => new Worker({ ...base, maxSteps: Number.NaN })).toThrow('worker option maxSteps must be a positive integer, got NaN');
    expect(() => new Worker({ ...base, random: {} as never })).toThrow(TypeError);
  });
});

describe('Worker claim loop (W1)', () => {
  it('stopped while a claim that finds nothing is in flight: the loop ends without an idle wait', async () => {
    const { queue, clock } = openTestQueue();
    const sleeps: number[] = [];
    let worker!: Worker;
    let claims = 0;
    const stopping = withOverrides(queue, {
      claim: async (...args: never[]) => {
        claims++;
        worker.stop();
        return (queue.claim as (...a: never[]) => Promise<unknown>)(...args);
      },
    });
    worker = new Worker({ queue: stopping, workerId: 'w1', model: answering, tools: [], waiter: { sleep: async (ms) => void sleeps.push(ms) }, clock });
    await worker.runLoop();
    expect(claims).toBe(1);
    expect(sleeps).toEqual([]);
  });

  it('on a store with a change counter that does not move, reads it every changeCheckMs and claims again when the poll is due, backing off', async () => {
    const { queue, clock } = openTestQueue();
    const sleeps: number[] = [];
    let worker!: Worker;
    let claims = 0;
    const counting = withOverrides(queue, {
      changeCounter: async () => 7,
      claim: async () => {
        if (++claims === 3) worker.stop();
        return { ok: false, error: 'empty' };
      },
    });
    worker = new Worker({
      queue: counting,
      workerId: 'w1',
      model: answering,
      tools: [],
      // Each sleep is the time passing: the clock moves by it and the sleep ends.
      waiter: { sleep: async (ms) => void (sleeps.push(ms), clock.advance(ms)) },
      clock,
      idleWaitMs: 100,
      maxIdleWaitMs: 400,
      changeCheckMs: 40,
    });
    await worker.runLoop();
    // 100 ms in slices of 40, the last cut to what is left; then 200 (doubled) in slices of 40.
    expect(sleeps).toEqual([40, 40, 20, 40, 40, 40, 40, 40]);
    expect(claims).toBe(3);
  });

  it('a change counter that fails with an error that is not store trouble ends the loop with that error, and stops watching', async () => {
    const { queue, clock } = openTestQueue();
    let unwatched = 0;
    const broken = withOverrides(queue, {
      changeCounter: async () => {
        throw new TypeError('the counter broke');
      },
      watch: () => () => void unwatched++,
    });
    const worker = new Worker({ queue: broken, workerId: 'w1', model: answering, tools: [], waiter: never, clock });
    await expect(worker.runLoop()).rejects.toThrow(new TypeError('the counter broke'));
    expect(unwatched).toBe(1);
  });

  it('a redelivery whose state read fails with an error that is not store trouble is refused with it, and no run starts', async () => {
    const { queue, clock } = openTestQueue();
    await enqueueOk(queue, { tenant: 'a' });
    const claimed = await queue.claim('w1');
    if (!claimed.ok) throw new Error('nothing claimed');
    const broken = withOverrides(queue, {
      get: async () => {
        throw new RangeError('no such column');
      },
    });
    const outcomes: RunOutcome[] = [];
    const worker = new Worker({ queue: broken, workerId: 'w1', model: answering, tools: [], waiter: never, clock, onOutcome: (outcome) => outcomes.push(outcome) });
    await expect(worker.deliver(claimed.task as ClaimedTask)).rejects.toThrow('no such column');
    expect(worker.running).toBe(0);
    expect(outcomes).toEqual([]);
    expect(await queue.get(claimed.task.id)).toMatchObject({ state: 'running', generation: 1 });
  });

  it('a run that throws something that is not an Error ends crashed, described by its text', async () => {
    const { queue, clock } = openTestQueue();
    const taskId = await enqueueOk(queue, { tenant: 'a' });
    const outcomes: RunOutcome[] = [];
    const logs: WorkerLogLine[] = [];
    const model: Model = {
      decide: async () => {
        throw 'the model client gave up';
      },
    };
    const worker = new Worker({ queue, workerId: 'w1', model, tools: [], waiter: never, clock, log: (line) => logs.push(line), onOutcome: (outcome) => outcomes.push(outcome) });
    expect(await worker.claimOne()).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(outcomes).toEqual([{ kind: 'crashed', taskId, generation: 1, error: 'the model client gave up' }]);
    expect(logs.map((line) => line.message)).toContain('run crashed: the model client gave up');
    worker.stop();
  });
});

describe('Worker drain (R8)', () => {
  it('hands a run still in flight at the drain deadline back interrupted, counts it, and the run stops at its next write', async () => {
    const { queue, clock } = openTestQueue();
    const taskId = await enqueueOk(queue, { tenant: 'a' });
    const held = heldModel();
    const outcomes: RunOutcome[] = [];
    const worker = new Worker({ queue, workerId: 'w1', model: held.model, tools: [], waiter: never, clock, onOutcome: (outcome) => outcomes.push(outcome) });
    expect(await worker.claimOne()).toBe(true);
    expect(await worker.drain(0)).toBe(1);
    expect(await queue.get(taskId)).toMatchObject({ state: 'ready' });
    expect((await queue.events(taskId)).map((event) => event.type)).toContain('interrupted');
    held.release();
    for (let i = 0; i < 50 && outcomes.length === 0; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(outcomes).toEqual([expect.objectContaining({ kind: 'lost_lease', taskId, generation: 1 })]);
    expect(await queue.get(taskId)).toMatchObject({ state: 'ready' });
  });

  it('a run that gives up while an earlier hand-back is in flight is still handed back (the drain walks the runs it had when it began)', async () => {
    const { queue, clock } = openTestQueue();
    const first = await enqueueOk(queue, { tenant: 'a', priority: 30 });
    const second = await enqueueOk(queue, { tenant: 'b', priority: 0 });
    const held = heldModel();
    const model: Model = { decide: (request) => (request.taskId === first ? held.model.decide(request) : answering.decide(request)) };
    // The second run's end (and its failure report) meets a database that refuses it, so that run is
    // retrying store trouble when the drain begins.
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const faulty = withOverrides(queue, {
      complete: async (...args: never[]) => {
        if ((args as unknown[])[0] === second) throw new BusyError('complete', 1);
        return (queue.complete as (...a: never[]) => unknown)(...args);
      },
      fail: async (...args: never[]) => {
        if ((args as unknown[])[0] === second) throw new BusyError('fail', 1);
        return (queue.fail as (...a: never[]) => unknown)(...args);
      },
      interrupt: async (...args: never[]) => {
        if ((args as unknown[])[0] === first) await gate;
        return (queue.interrupt as (...a: never[]) => unknown)(...args);
      },
    });
    const sleeps: (() => void)[] = [];
    const waiter = { sleep: () => new Promise<void>((resolve) => sleeps.push(resolve)) };
    const outcomes: RunOutcome[] = [];
    const worker = new Worker({ queue: faulty, workerId: 'w1', model, tools: [], waiter, clock, slots: 2, onOutcome: (outcome) => outcomes.push(outcome) });
    expect(await worker.claimOne()).toBe(true);
    expect(await worker.claimOne()).toBe(true);
    const settle = async () => {
      for (let i = 0; i < 50; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    await settle();
    const draining = worker.drain(0);
    await settle();
    // The first hand-back waits; meanwhile the second run's retry comes due, meets the refusal again and,
    // the drain having given up on its runs, ends abandoned.
    for (const wake of sleeps.splice(0)) wake();
    await settle();
    expect(outcomes).toEqual([expect.objectContaining({ kind: 'abandoned', taskId: second })]);
    openGate();
    expect(await draining).toBe(2);
    expect(await queue.get(second)).toMatchObject({ state: 'ready' });
    expect(await queue.get(first)).toMatchObject({ state: 'ready' });
    held.release();
  });

  it('a hand-back that fails with an error that is not store trouble ends the drain with that error; nothing was handed back', async () => {
    const { queue, clock } = openTestQueue();
    const taskId = await enqueueOk(queue, { tenant: 'a' });
    const held = heldModel();
    const broken = withOverrides(queue, {
      interrupt: async () => {
        throw new TypeError('the core broke');
      },
    });
    const outcomes: RunOutcome[] = [];
    const worker = new Worker({ queue: broken, workerId: 'w1', model: held.model, tools: [], waiter: never, clock, onOutcome: (outcome) => outcomes.push(outcome) });
    expect(await worker.claimOne()).toBe(true);
    await expect(worker.drain(0)).rejects.toThrow(new TypeError('the core broke'));
    expect(await queue.get(taskId)).toMatchObject({ state: 'running', generation: 1 });
    // The run was not handed back, so it may finish: it completes.
    held.release();
    for (let i = 0; i < 50 && outcomes.length === 0; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(outcomes).toEqual([{ kind: 'completed', taskId, outcome: 'done' }]);
  });
});
