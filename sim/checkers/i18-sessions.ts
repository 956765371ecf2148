import type { TaskState } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';
import { SPEC_OCCUPYING_STATES } from './spec-rules.ts';
import { analyse, ViolationList } from './timeline.ts';
import type { Checker } from './types.ts';

const OCCUPYING = new Set<TaskState | undefined>(SPEC_OCCUPYING_STATES);

/**
 * I18: one run per session (A6), under the policies `serial` (the default) and `cancel_in_progress`;
 * `versioned` lets the versions of a session run at once and is judged by I10 (stale_input) instead.
 *
 * Rules, over the event log in commit order:
 * - at most one task of a session (tenant, topic) is running or uncertain after every event (an
 *   uncertain task holds its session: its worker may still be running);
 * - a session's runs start in version order: the first claims of its tasks come in ascending version;
 * - under cancel_in_progress, the enqueue of a newer version while an older one holds the session
 *   persists a cancel of it (a cancel_requested event naming the newer task) in the same transaction.
 */
export const i18Sessions: Checker = {
  invariant: 'I18',
  kind: 'safety',
  description: 'one run per session: at most one running or uncertain task per (tenant, topic); runs start in version order',
  check(world: WorldResult) {
    const analysis = analyse(world);
    const out = new ViolationList('I18', 'safety');
    const policy = analysis.config.sessionPolicy;
    if (policy === 'versioned') return out.list;
    const sessionOf = (taskId: number) => {
      const task = analysis.tasks.get(taskId);
      return task === undefined ? undefined : `${task.tenant}/${task.topic}`;
    };
    const holders = new Map<string, Set<number>>();
    const started = new Map<string, { taskId: number; version: number }>();
    const claimedOnce = new Set<number>();
    world.events.forEach((event, position) => {
      const session = sessionOf(event.taskId);
      const task = analysis.tasks.get(event.taskId);
      if (session === undefined || task === undefined) return;
      const before = OCCUPYING.has(analysis.stateBefore[position]);
      const after = OCCUPYING.has(analysis.stateAfter[position]);
      let held = holders.get(session);
      if (held === undefined) holders.set(session, (held = new Set()));
      if (after && !before) held.add(event.taskId);
      if (before && !after) held.delete(event.taskId);
      if (held.size > 1) {
        out.add('one at a time', `after event ${event.id} (${event.type} of task ${event.taskId}) session ${session} has ${held.size} running or uncertain tasks (${[...held].join(', ')})`, { taskId: event.taskId });
      }
      if (event.type === 'claimed' && !claimedOnce.has(event.taskId)) {
        claimedOnce.add(event.taskId);
        const last = started.get(session);
        if (last !== undefined && last.version > task.version) {
          out.add('version order', `session ${session}: version ${task.version} (task ${task.id}) started after version ${last.version} (task ${last.taskId})`, { taskId: task.id });
        }
        if (last === undefined || last.version < task.version) started.set(session, { taskId: task.id, version: task.version });
      }
      if (policy === 'cancel_in_progress' && event.type === 'enqueued') {
        for (const older of held) {
          if (older === event.taskId) continue;
          const olderTask = analysis.tasks.get(older);
          if (olderTask === undefined || olderTask.version >= task.version) continue;
          const cancelled = (analysis.eventsByTask.get(older) ?? []).some((e) => e.type === 'cancel_requested' && e.data.byTaskId === event.taskId);
          const askedBefore = (analysis.eventsByTask.get(older) ?? []).some((e) => e.type === 'cancel_requested' && e.id < event.id);
          if (!cancelled && !askedBefore) out.add('cancel in progress', `version ${task.version} (task ${task.id}) of session ${session} was enqueued while task ${older} held it, and no cancel of ${older} was persisted`, { taskId: older });
        }
      }
    });
    return out.list;
  },
};
