import type { TaskState } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';
import { SPEC_LIVE_STATES, SPEC_OCCUPYING_STATES } from './spec-rules.ts';
import { analyse, tenantLimit, ViolationList, type Analysis } from './timeline.ts';
import type { Checker } from './types.ts';

const OCCUPYING = new Set<TaskState | undefined>(SPEC_OCCUPYING_STATES);
const LIVE = new Set<TaskState | undefined>(SPEC_LIVE_STATES);

/**
 * Replays the log in commit order and calls `visit` after every event with the counts it left:
 * occupied slots (running + uncertain) globally and per tenant, and live tasks (ready + running +
 * uncertain). Shared by I3 (quotas) and I4 (capacity).
 */
export function replayCounts(
  world: WorldResult,
  analysis: Analysis,
  visit: (position: number, counts: { occupied: number; occupiedByTenant: ReadonlyMap<string, number>; live: number; tenant: string | undefined }) => void,
): void {
  const occupiedByTenant = new Map<string, number>();
  let occupied = 0;
  let live = 0;
  world.events.forEach((event, position) => {
    const before = analysis.stateBefore[position];
    const after = analysis.stateAfter[position];
    const tenant = analysis.tasks.get(event.taskId)?.tenant;
    const occupies = (OCCUPYING.has(after) ? 1 : 0) - (OCCUPYING.has(before) ? 1 : 0);
    if (occupies !== 0) {
      occupied += occupies;
      if (tenant !== undefined) occupiedByTenant.set(tenant, (occupiedByTenant.get(tenant) ?? 0) + occupies);
    }
    live += (LIVE.has(after) ? 1 : 0) - (LIVE.has(before) ? 1 : 0);
    visit(position, { occupied, occupiedByTenant, live, tenant });
  });
}

/**
 * I3: quotas hold at every instant. After every event in commit order, running + uncertain is within
 * globalLimit, and each tenant's running + uncertain within its limit (tenantLimits overrides
 * perTenantLimit; 0 means the tenant gets no lease at all). Uncertain keeps its slot (Q6, Q10).
 */
export const i3Quotas: Checker = {
  invariant: 'I3',
  kind: 'safety',
  description: 'quotas hold at every instant: running + uncertain within the global and each tenant limit',
  check(world: WorldResult) {
    const analysis = analyse(world);
    const { config } = analysis;
    const out = new ViolationList('I3', 'safety');
    replayCounts(world, analysis, (position, counts) => {
      const event = world.events[position]!;
      if (counts.occupied > config.globalLimit) {
        out.add('global', `after event ${event.id} (${event.type} of task ${event.taskId}) ${counts.occupied} tasks hold slots, global limit ${config.globalLimit}`, { taskId: event.taskId });
      }
      if (counts.tenant === undefined) return;
      const held = counts.occupiedByTenant.get(counts.tenant) ?? 0;
      const limit = tenantLimit(config, counts.tenant);
      if (held > limit) {
        out.add('tenant', `after event ${event.id} (${event.type} of task ${event.taskId}) tenant ${counts.tenant} holds ${held} slots, limit ${limit}`, { taskId: event.taskId });
      }
    });
    return out.list;
  },
};
