import type { HistoryEntry } from '../history.ts';
import type { WorldResult } from '../world.ts';
import { analyse, evAt, ViolationList, type Analysis } from './timeline.ts';
import type { Checker } from './types.ts';

/** One change of a tenant's pause: from the history (placed in the log by its cursor) or from the admission rows (by time). */
interface PauseChange {
  tenant: string;
  paused: boolean;
  /** History: the event cursor at its commit; the claims with ids above it came after it. */
  ev?: number;
  /** Admission rows: the instant it was recorded. */
  at?: number;
  index?: number;
}

const PAUSE_OPS = new Set(['pauseTenant', 'resumeTenant']);

/** The tenant a pause or resume call named: its invoke's data (`tenant`, or `args[0]` as called). */
function tenantOfCall(invoke: HistoryEntry | undefined): string | undefined {
  const data = invoke?.data as { tenant?: unknown; args?: unknown } | undefined;
  if (data === null || typeof data !== 'object') return undefined;
  if (typeof data.tenant === 'string') return data.tenant;
  if (Array.isArray(data.args) && typeof data.args[0] === 'string') return data.args[0];
  return undefined;
}

/** The acknowledged pauses and resumes of the history, per tenant, in history order. */
export function historyPauses(world: WorldResult, analysis: Analysis = analyse(world)): Map<string, PauseChange[]> {
  const entries = world.history.entries();
  const byTenant = new Map<string, PauseChange[]>();
  for (const entry of entries) {
    if (entry.type !== 'ok' || !PAUSE_OPS.has(entry.op)) continue;
    const tenant = tenantOfCall(entries[entry.invokeIndex]);
    const ev = evAt(analysis, entry);
    if (tenant === undefined || ev === undefined) continue;
    let list = byTenant.get(tenant);
    if (list === undefined) byTenant.set(tenant, (list = []));
    list.push({ tenant, paused: entry.op === 'pauseTenant', ev, index: entry.index });
  }
  return byTenant;
}

/** The PAUSE and RESUME admission rows per tenant, in the order recorded. */
function recordedPauses(world: WorldResult): Map<string, PauseChange[]> | undefined {
  if (world.admissionDecisions === undefined) return undefined;
  const byTenant = new Map<string, PauseChange[]>();
  for (const row of world.admissionDecisions) {
    if (row.action !== 'PAUSE' && row.action !== 'RESUME') continue;
    let list = byTenant.get(row.tenant);
    if (list === undefined) byTenant.set(row.tenant, (list = []));
    list.push({ tenant: row.tenant, paused: row.action === 'PAUSE', at: row.at });
  }
  return byTenant;
}

/**
 * I17: a paused tenant gets no lease (A2), in commit order, across restarts.
 *
 * Rules:
 * - from the history: after an acknowledged `pauseTenant(T)` committed at cursor p, no `claimed` event
 *   of a task of T has an id in (p, r], r the cursor of the next acknowledged `resumeTenant(T)` (or the
 *   end of the log: a pause persists across restarts, so no resume means paused to the end);
 * - for a tenant whose pauses the history does not name (a call recorded without its tenant), the
 *   admission rows (PAUSE / RESUME, by time) place them: no claim of T strictly after a PAUSE and
 *   strictly before the next RESUME;
 * - the rows agree with the history: every tenant the history paused has PAUSE rows, and a tenant
 *   whose last acknowledged call was a pause ends recorded paused;
 * - tenant_pauses (pausedTenants) is the replay of the rows: exactly the tenants whose last change was a
 *   PAUSE, each with the reason and instant of that PAUSE.
 */
