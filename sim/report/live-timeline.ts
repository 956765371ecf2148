import type { TaskEvent, TaskView } from '../../src/queue/types.ts';
import { timelineSvg } from './svg.ts';
import { buildTimeline, type TimelineModel } from './timeline-model.ts';

/**
 * O2: the report's timeline drawn from a live queue's real event log, for the dashboard's task page.
 * The report builds its timeline from the harness's history (worker lifecycles, faults) and the event
 * log; a live queue has only the event log, so this hands buildTimeline no history at all: each worker
 * that claimed the task is a lane, each claim a span to the event that took the task out of running,
 * a lapsed lease a marker, and time runs from the task's first event to `at` (the queue clock's now)
 * while it is live, or to its last event once it ended. Every text is escaped by the renderer.
 */
export function liveTimelineModel(task: TaskView, events: readonly TaskEvent[], at: number): TimelineModel {
  const startMs = events[0]?.at ?? task.enqueuedAt;
  const last = events.at(-1)?.at ?? startMs;
  const live = task.state === 'ready' || task.state === 'running' || task.state === 'uncertain';
  const endMs = Math.max(live ? at : last, last, startMs + 1);
  return buildTimeline({
    seed: `task ${task.id}`,
    index: 0,
    verdict: task.state,
    startMs,
    safetyEndMs: endMs,
    endMs,
    entries: [],
    events,
    tenantOf: () => task.tenant,
  });
}

/** The SVG document of one task's timeline (standalone: served as image/svg+xml). */
export function liveTimelineSvg(task: TaskView, events: readonly TaskEvent[], at: number): string {
  return timelineSvg(liveTimelineModel(task, events, at), `task ${task.id} (${task.state})`);
}
