import type { WorldResult } from '../world.ts';
import { replayCounts } from './i3-quotas.ts';
import { analyse, evOf, lastAtOrBefore, rolledBack, ViolationList } from './timeline.ts';
import type { Checker } from './types.ts';

/** Enqueue refusals that must be recorded in the rejections table (Q3, Q14, Q1). */
/** The states counted against capacity (Q3), from the SPEC, not src's table. */
const LIVE: ReadonlySet<string> = new Set(['ready', 'running', 'uncertain']);

const RECORDED_REFUSALS = new Set(['queue_full', 'expired', 'idempotency_conflict', 'exceeds_budget']);

/**
 * I4: capacity holds, except same-topic replacements; every rejection is explicit and recorded.
 *
 * Rules:
 * - after every event in commit order, ready + running + uncertain <= capacity, except right after an
 *   `enqueued` event that replaced waiting versions of its topic (Q3 accepts those even when full), and
 *   except for critical work (A2): it has reserved headroom beyond capacity, so the live tasks may
 *   exceed capacity by as many as are critical (or replaced a critical task while it waited), never
 *   beyond capacity + criticalHeadroom;
 * - every enqueue refused queue_full, expired, idempotency_conflict or exceeds_budget appears in the final
 *   rejections with its (tenant, topic, version, reason), and every such rejection was a refusal;
 * - a queue_full refusal was given only while the queue really was full at that point of the log
 *   (live >= capacity), so no task was turned away while there was room;
 * - the kept live counter (table counters, Q3: what enqueue compares with capacity) equals the ready +
 *   running + uncertain tasks of the final database: a counter that drifted admits or refuses wrongly.
 */
export const i4Capacity: Checker = {
  invariant: 'I4',
  kind: 'safety',
  description: 'capacity holds except same-topic replacements; every refusal is recorded',
  check(world: WorldResult) {
    const analysis = analyse(world);
    const { capacity, criticalHeadroom } = analysis.config;
    const out = new ViolationList('I4', 'safety');
    const liveAfterEvent = new Map<number, number>();
    // The tasks the headroom may hold: critical ones, and a newer version that replaced one of those while
    // it waited (Q3 accepts a replacement even when full: it takes over the place of the task it replaced).
    const critical = new Set<number>();
    for (const [id, events] of analysis.eventsByTask) if (events[0]?.type === 'enqueued' && events[0].data.critical === true) critical.add(id);
    let liveCritical = 0;
    replayCounts(world, analysis, (position, counts) => {
      const event = world.events[position]!;
      liveAfterEvent.set(event.id, counts.live);
      if (event.type === 'enqueued' && !critical.has(event.taskId) && Array.isArray(event.data.replaced) && event.data.replaced.some((id) => critical.has(id as number))) {
        // Its predecessor ended superseded in this transaction (its event came first in the log and counted
        // it out): the place it held is this task's now, counted in below like any critical task's.
        critical.add(event.taskId);
      }
      if (critical.has(event.taskId)) liveCritical += (LIVE.has(analysis.stateAfter[position] ?? '') ? 1 : 0) - (LIVE.has(analysis.stateBefore[position] ?? '') ? 1 : 0);
      const replaced = Array.isArray(event.data.replaced) && event.data.replaced.length > 0;
      const allowed = Math.min(capacity + liveCritical, capacity + criticalHeadroom);
      if (counts.live > allowed && !(event.type === 'enqueued' && replaced)) {
        const headroom = liveCritical > 0 ? ` (+${Math.min(liveCritical, criticalHeadroom)} critical headroom in use)` : '';
        out.add('capacity', `after event ${event.id} (${event.type} of task ${event.taskId}) ${counts.live} tasks are live, capacity ${capacity}${headroom}`, { taskId: event.taskId });
      }
    });
    const refused = new Map<string, number>();
    const key = (tenant: string, topic: string, version: number, reason: string) => `${tenant}\u0000${topic}\u0000${version}\u0000${reason}`;
    for (const { arrival, result } of world.enqueued) {
      if (result.ok || !RECORDED_REFUSALS.has(result.error)) continue;
      const k = key(arrival.request.tenant, arrival.request.topic, arrival.request.version, result.error);
      refused.set(k, (refused.get(k) ?? 0) + 1);
    }
    const recorded = new Map<string, number>();
    for (const rejection of world.final.rejections) {
      const k = key(rejection.tenant, rejection.topic, rejection.version, rejection.reason);
      recorded.set(k, (recorded.get(k) ?? 0) + 1);
    }
    for (const [k, n] of refused) {
      if ((recorded.get(k) ?? 0) < n) out.add('unrecorded', `enqueue of ${k.split('\u0000').join(' / ')} was refused ${n} time(s) but rejections record ${recorded.get(k) ?? 0}`);
    }
    for (const [k, n] of recorded) {
      if ((refused.get(k) ?? 0) < n) out.add('phantom', `rejections record ${k.split('\u0000').join(' / ')} ${n} time(s) but the client was refused ${refused.get(k) ?? 0}`);
    }
    checkQueueFullWasFull(world, liveAfterEvent, capacity, out);
    const liveTasks = world.final.tasks.filter((task) => LIVE.has(task.state)).length;
    if (world.final.live !== liveTasks) out.add('counter', `the live counter ends at ${world.final.live} but ${liveTasks} tasks are ready, running or uncertain`);
    return out.list;
  },
};

function checkQueueFullWasFull(world: WorldResult, liveAfterEvent: Map<number, number>, capacity: number, out: ViolationList): void {
  const ids = world.events.map((event) => event.id);
  for (const entry of world.history.entries()) {
    if (entry.type !== 'fail' || entry.op !== 'enqueue' || entry.reason !== 'queue_full' || rolledBack(analyse(world), entry)) continue;
    const ev = evOf(entry);
    if (ev === undefined) continue;
    // The newest event at or before the cursor tells how many tasks were live when the refusal committed.
    const found = lastAtOrBefore(ids, (id) => id, ev);
    const live = found < 0 ? 0 : (liveAfterEvent.get(ids[found]!) ?? 0);
    if (live < capacity) out.add('unjust', `enqueue refused queue_full with ${live} live tasks, capacity ${capacity}`, { at: [entry.index] });
  }
}
