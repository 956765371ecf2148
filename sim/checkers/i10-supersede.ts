import type { WorldResult } from '../world.ts';
import { analyse, ViolationList } from './timeline.ts';
import type { Checker } from './types.ts';

/**
 * I10: a superseded task never starts; a result from an older version is marked stale_input.
 *
 * Rules:
 * - no task has both a `claimed` and a `superseded` event: a superseded version never starts, and a
 *   version that has started (even if it now waits in ready for a retry) is not superseded but left to
 *   finish as stale_input (Q2);
 * - a version inserted after a newer version of its (tenant, topic) is superseded by its insert (its
 *   first event): it arrived late and must never run (Q2);
 * - when a newer version of a topic is enqueued, no older version of that topic that never started is
 *   left ready (Q2: the same transaction supersedes them);
 * - the client is told (Q2, the Core API's `status`): an enqueue that stored a late version is answered
 *   `superseded`, never `enqueued` or `replaced` (its client must not wait for a result that will never
 *   come), and an enqueue answered `superseded` names a task that was stored superseded;
 * - a `completed` event carries outcome stale_input exactly when a newer version of its (tenant,
 *   topic) was inserted before it in commit order, and `done` otherwise; the task's final outcome
 *   agrees.
 */
export const i10Supersede: Checker = {
  invariant: 'I10',
  kind: 'safety',
  description: 'a superseded task never starts; a result from an older version is stale_input',
  check(world: WorldResult) {
    const analysis = analyse(world);
    const out = new ViolationList('I10', 'safety');
    // Topic -> the versions inserted so far, with the id of the event that inserted each.
    const inserted = new Map<string, { version: number; taskId: number }[]>();
    const readyByTopic = new Map<string, Set<number>>();
    const claimed = new Map<number, number>();
    const superseded = new Map<number, number>();
    world.events.forEach((event, position) => {
      const task = analysis.tasks.get(event.taskId);
      if (task === undefined) return;
      const topic = `${task.tenant}\u0000${task.topic}`;
      if (event.seq === 1) {
        let versions = inserted.get(topic);
        if (versions === undefined) inserted.set(topic, (versions = []));
        const newer = versions.find((other) => other.version > task.version);
        // Q2: a version older than one already inserted arrives late: it is superseded in the insert.
        if (newer !== undefined && event.type !== 'superseded') {
          out.add('late version', `task ${task.id} (v${task.version}) arrived after v${newer.version} (task ${newer.taskId}) and was ${event.type}, not superseded: a late older version must never run`, { taskId: task.id });
        }
        versions.push({ version: task.version, taskId: task.id });
      }
      if (event.type === 'claimed') claimed.set(task.id, claimed.get(task.id) ?? event.id);
      if (event.type === 'superseded') superseded.set(task.id, event.id);
      if ((event.type === 'claimed' || event.type === 'superseded') && claimed.has(task.id) && superseded.has(task.id)) {
        out.add('started', `task ${task.id} (v${task.version}) was both claimed (event ${claimed.get(task.id)}) and superseded (event ${superseded.get(task.id)})`, { taskId: task.id });
      }
      let ready = readyByTopic.get(topic);
      if (ready === undefined) readyByTopic.set(topic, (ready = new Set()));
      if (analysis.stateAfter[position] === 'ready') ready.add(task.id);
      else ready.delete(task.id);
      if (event.type === 'enqueued') {
        for (const id of ready) {
          const older = analysis.tasks.get(id);
          if (older !== undefined && older.version < task.version && !claimed.has(id)) {
            out.add('left ready', `task ${id} (v${older.version}) had not started and was still ready when v${task.version} (task ${task.id}) was enqueued`, { taskId: id });
          }
        }
      }
      if (event.type === 'completed') {
        const newer = (inserted.get(topic) ?? []).some((other) => other.version > task.version);
        const expected = newer ? 'stale_input' : 'done';
        if (event.data.outcome !== expected) {
          out.add('outcome', `task ${task.id} (v${task.version}) completed with outcome ${String(event.data.outcome)}, expected ${expected}`, { taskId: task.id });
        }
        if (task.outcome !== undefined && task.outcome !== event.data.outcome) {
          out.add('outcome', `task ${task.id}: completed event says ${String(event.data.outcome)}, the task says ${task.outcome}`, { taskId: task.id });
        }
      }
    });
    // The answers: the status the client got for each enqueue that stored a task (duplicates stored nothing).
    for (const { arrival, result } of world.enqueued) {
      if (!result.ok || result.status === 'duplicate') continue;
      const first = analysis.eventsByTask.get(result.taskId)?.[0];
      if (first === undefined) continue;
      const key = `${arrival.request.tenant}/${arrival.request.topic}/v${arrival.request.version}`;
      if (result.status === 'superseded' && first.type !== 'superseded') {
        out.add('late answer', `enqueue of ${key} was answered superseded, but task ${result.taskId} was stored ${first.type}`, { taskId: result.taskId });
      }
      if (result.status !== 'superseded' && first.type === 'superseded') {
        out.add('late answer', `enqueue of ${key} stored task ${result.taskId} superseded (a newer version came first) but answered ${result.status}: the client is not told it will never run`, { taskId: result.taskId });
      }
    }
    return out.list;
  },
};
