import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../queue/__test-helpers__/test-kit.ts';
import type { ClaimedTask, WorkQueue } from '../queue/types.ts';
import { openWorkQueue } from '../work-queue.ts';
import { runOneTask } from './__test-helpers__/one-run.ts';
import { runClaimedTask } from './run.ts';
import { ToolFailure, type Model, type Tool, type ToolCall } from './types.ts';

const opened: WorkQueue[] = [];
afterEach(async () => {
  for (const queue of opened.splice(0)) await queue.close();
});

/** One step of `calls`, then the final answer. */
function oneStep(calls: ToolCall[]): Model {
  return { decide: async ({ step }) => (step === 0 ? { toolCalls: calls, usage: { inputTokens: 10, outputTokens: 5 } } : { toolCalls: [], final: { status: 'resolved' }, usage: { inputTokens: 10, outputTokens: 5 } }) };
}

function runWith(model: Model, tools: Tool[]) {
  return runOneTask({ opened, model, tools, maxSteps: 4 });
}

const read = (name: string): Tool => ({ name, readOnly: true, call: async () => ({ ok: name }) });
const write = (name: string, fails = false): Tool => ({
  name,
  readOnly: false,
  call: async () => {
    if (fails) throw new ToolFailure('business_error', `${name} refused`);
    return { written: name };
  },
});

