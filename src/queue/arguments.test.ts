import { afterEach, describe, expect, it } from 'vitest';
import { ClosedError, InputError } from './errors.ts';
import { checkAndCloseQueues, claimOk, enqueueOk, fingerprint, openTestQueue, request } from './__test-helpers__/test-kit.ts';
import type { WorkQueue } from './types.ts';

afterEach(checkAndCloseQueues);

const USAGE = { inputTokens: 1, outputTokens: 1, modelCalls: 1 };

/** Every queue call that takes a task id, called with a given id and otherwise good arguments. */
const BY_TASK_ID: [string, (queue: WorkQueue, taskId: number) => unknown][] = [
  ['get', (queue, id) => queue.get(id)],
  ['events', (queue, id) => queue.events(id)],
  ['cancel', (queue, id) => queue.cancel(id)],
  ['heartbeat', (queue, id) => queue.heartbeat(id, 'w1', 1)],
  ['complete', (queue, id) => queue.complete(id, 'w1', 1, null)],
  ['fail', (queue, id) => queue.fail(id, 'w1', 1, { errorClass: 'rate_limited', message: '' })],
  ['appendEvent', (queue, id) => queue.appendEvent(id, 'w1', 1, 'note', {})],
  ['acknowledgeCancel', (queue, id) => queue.acknowledgeCancel(id, 'w1', 1)],
  ['confirmStopped', (queue, id) => queue.confirmStopped(id, 1, 'supervisor')],
  ['checkpoint', (queue, id) => queue.checkpoint(id, 'w1', 1, { kind: 'A', step: 0, state: {}, usage: USAGE })],
  ['lastCheckpoint', (queue, id) => queue.lastCheckpoint(id)],
];

/** Every call made by a lease holder, called with a given worker id and generation. */
const BY_HOLDER: [string, (queue: WorkQueue, id: number, workerId: string, generation: number) => unknown][] = [
  ['heartbeat', (queue, id, worker, generation) => queue.heartbeat(id, worker, generation)],
  ['complete', (queue, id, worker, generation) => queue.complete(id, worker, generation, null)],
  ['fail', (queue, id, worker, generation) => queue.fail(id, worker, generation, { errorClass: 'rate_limited', message: '' })],
  ['appendEvent', (queue, id, worker, generation) => queue.appendEvent(id, worker, generation, 'note', {})],
  ['acknowledgeCancel', (queue, id, worker, generation) => queue.acknowledgeCancel(id, worker, generation)],
  ['checkpoint', (queue, id, worker, generation) => queue.checkpoint(id, worker, generation, { kind: 'A', step: 0, state: {}, usage: USAGE })],
];

/** Calls `call`, expects an InputError naming `field`, and proves nothing was written. */
async function expectInputError(queue: WorkQueue, call: () => unknown, field: string): Promise<void> {
  const before = await fingerprint(queue);
  let thrown: unknown;
  try {
    // Every method is async: a bad argument is a rejection, never a synchronous throw.
    const answer = call();
    expect(answer, `${field}: the call answers with a promise`).toBeInstanceOf(Promise);
    await answer;
  } catch (error) {
    thrown = error;
  }
  expect(thrown, `expected InputError on ${field}`).toBeInstanceOf(InputError);
  expect((thrown as InputError).field).toBe(field);
  expect((thrown as InputError).code).toBe('invalid_input');
  expect(await fingerprint(queue)).toEqual(before);
}

async function runningQueue() {
  const harness = openTestQueue();
  const id = await enqueueOk(harness.queue);
  await claimOk(harness.queue, 'w1');
  return { ...harness, id };
}

describe('bad arguments throw InputError naming the field and write nothing', () => {
  it.each(BY_TASK_ID)('%s rejects a malformed task id', async (_name, call) => {
    const { queue } = await runningQueue();
    for (const bad of [0, -1, 1.5, Number.NaN, '1', undefined, null]) {
      await expectInputError(queue, () => call(queue, bad as never), 'taskId');
    }
  });

  it.each(BY_HOLDER)('%s rejects a malformed worker id', async (_name, call) => {
    const { queue, id } = await runningQueue();
    for (const bad of ['', 5, undefined, null]) await expectInputError(queue, () => call(queue, id, bad as never, 1), 'workerId');
  });

  it.each(BY_HOLDER)('%s rejects a malformed generation', async (_name, call) => {
    const { queue, id } = await runningQueue();
    for (const bad of [-1, 1.5, Number.NaN, '1', undefined]) await expectInputError(queue, () => call(queue, id, 'w1', bad as never), 'generation');
  });

  it('claim rejects a malformed worker id', async () => {
    const { queue } = openTestQueue();
    await enqueueOk(queue);
    for (const bad of ['', 7, undefined]) await expectInputError(queue, () => queue.claim(bad as never), 'workerId');
  });

  it('confirmStopped rejects a malformed generation', async () => {
    const { queue, id } = await runningQueue();
    await expectInputError(queue, () => queue.confirmStopped(id, -1, 'supervisor'), 'generation');
  });

  it('appendEvent rejects an empty type and data that is not JSON', async () => {
    const { queue, id } = await runningQueue();
    await expectInputError(queue, () => queue.appendEvent(id, 'w1', 1, ''), 'type');
    await expectInputError(queue, () => queue.appendEvent(id, 'w1', 1, 'note', { big: 1n }), 'data');
  });

  it('complete rejects a result that is not JSON', async () => {
    const { queue, id } = await runningQueue();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    await expectInputError(queue, () => queue.complete(id, 'w1', 1, cyclic), 'result');
    await expectInputError(queue, () => queue.complete(id, 'w1', 1, new Map()), 'result');
  });
});

describe('a closed queue', () => {
  it('rejects every call with ClosedError, and close() may be repeated', async () => {
    const { queue } = openTestQueue();
    const id = await enqueueOk(queue);
    await queue.close();
    await queue.close();
    const calls: (() => unknown)[] = [
      () => queue.enqueue(request()),
      () => queue.claim('w1'),
      () => queue.get(id),
      () => queue.events(id),
      () => queue.allEvents(),
      () => queue.snapshot(),
      () => queue.listForTenant('acme'),
      () => queue.rejections(),
      () => queue.cancel(id),
      () => queue.expireLeases(),
      () => queue.incidentCandidates({ from: 0, to: 1 }),
      ...BY_HOLDER.map(([, call]) => () => call(queue, id, 'w1', 1)),
    ];
    for (const call of calls) await expect(call()).rejects.toThrow(ClosedError);
  });
});
