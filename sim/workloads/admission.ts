import { z } from 'zod';
import type { EnqueueRequest } from '../../src/queue/types.ts';
import { nonNegative } from '../schema-kit.ts';

/**
 * A1, A2: what the trusted caller says a task needs of the queue's named budgets (`needs`, units per
 * budget name: config.budgets) and whether it is critical work (a trusted priority class with reserved
 * headroom beyond capacity). Both go to queue.enqueue as they are, never read from the payload.
 */
export type Needs = Record<string, number>;

export const needsSchema = z
  .record(z.string().min(1, { error: 'expected a budget name' }), nonNegative(), { error: 'expected an object of budget name: units (integers >= 0)' })
  .meta({ description: 'A1: units of the queue\'s named budgets (queue.budgets) the task needs, e.g. { "browser_sessions": 1, "model_tokens_per_minute": 2000 }; passed to enqueue as `needs`.' });

export const criticalSchema = z.boolean({ error: 'expected true or false' }).meta({ description: 'A2: critical work (admitted with headroom beyond capacity, deferred rather than refused); passed to enqueue as `critical`.' });

/** The request with the needs and the critical flag set, when given (nothing is added otherwise). */
export function admitted(request: EnqueueRequest, needs: Needs | undefined, critical: boolean | undefined): EnqueueRequest {
  if (needs !== undefined && Object.keys(needs).length > 0) request.needs = { ...needs };
  if (critical === true) request.critical = true;
  return request;
}

/** Budget names a workload's needs refer to, with where (for the scenario's cross-check against queue.budgets). */
export function neededBudgets(needs: Needs | undefined): string[] {
  return Object.keys(needs ?? {});
}
