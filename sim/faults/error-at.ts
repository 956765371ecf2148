import { z } from 'zod';
import { FATAL_ERROR_CLASSES, RETRYABLE_ERROR_CLASSES } from '../../src/queue/types.ts';
import { ToolFailure } from '../../src/worker/types.ts';
import { oneOf, part } from '../schema-kit.ts';
import type { PointInjector } from './injector.ts';
import { ERROR_POINTS, pointScopeFields, scopeProblems } from './point-scope.ts';

/**
 * A call that fails at a known moment: the model or tool call a worker starts at the point fails at once
 * with an error class, as a provider answering 429 (rate_limited) would, and the run meets it as it
 * meets any failure of its model or tools (a retryable class is retried with backoff, Q16; another ends
 * the task failed). The `tool-error` rate draws failures per call from the seed; this one puts a single
 * failure where a scenario needs it on every seed (tenant-pause: a task backing off when the pause
 * lands). `tenant` counts only the calls of that tenant's runs.
 */
export const errorAtFault = part(
  'error-at',
  {
    point: oneOf(ERROR_POINTS),
    errorClass: oneOf([...RETRYABLE_ERROR_CLASSES, ...FATAL_ERROR_CLASSES])
      .default('rate_limited')
      .meta({ description: "The error class the call fails with; default 'rate_limited'." }),
    occurrence: pointScopeFields.occurrence,
    fromMs: pointScopeFields.fromMs,
    toMs: pointScopeFields.toMs,
    target: pointScopeFields.target,
    tenant: z.string({ error: 'expected a string' }).min(1).optional().meta({ description: "Count only the calls of this tenant's runs." }),
    label: pointScopeFields.label,
  },
  'The model or tool call a worker starts at a point fails with an error class (a 429 from a provider), at a moment the scope picks.',
).superRefine(scopeProblems);
export type ErrorAtFault = z.output<typeof errorAtFault>;

export const errorAt: PointInjector<ErrorAtFault> = {
  kind: 'error-at',
  points: ERROR_POINTS,
  fire: (fault, point, incarnation, _atNextAwait, { world }) => {
    world.history.note('error-at', incarnation.id, { at: point, errorClass: fault.errorClass, ...(fault.label === undefined ? {} : { fault: fault.label }) });
    return { fails: new ToolFailure(fault.errorClass, `${point === 'before_model_call' ? 'model' : 'tool'}: simulated ${fault.errorClass} (error-at)`) };
  },
};
