import type { z } from 'zod';
import { nonNegative, part, text } from '../schema-kit.ts';
import type { TimedInjector } from './injector.ts';

/**
 * A2 operator actions (seed 004's drill: "pause a tenant while it has pending work, confirm that no new
 * lease appears"): at atMs the operator calls queue.pauseTenant(tenant, reason), and at a later
 * resume-tenant queue.resumeTenant(tenant). Each call is recorded in the history as the operator's
 * `pauseTenant` (args [tenant, reason]) or `resumeTenant` (args [tenant]) and retried while the
 * scheduler is down, like the operator's cancels. A tenant still paused when the safety phase ends is
 * resumed by the operator as the liveness phase begins (S5: everyone recovers), so its work drains.
 */
export const pauseTenantFault = part(
  'pause-tenant',
  {
    atMs: nonNegative().meta({ description: 'When, in ms from the start of the run (within the safety phase).' }),
    tenant: text().meta({ description: 'The tenant to pause.' }),
    reason: text().default('operator').meta({ description: "The reason recorded with the pause; default 'operator'." }),
  },
  'The operator pauses a tenant (queue.pauseTenant): it gets no new lease, running leases continue (A2).',
);
export type PauseTenantFault = z.output<typeof pauseTenantFault>;

export const resumeTenantFault = part(
  'resume-tenant',
  {
    atMs: nonNegative().meta({ description: 'When, in ms from the start of the run (within the safety phase).' }),
    tenant: text().meta({ description: 'The tenant to resume.' }),
  },
  'The operator resumes a paused tenant (queue.resumeTenant).',
);
export type ResumeTenantFault = z.output<typeof resumeTenantFault>;

export const pauseTenant: TimedInjector<PauseTenantFault> = {
  kind: 'pause-tenant',
  fire: (fault, { world }) => world.pauseTenant(fault.tenant, fault.reason),
};

export const resumeTenant: TimedInjector<ResumeTenantFault> = {
  kind: 'resume-tenant',
  fire: (fault, { world }) => world.resumeTenant(fault.tenant),
};
