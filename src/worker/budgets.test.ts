import { afterEach, describe, expect, it } from 'vitest';
import type { BudgetSpec, WorkQueue } from '../queue/types.ts';
import { runOneTask } from './__test-helpers__/one-run.ts';
import type { Model, Tool } from './types.ts';

const opened: WorkQueue[] = [];
afterEach(async () => {
  for (const queue of opened.splice(0)) await queue.close();
});

/** A model of `steps` tool steps then an answer, each call using `tokens` tokens. */
function model(steps: number, tokens: number): Model {
  return {
    decide: async ({ step }) =>
      step < steps
        ? { toolCalls: [{ id: `c${step}`, tool: 'lookup', args: { step } }], usage: { inputTokens: tokens, outputTokens: 0 } }
        : { toolCalls: [], final: { status: 'resolved' }, usage: { inputTokens: tokens, outputTokens: 0 } },
  };
}

const lookup: Tool = { name: 'lookup', readOnly: true, call: async () => ({ ok: true }) };

function runOne(budgets: Record<string, BudgetSpec>, needs: Record<string, number>, steps: number, tokens: number) {
  return runOneTask({ opened, config: { budgets }, request: { needs }, model: model(steps, tokens), tools: [lookup] });
}

describe('A1 in the worker runtime: a further model call reserves its metered budgets first', () => {
  it('reserves before every model call after the claim-covered first, and gives back what the run did not use', async () => {
    const budgets = { tokens: { kind: 'rate', capacity: 1_000, refill: 0, periodMs: 60_000, meter: 'tokens' } } as const;
    const { queue, outcome, taskId } = await runOne(budgets, { tokens: 100 }, 2, 30);
    expect(outcome).toMatchObject({ kind: 'completed' });
    const events = await queue.events(taskId);
    expect(events.filter((event) => event.type === 'budget_reserved').map((event) => event.data)).toEqual([{ reserved: { tokens: 100 } }, { reserved: { tokens: 100 } }]);
    // Three calls of 30 tokens were reserved 300 and used 90: 210 come back at the end.
    expect(await queue.reservations()).toMatchObject([{ reserved: 300, consumed: 90, released: 210 }]);
    expect((await queue.budgetLevels())[0]).toMatchObject({ budget: 'tokens', level: 910 });
  });

  it('fails the attempt rate_limited when the bucket cannot cover the next call, so it backs off and retries', async () => {
    const budgets = { tokens: { kind: 'rate', capacity: 150, refill: 150, periodMs: 60_000, meter: 'tokens' } } as const;
    const { queue, outcome, taskId } = await runOne(budgets, { tokens: 100 }, 2, 30);
    expect(outcome).toMatchObject({ kind: 'retry', errorClass: 'rate_limited' });
    expect((await queue.get(taskId))?.state).toBe('ready');
    // The attempt used 30 of its 100: 70 went back when the retry freed its slot.
    expect(await queue.reservations()).toMatchObject([{ reserved: 100, consumed: 30, released: 70 }]);
  });

  it('ends with budget_exhausted when a per-run total cannot grant the next call', async () => {
    const budgets = { run_tokens: { kind: 'total', limit: 150, per: 'run', meter: 'tokens' } } as const;
    const { queue, outcome, taskId } = await runOne(budgets, { run_tokens: 100 }, 3, 30);
    expect(outcome).toEqual({ kind: 'budget_exhausted', taskId, budget: 'run_tokens' });
    expect((await queue.get(taskId))?.state).toBe('failed');
    expect((await queue.events(taskId)).at(-1)?.data).toMatchObject({ reason: 'budget_exhausted', budget: 'run_tokens' });
  });
});
