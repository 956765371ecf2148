import { z } from 'zod';
import type { ExpectationKind } from './types.ts';

const STATUSES = ['enqueued', 'duplicate', 'replaced', 'superseded'] as const;
const ERRORS = ['idempotency_conflict', 'queue_full', 'expired', 'invalid_input', 'exceeds_budget'] as const;

interface EnqueueResultSpec {
  kind: 'enqueue-result';
  /** The label of the request (an explicit task's label, else its topic); resends carry the same label. */
  label: string;
  /** Which request with that label, from 1 in arrival order; default: every one of them. */
  occurrence?: number;
  /** The request was accepted with this status ... */
  status?: (typeof STATUSES)[number];
  /** ... or refused with this error. */
  error?: (typeof ERRORS)[number];
  /** For a refusal: the queue recorded it (a rejection row with this tenant, topic, version and reason, at that time). */
  recorded?: boolean;
}

/**
 * What the queue answered to an enqueue: accepted as enqueued, duplicate (Q1), replaced (Q2) or
 * superseded, or refused queue_full (Q3), idempotency_conflict, expired or invalid_input. A refusal
 * must be explicit; with `recorded` it must also be in the queue's rejection log (I4: nothing is
 * dropped silently).
 */
export const enqueueResult: ExpectationKind<EnqueueResultSpec> = {
  kind: 'enqueue-result',
  class: 'safety',
  description: 'an enqueue of a named request was accepted with this status, or refused with this error (and the refusal recorded)',
  schema: z
    .strictObject({
      kind: z.literal('enqueue-result'),
      label: z.string().min(1),
      occurrence: z.number().int().min(1).optional(),
      status: z.enum(STATUSES).optional(),
      error: z.enum(ERRORS).optional(),
      recorded: z.boolean().optional(),
    })
    .refine((spec) => (spec.status === undefined) !== (spec.error === undefined), { message: 'give exactly one of status or error' })
    .refine((spec) => spec.recorded === undefined || spec.error !== undefined, { message: 'recorded applies to an error', path: ['recorded'] }),
  check(spec, run) {
    const requests = run.enqueued.filter(({ arrival }) => (arrival.label ?? arrival.request.topic) === spec.label);
    if (requests.length === 0) return [`no request is labelled '${spec.label}'`];
    const chosen = spec.occurrence === undefined ? requests.map((request, index) => ({ request, n: index + 1 })) : [{ request: requests[spec.occurrence - 1], n: spec.occurrence }];
    const problems: string[] = [];
    for (const { request, n } of chosen) {
      const where = `request ${n} of '${spec.label}'`;
      if (request === undefined) {
        problems.push(`${where}: there are only ${requests.length} requests with that label`);
        continue;
      }
      const { arrival, result } = request;
      const at = `at +${arrival.atMs} ms`;
      const got = result.ok ? `accepted ${result.status}` : `refused ${result.error}`;
      if (spec.status !== undefined && !(result.ok && result.status === spec.status)) problems.push(`${where} ${at} was ${got}, expected accepted ${spec.status}`);
      if (spec.error !== undefined && !(!result.ok && result.error === spec.error)) problems.push(`${where} ${at} was ${got}, expected refused ${spec.error}`);
      if (spec.recorded === true && !result.ok && result.error === spec.error) {
        // The k-th refusal of this (tenant, topic, version) with this reason needs a k-th rejection row.
        const { tenant, topic, version } = arrival.request;
        const sameKey = (candidate: { tenant: string; topic: string; version: number }) => candidate.tenant === tenant && candidate.topic === topic && candidate.version === version;
        const upTo = run.enqueued.slice(0, run.enqueued.indexOf(request) + 1);
        const refusals = upTo.filter((other) => sameKey(other.arrival.request) && !other.result.ok && other.result.error === spec.error).length;
        const rows = run.final.rejections.filter((rejection) => sameKey(rejection) && rejection.reason === spec.error).length;
        if (rows < refusals) problems.push(`${where} ${at} was refused ${spec.error} but the queue recorded ${rows} such rejection(s) for ${refusals} refusal(s) of ${tenant}/${topic} v${version}`);
      }
    }
    return problems;
  },
};
