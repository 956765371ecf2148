import type { WorldResult } from '../world.ts';
import { analyse, ViolationList } from './timeline.ts';
import type { Checker } from './types.ts';

/** Event data fields that name other tasks. */
const TASK_REFERENCES = ['byTaskId', 'replaced', 'taskIds', 'taskId', 'supersededBy'];
/** Labels the simulated workload writes into scripts, tool arguments and answers: `tenant/topic-N`. */
const TOPIC_LABEL = /([A-Za-z0-9_.-]+)\/topic-\d+/g;

/**
 * I13: isolation: no event, result or effect of one tenant names another tenant's task.
 *
 * Rules:
 * - task references in event data (byTaskId, replaced, taskIds, ...) name tasks of the same tenant;
 * - every request the provider received, every ledger row, every hold and every dead letter carries
 *   the tenant of its task, and a request key's run id is that task;
 * - no event data, result or last checkpoint of a task mentions a topic label of another tenant (the
 *   simulated workload labels its arguments and answers `tenant/topic-N`).
 * - a tenant-scoped read (the world's clients call listForTenant) returns only that tenant's rows.
 */
export const i13Isolation: Checker = {
  invariant: 'I13',
  kind: 'safety',
  description: "isolation: no event, result or effect of one tenant names another tenant's task",
  check(world: WorldResult) {
    const analysis = analyse(world);
    const out = new ViolationList('I13', 'safety');
    const tenantOf = (id: unknown) => (typeof id === 'number' ? analysis.tasks.get(id)?.tenant : undefined);
    const tenants = new Set([...analysis.tasks.values()].map((task) => task.tenant));
    // With one tenant no label can be another tenant's; a text without a label needs no regex.
    const foreignLabel = (own: string, value: unknown): string | undefined => {
      if (tenants.size < 2 || value === undefined || value === null) return undefined;
      const text = JSON.stringify(value);
      if (!text.includes('/topic-')) return undefined;
      for (const match of text.matchAll(TOPIC_LABEL)) {
        const named = match[1]!;
        if (named !== own && tenants.has(named)) return match[0];
      }
      return undefined;
    };
    for (const event of world.events) {
      const own = tenantOf(event.taskId);
      if (own === undefined) continue;
      for (const field of TASK_REFERENCES) {
        const value = event.data[field];
        if (value === undefined) continue;
        for (const id of Array.isArray(value) ? value : [value]) {
          const other = tenantOf(id);
          if (other !== undefined && other !== own) out.add('event', `task ${event.taskId} (${own}): ${event.type} event ${event.id} names task ${String(id)} of ${other}`, { taskId: event.taskId });
        }
      }
      const label = foreignLabel(own, event.data);
      if (label !== undefined) out.add('event', `task ${event.taskId} (${own}): ${event.type} event ${event.id} mentions ${label}`, { taskId: event.taskId });
    }
    for (const task of analysis.tasks.values()) {
      const label = foreignLabel(task.tenant, task.result) ?? foreignLabel(task.tenant, world.checkpoints.get(task.id)?.state);
      if (label !== undefined) out.add('result', `task ${task.id} (${task.tenant}): its result or checkpoint mentions ${label}`, { taskId: task.id });
    }
    for (const call of world.provider.requests) {
      const own = tenantOf(call.taskId);
      if (own !== call.tenant || !call.requestKey.startsWith(`${call.taskId}:`)) {
        out.add('effect', `provider request ${call.requestKey} for task ${call.taskId} (${String(own)}) came as tenant ${call.tenant}`, { taskId: call.taskId });
      }
    }
    const rows: { kind: string; taskId: number; tenant: string; key?: string }[] = [
      ...(world.effects ?? []).map((row) => ({ kind: 'ledger row', taskId: row.taskId, tenant: row.tenant, key: row.requestKey })),
      ...(world.holds ?? []).map((row) => ({ kind: 'hold', taskId: row.taskId, tenant: row.tenant })),
      ...(world.deadLetters ?? []).map((row) => ({ kind: 'dead letter', taskId: row.taskId, tenant: row.tenant })),
    ];
    for (const row of rows) {
      const own = tenantOf(row.taskId);
      if (own !== row.tenant || (row.key !== undefined && !row.key.startsWith(`${row.taskId}:`))) {
        out.add(row.kind, `${row.kind} of task ${row.taskId} (${String(own)}) carries tenant ${row.tenant}${row.key === undefined ? '' : ` and key ${row.key}`}`, { taskId: row.taskId });
      }
    }
    for (const entry of world.history.entries()) {
      if (entry.type !== 'ok' || entry.op !== 'list-tenant') continue;
      const { tenant, tenants } = entry.data as { tenant: string; tenants: string[] };
      const foreign = tenants.filter((named) => named !== tenant);
      if (foreign.length > 0) out.add('read', `a read as tenant ${tenant} (history ${entry.index}) returned rows of ${foreign.join(', ')}`, { at: [entry.index] });
    }
    return out.list;
  },
};
