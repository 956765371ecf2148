import { z } from 'zod';
import type { ExpectationKind } from './types.ts';

interface HistoryCount {
  kind: 'history-count';
  /** An operation of the history: claim, heartbeat, checkpoint, complete, enqueue, confirmStopped, ... */
  op: string;
  /** 'ok' counts successes; any other value counts failures with that reason (quota, empty, stale_lease, queue_full, db_busy, ...). */
  outcome: string;
  /** Only operations by actors whose name starts with this (e.g. 'w0#', 'supervisor', 'client'). */
  actor?: string;
  atLeast?: number;
  atMost?: number;
}

/**
 * How many recorded operations ended a given way, e.g. "claims were refused `quota` at least 10 times"
 * (the workers really raced for the slots), or "no complete was refused". Counted from the history
 * (S6), which records every call with its result.
 */
export const historyCount: ExpectationKind<HistoryCount> = {
  kind: 'history-count',
  class: 'liveness',
  description: 'operations of a kind (claim, complete, ...) ended ok, or failed with a given reason, at least / at most so many times',
  schema: z
    .strictObject({
      kind: z.literal('history-count'),
      op: z.string().min(1),
      outcome: z.string().min(1),
      actor: z.string().min(1).optional(),
      atLeast: z.number().int().min(0).optional(),
      atMost: z.number().int().min(0).optional(),
    })
    .refine((spec) => spec.atLeast !== undefined || spec.atMost !== undefined, { message: 'give atLeast, atMost or both' })
    .refine((spec) => spec.atMost === undefined || spec.atLeast === undefined || spec.atLeast <= spec.atMost, { message: 'atLeast is above atMost', path: ['atLeast'] }),
  check(spec, run) {
    let count = 0;
    for (const entry of run.history.entries()) {
      if (entry.type !== 'ok' && entry.type !== 'fail') continue;
      if (entry.op !== spec.op || (spec.actor !== undefined && !entry.actor.startsWith(spec.actor))) continue;
      if (spec.outcome === 'ok' ? entry.type === 'ok' : entry.type === 'fail' && entry.reason === spec.outcome) count++;
    }
    const what = `${spec.op} ${spec.outcome === 'ok' ? 'succeeded' : `failed ${spec.outcome}`}${spec.actor === undefined ? '' : ` (actors ${spec.actor}*)`}`;
    const problems: string[] = [];
    if (spec.atLeast !== undefined && count < spec.atLeast) problems.push(`${what} ${count} time(s), expected at least ${spec.atLeast}`);
    if (spec.atMost !== undefined && count > spec.atMost) problems.push(`${what} ${count} time(s), expected at most ${spec.atMost}`);
    return problems;
  },
};