export const i17PausedTenant: Checker = {
  invariant: 'I17',
  kind: 'safety',
  description: 'a paused tenant gets no lease between its pause and its resume, in commit order, across restarts',
  check(world: WorldResult) {
    const analysis = analyse(world);
    const out = new ViolationList('I17', 'safety');
    const fromHistory = historyPauses(world, analysis);
    const fromRows = recordedPauses(world);
    const claims = world.events.filter((event) => event.type === 'claimed');
    const tenantOf = (taskId: number) => analysis.tasks.get(taskId)?.tenant;
    for (const [tenant, changes] of fromHistory) {
      changes.forEach((change, i) => {
        if (!change.paused) return;
        const next = changes.slice(i + 1).find((later) => !later.paused);
        const from = change.ev!;
        const to = next?.ev ?? Number.POSITIVE_INFINITY;
        for (const claim of claims) {
          if (claim.id > from && claim.id <= to && tenantOf(claim.taskId) === tenant) {
            out.add('lease', `task ${claim.taskId} of tenant ${tenant} was claimed (event ${claim.id}) after the tenant was paused at cursor ${from}${next === undefined ? ' and never resumed' : ` and before its resume at cursor ${to}`}`, { taskId: claim.taskId, at: [change.index!] });
          }
        }
      });
    }
    if (fromRows === undefined) return out.list;
    for (const [tenant, changes] of fromRows) {
      if (fromHistory.has(tenant)) continue;
      changes.forEach((change, i) => {
        if (!change.paused) return;
        const next = changes.slice(i + 1).find((later) => !later.paused);
        const to = next?.at ?? Number.POSITIVE_INFINITY;
        for (const claim of claims) {
          if (claim.at > change.at! && claim.at < to && tenantOf(claim.taskId) === tenant) {
            out.add('lease', `task ${claim.taskId} of tenant ${tenant} was claimed at ${claim.at} (event ${claim.id}) after the recorded PAUSE at ${change.at}${next === undefined ? ', never resumed' : ` and before the RESUME at ${to}`}`, { taskId: claim.taskId });
          }
        }
      });
    }
    for (const [tenant, changes] of fromHistory) {
      const rows = fromRows.get(tenant) ?? [];
      if (changes.some((change) => change.paused) && !rows.some((row) => row.paused)) out.add('recorded', `tenant ${tenant} was paused (history entry ${changes.find((change) => change.paused)!.index}) but no PAUSE admission decision records it`);
      const last = changes[changes.length - 1]!;
      const lastRow = rows[rows.length - 1];
      if (last.paused && lastRow?.paused !== true) out.add('recorded', `tenant ${tenant}'s last acknowledged call was a pause (history entry ${last.index}) but its last recorded change is ${lastRow === undefined ? 'none' : 'a RESUME'}`);
    }
    checkPausedTable(world, out);
    return out.list;
  },
};

/** tenant_pauses against the PAUSE / RESUME rows: the tenants whose last change was a PAUSE, with its reason and time. */
function checkPausedTable(world: WorldResult, out: ViolationList): void {
  if (world.pausedTenants === undefined || world.admissionDecisions === undefined) return;
  const last = new Map<string, { action: string; reason: string; at: number }>();
  for (const row of world.admissionDecisions) if (row.action === 'PAUSE' || row.action === 'RESUME') last.set(row.tenant, row);
  const expected = new Map([...last].filter(([, row]) => row.action === 'PAUSE'));
  const actual = new Map(world.pausedTenants.map((pause) => [pause.tenant, pause]));
  for (const [tenant, row] of expected) {
    const pause = actual.get(tenant);
    if (pause === undefined) out.add('table', `tenant ${tenant}'s last recorded change is a PAUSE at ${row.at} but tenant_pauses does not hold it`);
    else if (pause.reason !== row.reason || pause.at !== row.at) out.add('table', `tenant_pauses holds ${tenant} paused at ${pause.at} (${pause.reason}), its PAUSE decision says ${row.at} (${row.reason})`);
  }
  for (const tenant of actual.keys()) {
    if (!expected.has(tenant)) out.add('table', `tenant_pauses holds ${tenant} paused but its recorded changes ${last.has(tenant) ? 'end in a RESUME' : 'name no PAUSE'}`);
  }
}