describe('A7 in the worker runtime', () => {
  it('fails a run whose plan has a cycle before any call, not retried (invalid_plan)', async () => {
    let called = 0;
    const counting: Tool = { name: 'lookup', readOnly: true, call: async () => ++called };
    const { queue, taskId, outcome } = await runWith(
      oneStep([
        { id: 'a', tool: 'lookup', args: {}, dependsOn: ['b'] },
        { id: 'b', tool: 'lookup', args: {}, dependsOn: ['a'] },
      ]),
      [counting],
    );
    expect(outcome).toMatchObject({ kind: 'failed', errorClass: 'invalid_plan' });
    expect(called).toBe(0);
    expect((await queue.get(taskId))?.errorMessage).toMatch(/^the calls a, b depend on each other in a cycle/);
  });

  it('records partial success in checkpoint B and goes on to the answer: the ticket updated, the e-mail failed', async () => {
    const { queue, taskId, outcome } = await runWith(
      oneStep([
        { id: 'T1', tool: 'lookup_order', args: {} },
        { id: 'T2', tool: 'search_kb', args: {} },
        { id: 'T3', tool: 'update_ticket', args: { id: 17 }, dependsOn: ['T1', 'T2'], resource: 'ticket:17' },
        { id: 'T4', tool: 'send_email', args: { to: 'customer' }, dependsOn: ['T3'], resource: 'mail:customer' },
      ]),
      [read('lookup_order'), read('search_kb'), write('update_ticket'), write('send_email', true)],
    );
    expect(outcome).toMatchObject({ kind: 'completed' });
    const checkpoint = await queue.lastCheckpoint(taskId);
    const state = checkpoint?.state as { messages: { role: string; results?: { toolCallId: string; status?: string }[] }[] };
    const tools = state.messages.find((message) => message.role === 'tool');
    expect(tools?.results?.map((result) => [result.toolCallId, result.status])).toEqual([['T1', 'ok'], ['T2', 'ok'], ['T3', 'ok'], ['T4', 'failed']]);
    expect((await queue.effects()).map((effect) => effect.action)).toEqual(['update_ticket']);
  });

  it('resumes a graph from checkpoint A under the effect ledger: the recorded write returns its first result, the rest runs in graph order', async () => {
    const bed = testBed();
    let mailDown = true;
    const tools = ['lookup_order', 'search_kb', 'update_ticket', 'send_email'].map((name) =>
      bed.tool(name, name.startsWith('lookup') || name.startsWith('search'), () => {
        // The first attempt's e-mail meets a network error: the attempt fails and is retried.
        if (name === 'send_email' && mailDown) throw new ToolFailure('transient_network', 'connection reset');
      }),
    );
    const taskId = await bed.enqueue();
    expect(await bed.run('w1', T1_T4, tools)).toMatchObject({ kind: 'retry', errorClass: 'transient_network' });
    expect(bed.calls).toEqual(['lookup_order', 'search_kb', 'update_ticket', 'send_email']);
    mailDown = false;
    bed.calls.length = 0;
    bed.clock.advance(60_000);
    const decisionsBefore = bed.decisions();
    const outcome = await bed.run('w2', T1_T4, tools);
    expect(outcome).toMatchObject({ kind: 'completed' });
    // Checkpoint A held the graph: the model was not asked again for step 0 (only for the answer); the
    // reads ran again, the ticket update came from the ledger (its tool not called), the e-mail after it.
    expect(bed.decisions() - decisionsBefore).toBe(1);
    expect(bed.calls).toEqual(['lookup_order', 'search_kb', 'send_email']);
    const events = await bed.queue.events(taskId);
    expect(events.filter((event) => event.type === 'task_resumed').map((event) => event.data.checkpointKind)).toEqual(['A']);
    expect((await bed.queue.effects()).map((effect) => [effect.action, effect.generation])).toEqual([['update_ticket', 1], ['send_email', 2]]);
    const checkpoint = await bed.queue.lastCheckpoint(taskId);
    const state = checkpoint?.state as { messages: { role: string; results?: { toolCallId: string; status?: string }[] }[] };
    expect(state.messages.find((message) => message.role === 'tool')?.results?.map((result) => [result.toolCallId, result.status])).toEqual([['T1', 'ok'], ['T2', 'ok'], ['T3', 'ok'], ['T4', 'ok']]);
  });

  it('settles a resumed step\'s recorded writes first: a read failing on the re-run does not unmake the update that happened', async () => {
    const bed = testBed();
    let attempt = 1;
    const tools = ['lookup_order', 'search_kb', 'update_ticket', 'send_email'].map((name) =>
      bed.tool(name, name.startsWith('lookup') || name.startsWith('search'), () => {
        if (attempt === 1 && name === 'send_email') throw new ToolFailure('transient_network', 'connection reset');
        if (attempt === 2 && name === 'search_kb') throw new ToolFailure('business_error', 'the knowledge base refused');
      }),
    );
    const taskId = await bed.enqueue();
    expect(await bed.run('w1', T1_T4, tools)).toMatchObject({ kind: 'retry' });
    attempt = 2;
    bed.calls.length = 0;
    bed.clock.advance(60_000);
    expect(await bed.run('w2', T1_T4, tools)).toMatchObject({ kind: 'completed' });
    // T2 failed this time, but T3 had updated the ticket (the ledger says so): T3 is ok, and T4, which
    // depends on T3 alone, is sent.
    expect(bed.calls).toEqual(['lookup_order', 'search_kb', 'send_email']);
    const state = (await bed.queue.lastCheckpoint(taskId))?.state as { messages: { role: string; results?: { toolCallId: string; status?: string }[] }[] };
    expect(state.messages.find((message) => message.role === 'tool')?.results?.map((result) => [result.toolCallId, result.status])).toEqual([['T1', 'ok'], ['T2', 'failed'], ['T3', 'ok'], ['T4', 'ok']]);
  });

  it('checks the deadline before each graph call: past it, no further call starts and the task ends expired', async () => {
    const bed = testBed();
    // The update takes the run past its deadline.
    const tools = [bed.tool('update_ticket', false, () => bed.clock.advance(10_000)), bed.tool('send_email', false)];
    await bed.enqueue({ deadline: bed.clock.now() + 5_000 });
    const plan: ToolCall[] = [
      { id: 'T3', tool: 'update_ticket', args: { id: 17 }, resource: 'ticket:17' },
      { id: 'T4', tool: 'send_email', args: { to: 'customer' }, dependsOn: ['T3'], resource: 'mail:customer' },
    ];
    expect(await bed.run('w1', plan, tools)).toMatchObject({ kind: 'expired' });
    expect(bed.calls).toEqual(['update_ticket']);
  });

  it('checks the deadline again right before an effect: the ledger lookup and the lease check before it can take the run past it', async () => {
    // Found by a calibration seed (cancel-and-deadline, root `calibration`): the heartbeat before the
    // effect was answered after the deadline, and the effect was sent anyway (Q14, I8).
    const bed = testBed();
    await bed.enqueue({ deadline: bed.clock.now() + 5_000 });
    const slowLease = new Proxy(bed.queue, {
      get(target, property) {
        if (property === 'heartbeat') {
          return async (...args: Parameters<WorkQueue['heartbeat']>) => {
            bed.clock.advance(6_000);
            return target.heartbeat(...args);
          };
        }
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const plan: ToolCall[] = [{ id: 'T4', tool: 'send_email', args: { to: 'customer' }, resource: 'mail:customer' }];
    expect(await bed.run('w1', plan, [bed.tool('send_email', false)], slowLease)).toMatchObject({ kind: 'expired' });
    expect(bed.calls).toEqual([]);
  });
});

/** Seed 003's T1..T4 with a ticket update and an e-mail. */
const T1_T4: ToolCall[] = [
  { id: 'T1', tool: 'lookup_order', args: {} },
  { id: 'T2', tool: 'search_kb', args: {} },
  { id: 'T3', tool: 'update_ticket', args: { id: 17 }, dependsOn: ['T1', 'T2'], resource: 'ticket:17' },
  { id: 'T4', tool: 'send_email', args: { to: 'customer' }, dependsOn: ['T3'], resource: 'mail:customer' },
];

/** One task on a queue of its own, run attempt by attempt by the real runtime on one manual clock. */
function testBed() {
  const clock = new ManualClock();
  const queue = openWorkQueue({ db: ':memory:', clock });
  opened.push(queue);
  const calls: string[] = [];
  let decisions = 0;
  return {
    clock,
    queue,
    calls,
    decisions: () => decisions,
    tool: (name: string, readOnly: boolean, effect: () => void = () => {}): Tool => ({
      name,
      readOnly,
      call: async () => {
        calls.push(name);
        effect();
        return { done: name };
      },
    }),
    async enqueue(extra: { deadline?: number } = {}) {
      const enqueued = await queue.enqueue({ tenant: 'acme', topic: 't', version: 1, priority: 5, input: {}, ...extra });
      if (!enqueued.ok) throw new Error(enqueued.message);
      return enqueued.taskId;
    },
    /** Claims the task as `workerId` and runs it to the attempt's end: step 0 is `plan`, then the answer. */
    async run(workerId: string, plan: ToolCall[], tools: Tool[], through: WorkQueue = queue) {
      const claimed = await queue.claim(workerId);
      if (!claimed.ok) throw new Error('nothing to claim');
      const model: Model = {
        decide: async ({ step }) => {
          decisions++;
          return step === 0 ? { toolCalls: plan, usage: { inputTokens: 10, outputTokens: 5 } } : { toolCalls: [], final: { status: 'resolved' }, usage: { inputTokens: 10, outputTokens: 5 } };
        },
      };
      const deps = { queue: through, waiter: { sleep: () => new Promise<void>(() => {}) }, clock, workerId, model, tools: new Map(tools.map((t) => [t.name, t])), heartbeatMs: 10_000, maxSteps: 4, toolTimeoutMs: 20_000, busyRetries: 0, busyWaitMs: 100, log: () => {} };
      return runClaimedTask(deps, claimed.task as ClaimedTask);
    },
  };
}
