import { afterEach, describe, expect, it } from 'vitest';
import type { WorkQueue } from '../queue/types.ts';
import { runOneTask } from './__test-helpers__/one-run.ts';
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
});
