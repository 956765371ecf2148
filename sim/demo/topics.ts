import type { EnqueueRequest, IncidentContext } from '../../src/index.ts';

/**
 * Seed 000's four synthetic topics: two ordinary paid-timeout reports, one high-priority group meal
 * (also paid), and one "no ticket printed" report whose customer never finished paying. All of it is
 * made up, as in the article; nothing here is real traffic.
 */

export const DEMO_TENANT = 'harbour-noodles';

export interface DemoTopic {
  topic: string;
  store: string;
  /** Q4: from a trusted rule (a verified group-meal delivery time), never from what the customer wrote. */
  priority: number;
  paid: boolean;
  summary: string;
}

export const DEMO_TOPICS: readonly DemoTopic[] = [
  { topic: 'store-12/checkout-slow', store: 'store-12', priority: 0, paid: true, summary: 'checkout is slow; a paid order stays pending' },
  { topic: 'store-31/status-not-refreshing', store: 'store-31', priority: 0, paid: true, summary: 'paid, but the order status does not refresh' },
  { topic: 'store-07/group-meal', store: 'store-07', priority: 30, paid: true, summary: 'group meal, paid, leaves together soon; keep it apart from ordinary orders' },
  { topic: 'store-19/no-ticket-printed', store: 'store-19', priority: 0, paid: false, summary: 'no ticket printed; the recording shows the customer never finished paying' },
];

/**
 * Q17: verified context. Every field but the stage is shared, so the unpaid report is kept apart by
 * its stage alone, which is the article's point: the same symptom at a different stage is not
 * evidence of the same cause.
 */
export function contextFor(topic: DemoTopic): IncidentContext {
  return {
    brand: 'harbour-noodles',
    service: 'pos-checkout',
    stage: topic.paid ? 'after_payment' : 'payment',
    errorCode: 'ORDER_NOT_CONFIRMED',
    deployVersion: 'pos-2024.10.3',
    campaign: 'autumn-festival',
  };
}

export function enqueueRequest(topic: DemoTopic, version = 1, extraInput: Record<string, unknown> = {}): EnqueueRequest {
  return {
    tenant: DEMO_TENANT,
    topic: topic.topic,
    version,
    priority: topic.priority,
    store: topic.store,
    input: { summary: topic.summary, paid: topic.paid, ...extraInput },
    context: contextFor(topic),
  };
}

/** What an investigation leaves: evidence per stage, and still `needs_human` (Q12: done is not resolved). */
export interface DemoResult {
  status: 'needs_human';
  evidence: string[];
  note: string;
}

export function investigationResult(topic: DemoTopic): DemoResult {
  const evidence = topic.paid
    ? ['payment: captured by the provider', 'callback: no confirmation within the timeout', 'order: still pending in the POS', 'print: no receipt confirmation yet']
    : ['payment: not completed by the customer', 'callback: none expected before payment', 'order: awaiting payment', 'print: nothing to print before payment'];
  return { status: 'needs_human', evidence, note: 'the run ended; a person confirms with the store before anyone says it is fixed' };
}
