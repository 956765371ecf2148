import type { HistoryEntry } from '../history.ts';
import type { WorldResult } from '../world.ts';
import { analyse, rolledBack, wallTimeAt, ViolationList, type Analysis, type Holder } from './timeline.ts';
import type { Checker } from './types.ts';

/**
 * Q9 (issue 35): a holder that heartbeats on its schedule keeps its lease. Fencing keeps every outcome
 * safe when a healthy worker loses its lease (its writes are refused, another takes over), so no safety
 * invariant objects when a configuration or a lease keeper lets leases lapse under holders that did
 * nothing wrong; this one does. (An expiry before the lease ran out is I2's `early expiry`.)
 *
 * Each `lease_expired` event is set against the holder's last renewal before it: its claim, or its last
 * heartbeat answered ok (an answer a power loss undid does not count). A renewal's instant is the
 * *invoke* of the call, a lower bound of its commit. Rules:
 *
 * - `on-schedule`: the expiry came within two heartbeats (2 x heartbeatMs) of the renewal's invoke. A
 *   configuration that keeps leaseMs >= 3 x heartbeatMs (Q9) makes that impossible, since the lease
 *   lasts leaseMs from the renewal's commit; one that happens means the lease was shorter than the
 *   holder's schedule needs (a validation rule lost, a lease computed from the wrong option).
 * - `healthy-holder`: from the renewal to the expiry the holder's incarnation was alive and not frozen,
 *   none of its calls failed, and nothing beneath the queue could have held a heartbeat back (no note of
 *   the fault controller, the scheduler or the store: a restart, a power loss, a busy lock, a full disk,
 *   an I/O error, a clock jump). Its lease keeper beats every heartbeatMs and each beat is answered
 *   within the fleet's wait, so its lease cannot lapse: one that does was let go by the keeper.
 *
 * Not judged (and why): an expiry with a clock jump or a power loss between the renewal and it (a jump
 * back between a renewal's invoke and its commit makes the invoke no lower bound of the commit's wall
 * time; a power loss may undo the renewal's commit while its answer stands).
 */
export const q9LeaseKept: Checker = {
  invariant: 'Q9',
  kind: 'liveness',
  description: 'a holder that heartbeats on its schedule keeps its lease: none lapses within two heartbeats of a renewal, nor under a holder alive, unfrozen and answered',
  check(world: WorldResult) {
    const analysis = analyse(world);
    const out = new ViolationList('Q9', 'liveness');
    const entries = world.history.entries();
    const renewals = renewalsByHolder(analysis, entries);
    const jumps = entries.filter((entry) => entry.type === 'note' && entry.kind === 'clock-jump').map((entry) => entry.index);
    const losses = analysis.powerLosses.map((loss) => loss.index);
    const beneath = entries.filter((entry) => entry.type === 'note' && BENEATH.has(entry.actor)).map((entry) => entry.index);
    const { heartbeatMs } = analysis.config;
    world.events.forEach((event, position) => {
      if (event.type !== 'lease_expired') return;
      const holder = analysis.holderBefore[position];
      if (holder === undefined) return;
      const expiredAt = event.at;
      const expiredIndex = firstEntryKnowing(analysis, event.id);
      const last = lastRenewal(renewals.get(key(event.taskId, holder)) ?? [], analysis, expiredAt, expiredIndex);
      if (last === undefined) return;
      const between = (index: number) => index > last.invoke.index && index < expiredIndex;
      if (jumps.some(between) || losses.some(between)) return;
      const heldMs = expiredAt - last.at;
      const where = `task ${event.taskId}: ${holder.workerId}@g${holder.generation}'s lease expired at ${expiredAt}, ${heldMs} ms after its last renewal (${'op' in last.invoke ? last.invoke.op : 'renewal'} invoked at #${last.invoke.index}, ${last.at})`;
      if (heldMs <= 2 * heartbeatMs) {
        out.add('on-schedule', `${where}: within two heartbeats (heartbeatMs ${heartbeatMs}) of it, so the holder was on its schedule`, { at: [last.invoke.index], taskId: event.taskId });
        return;
      }
      if (beneath.some(between)) return;
      const troubled = entries.slice(last.invoke.index + 1, expiredIndex).some((entry) => entry.actor === holder.workerId && (entry.type === 'fail' || (entry.type === 'note' && entry.kind !== 'start')));
      if (!troubled) out.add('healthy-holder', `${where}: the holder was alive, not frozen and answered all along, and nothing beneath the queue held its heartbeats back`, { at: [last.invoke.index], taskId: event.taskId });
    });
    return out.list;
  },
};

/** Actors whose notes say something beneath the queue happened (a fault, the scheduler process, the store). */
const BENEATH: ReadonlySet<string> = new Set(['faults', 'scheduler', 'store']);

function key(taskId: number, holder: Holder): string {
  return `${taskId}\u0000${holder.workerId}\u0000${holder.generation}`;
}

/** Claims and heartbeats answered ok, per (task, holder), as their invoke entries, in history order. */
function renewalsByHolder(analysis: Analysis, entries: readonly HistoryEntry[]): Map<string, HistoryEntry[]> {
  const out = new Map<string, HistoryEntry[]>();
  for (const entry of entries) {
    if (entry.type !== 'ok' || (entry.op !== 'claim' && entry.op !== 'heartbeat')) continue;
    if (entry.taskId === undefined || entry.generation === undefined || rolledBack(analysis, entry)) continue;
    const invoke = entries[entry.invokeIndex];
    if (invoke === undefined) continue;
    const id = key(entry.taskId, { workerId: entry.actor, generation: entry.generation });
    let list = out.get(id);
    if (list === undefined) out.set(id, (list = []));
    list.push(invoke);
  }
  return out;
}

/** The last renewal invoked before the expiry (by history position, and on the wall clock). */
function lastRenewal(invokes: readonly HistoryEntry[], analysis: Analysis, expiredAt: number, expiredIndex: number): { invoke: HistoryEntry; at: number } | undefined {
  let last: { invoke: HistoryEntry; at: number } | undefined;
  for (const invoke of invokes) {
    if (invoke.index >= expiredIndex) break;
    const at = wallTimeAt(analysis, invoke);
    if (at <= expiredAt) last = { invoke, at };
  }
  return last;
}

/** The first history entry that knew of event `id` (its cursor before it had passed it); the history's end if none. */
function firstEntryKnowing(analysis: Analysis, id: number): number {
  const cursors = analysis.cursorBefore;
  let low = 0;
  let high = cursors.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if ((cursors[middle] ?? 0) >= id) high = middle;
    else low = middle + 1;
  }
  return low;
}
