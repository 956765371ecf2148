import { z } from 'zod';
import type { TaskState } from '../../src/queue/types.ts';
import { SPEC_OCCUPYING_STATES } from '../checkers/spec-rules.ts';
import { analyse, tenantLimit } from '../checkers/timeline.ts';
import type { ExpectationKind } from './types.ts';

interface TenantProgress {
  kind: 'tenant-progress';
  /** The tenant that floods: it fills its budget (its concurrency limit, Q6) and has more work waiting. */
  flooding: string;
  /** The tenants that must keep running meanwhile; default every other tenant with an accepted task. */
  others?: string[];
  /** Each of them gets at least this many claims while the flooding tenant is full; default 1. */
  minClaims?: number;
}

const OCCUPYING = new Set<TaskState | undefined>(SPEC_OCCUPYING_STATES);

/**
 * Seed 004's test "fill one tenant's budget, then check that another tenant still runs": replaying the
 * event log in commit order, count the claims of each other tenant's tasks made while the flooding
 * tenant held all the slots its limit allows (running + uncertain) and still had ready tasks waiting.
 * Each other tenant must get at least minClaims such claims; and the flood must really have filled its
 * budget at some point, or the run proved nothing.
 */
export const tenantProgress: ExpectationKind<TenantProgress> = {
  kind: 'tenant-progress',
  class: 'liveness',
  description: 'while one tenant held every slot its limit allows and had work waiting, each other tenant still got claims',
  schema: z.strictObject({
    kind: z.literal('tenant-progress'),
    flooding: z.string().min(1),
    others: z.array(z.string().min(1)).min(1).optional(),
    minClaims: z.number().int().min(1).optional(),
  }),
  check(spec, run) {
    const analysis = analyse(run);
    const limit = tenantLimit(analysis.config, spec.flooding);
    const others =
      spec.others ?? [...new Set(run.final.tasks.map((task) => task.tenant))].filter((tenant) => tenant !== spec.flooding).sort();
    if (others.includes(spec.flooding)) return [`others names the flooding tenant ${spec.flooding} itself`];
    if (others.length === 0) return [`no tenant besides ${spec.flooding} had an accepted task`];
    let occupied = 0;
    let ready = 0;
    let fullMoments = 0;
    const claimsWhileFull = new Map(others.map((tenant) => [tenant, 0]));
    run.events.forEach((event, position) => {
      const tenant = analysis.tasks.get(event.taskId)?.tenant;
      if (tenant === undefined) return;
      const full = occupied >= limit && ready > 0;
      if (event.type === 'claimed' && full && claimsWhileFull.has(tenant)) claimsWhileFull.set(tenant, claimsWhileFull.get(tenant)! + 1);
      if (tenant !== spec.flooding) return;
      const before = analysis.stateBefore[position];
      const after = analysis.stateAfter[position];
      occupied += (OCCUPYING.has(after) ? 1 : 0) - (OCCUPYING.has(before) ? 1 : 0);
      ready += (after === 'ready' ? 1 : 0) - (before === 'ready' ? 1 : 0);
      if (occupied >= limit && ready > 0 && !full) fullMoments++;
    });
    if (fullMoments === 0) return [`tenant ${spec.flooding} never held all ${limit} of its slots with work still waiting: the flood did not fill its budget`];
    const wanted = spec.minClaims ?? 1;
    const problems: string[] = [];
    for (const [tenant, claims] of claimsWhileFull) {
      if (claims < wanted) problems.push(`tenant ${tenant} got ${claims} claim(s) while tenant ${spec.flooding} held all ${limit} of its slots with work waiting, expected at least ${wanted}`);
    }
    return problems;
  },
};
