import type { TaskScript } from '../actors/scripted-model.ts';

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
