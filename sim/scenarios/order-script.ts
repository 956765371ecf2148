import type { TaskScript } from '../actors/scripted-model.ts';
import type { ScenarioSpec, WorkloadSpec } from '../scenario.ts';

/**
 * Seed 002's stub model: a shopping round of four steps (planner, item search, compare and confirm,
 * summary) and a final answer, with fixed usage per call and the order confirmation at step 3. The
 * confirmation is the one write: a card at the provider, keyed by run, action and payload (R3).
 */
export const ORDER_SCRIPT: TaskScript = {
  steps: [
    { calls: [{ tool: 'search_kb', args: { ref: 'planner', query: 'running shoes under 600' } }], inputTokens: 1_200, outputTokens: 300 },
    {
      calls: [
        { tool: 'lookup_order', args: { ref: 'item_search', store: 'amazon' } },
        { tool: 'lookup_order', args: { ref: 'item_search', store: 'jd' } },
      ],
      inputTokens: 1_800,
      outputTokens: 450,
    },
    {
      calls: [
        { tool: 'check_payment', args: { ref: 'compare', items: ['item-a', 'item-b'] } },
        // Items in another order than the fingerprint sorts them: the request key must not care (R3).
        { tool: 'confirm_order', args: { order: 'cart', items: [{ id: 'item-b', qty: 2 }, { id: 'item-a', qty: 1 }] } },
      ],
      inputTokens: 2_400,
      outputTokens: 600,
    },
    { calls: [{ tool: 'search_kb', args: { ref: 'shopping_summary' } }], inputTokens: 1_500, outputTokens: 400 },
  ],
  answer: { status: 'resolved', summary: 'a shortlist of two pairs with reasons, and an order confirmation card' },
  finalTokens: { inputTokens: 2_000, outputTokens: 700 },
};

/** The write action whose confirmation cards are counted at the provider. */
export const ORDER_ACTION = 'confirm_order';

/**
 * What seed 002's three durable-run scenarios share: every task runs ORDER_SCRIPT and tasks arrive in
 * rounds, with fixed model and tool latencies so a seed only moves the faults.
 */
export function orderRounds(rounds: NonNullable<WorkloadSpec['rounds']>): Pick<ScenarioSpec, 'workload' | 'model' | 'tools' | 'supervisor'> {
  return {
    workload: {
      tenants: ['acme', 'globex', 'initech'],
      topics: 0,
      newVersionProbability: 0,
      priorities: [10, 10],
      arrivalWindowMs: 0,
      writeProbability: 1,
      steps: [4, 4],
      callsPerStep: [1, 2],
      tokensPerCall: [1_000, 2_000],
      tiers: ['standard'],
      script: ORDER_SCRIPT,
      rounds: { ...rounds },
    },
    model: { latencyMs: [2_000, 2_000] },
    tools: { latencyMs: [800, 800] },
    supervisor: { scanMs: 5_000, confirmDelayMs: 10_000 },
  };
}
