import type { TaskEvent } from '../../src/queue/types.ts';
import type { HistoryEntry } from '../history.ts';
import type { TenantCharts } from './tenant-series.ts';
import type { GraphRunView } from './tool-graphs.ts';

/**
 * The timeline of one seed as plain data (it travels from a worker thread and into report.json):
 * every worker incarnation is a lane; every claim is a span on its holder's lane from the claim to the
 * event that took the task out of running (completed, retried, failed, lease expired, ...), in the
 * core's view of the lease; faults and refusals are markers. Times are ms from the start of the run on
 * the simulator's timeline (history time), which never jumps: a clock jump is a marker instead.
 */

export type MarkerKind =
  | 'kill'
  | 'revive'
  | 'pause'
  | 'resume'
  | 'lease-expired'
  | 'refused'
  | 'restart'
  | 'reopen'
  | 'clock-jump'
  | 'enqueue-refused'
  | 'duplicate-delivery';

export interface TimelineLane {
  /** The incarnation, e.g. `w0#2`; `queue` for the scheduler's own row. */
  id: string;
  /** Sub-rows needed so that overlapping spans (a worker with several slots) do not cover each other. */
  rows: number;
  fromMs: number;
  toMs: number;
  /** Why the lane ends: the process was killed, exited after a drain (R8), or the run ended with it alive. */
  end: 'killed' | 'exited' | 'end';
}

export interface TimelineSpan {
  lane: number;
  row: number;
  taskId: number;
  tenant: string;
  generation: number;
  fromMs: number;
  toMs: number;
  /** The event that ended the lease (completed, retry_scheduled, lease_expired, ...), or `running` at the end. */
  end: string;
}

export interface TimelineMarker {
  /** Index into lanes (the queue row is lane 0). */
  lane: number;
  atMs: number;
  kind: MarkerKind;
  label: string;
}

export interface TimelineBand {
  lane: number | null;
  fromMs: number;
  toMs: number;
  kind: 'paused' | 'scheduler-down';
}

export interface TimelineModel {
  seed: string;
  index: number;
  verdict: string;
  /** Length of the run, and where the liveness phase began (S5), in ms from the start. */
  endMs: number;
  safetyEndMs: number;
  lanes: TimelineLane[];
  spans: TimelineSpan[];
  markers: TimelineMarker[];
  bands: TimelineBand[];
  /** Spans or markers left out past the caps (a huge run); the rest are drawn. */
  truncated: { spans: number; markers: number };
  /** Tasks a violation of this seed names: their spans are outlined. */
  highlight: number[];
  /** A7: the seed's runs of steps whose tool calls form a graph (tool-graphs.ts); absent when it has none. */
  graphs?: GraphRunView[];
  /** Issue 34: tasks waiting per tenant over time, and under fair share the weighted service (tenant-series.ts). */
  tenantCharts?: TenantCharts;
}

export const MAX_SPANS = 6_000;
export const MAX_MARKERS = 4_000;
/** The queue's own row: scheduler restarts, clock jumps, refused enqueues. */
export const QUEUE_LANE = 'queue';

export interface TimelineInput {
  seed: string;
  index: number;
  verdict: string;
  startMs: number;
  safetyEndMs: number;
  endMs: number;
  entries: readonly HistoryEntry[];
  events: readonly TaskEvent[];
  tenantOf: (taskId: number) => string;
  /** Tasks to outline (named by a violation). */
  highlight?: readonly number[];
}

/** `w3#2` -> worker 3, incarnation 2; anything else sorts last. */
function laneOrder(id: string): [number, number] {
  const match = /^w(\d+)#(\d+)$/.exec(id);
  return match === null ? [Number.MAX_SAFE_INTEGER, 0] : [Number(match[1]), Number(match[2])];
}

/**
 * Maps an event id to the history time at which it had committed: the first history entry whose
 * recorded cursor (`data.ev`, the newest event id when the call returned) reaches it. Every queue call
 * of the simulation records that cursor, so this is exact to the call that wrote the event, and it
 * stays right across clock jumps, which move the core's clock but not the timeline.
 */
export function eventTimes(entries: readonly HistoryEntry[]): (eventId: number) => number | undefined {
  const cursors: number[] = [];
  const times: number[] = [];
  let max = 0;
  for (const entry of entries) {
    const ev = (entry.data as { ev?: unknown } | undefined)?.ev;
    if (typeof ev === 'number' && ev > max) {
      max = ev;
      cursors.push(ev);
      times.push(entry.timeMs);
    }
  }
  return (eventId) => {
    let low = 0;
    let high = cursors.length - 1;
    let found = -1;
    while (low <= high) {
      const middle = (low + high) >> 1;
      if (cursors[middle]! >= eventId) {
        found = middle;
        high = middle - 1;
      } else low = middle + 1;
    }
    return found < 0 ? undefined : times[found];
  };
}

export function buildTimeline(input: TimelineInput): TimelineModel {
  const { entries, events, startMs } = input;
  const rel = (ms: number) => Math.max(0, ms - startMs);
  const endMs = rel(input.endMs);
  const timeOf = eventTimes(entries);
  const eventTime = (event: TaskEvent) => rel(timeOf(event.id) ?? event.at);

  // Lanes: the queue row, then one per incarnation that started or held a lease.
  const laneIds = new Set<string>();
  const started = new Map<string, number>();
  const killed = new Map<string, number>();
  const exited = new Map<string, number>();
  for (const entry of entries) {
    if (entry.type !== 'note') continue;
    if (entry.kind === 'start' && !started.has(entry.actor)) started.set(entry.actor, rel(entry.timeMs));
    if (entry.kind === 'kill' && !killed.has(entry.actor)) killed.set(entry.actor, rel(entry.timeMs));
    if (entry.kind === 'exit' && !killed.has(entry.actor) && !exited.has(entry.actor)) exited.set(entry.actor, rel(entry.timeMs));
    if (entry.kind === 'start' || entry.kind === 'kill' || entry.kind === 'pause') laneIds.add(entry.actor);
  }
  for (const event of events) if (event.type === 'claimed' && event.workerId !== undefined) laneIds.add(event.workerId);
  const sortedIds = [...laneIds].sort((a, b) => {
    const [wa, ia] = laneOrder(a);
    const [wb, ib] = laneOrder(b);
    return wa - wb || ia - ib || (a < b ? -1 : a > b ? 1 : 0);
  });
  const lanes: TimelineLane[] = [{ id: QUEUE_LANE, rows: 1, fromMs: 0, toMs: endMs, end: 'end' }];
  for (const id of sortedIds) {
    const kill = killed.get(id);
    const exit = exited.get(id);
    lanes.push({ id, rows: 1, fromMs: started.get(id) ?? 0, toMs: kill ?? exit ?? endMs, end: kill !== undefined ? 'killed' : exit !== undefined ? 'exited' : 'end' });
  }
  const laneIndex = new Map(lanes.map((lane, index) => [lane.id, index]));

  // Spans: a claim until the event that moved the task out of running.
  const spans: TimelineSpan[] = [];
  const open = new Map<number, TimelineSpan>();
  const markers: TimelineMarker[] = [];
  let droppedSpans = 0;
  let droppedMarkers = 0;
  const mark = (marker: TimelineMarker) => {
    if (markers.length < MAX_MARKERS) markers.push(marker);
    else droppedMarkers++;
  };
  for (const event of events) {
    if (event.type === 'claimed') {
      const workerId = event.workerId ?? String(event.data.workerId ?? '');
      const lane = laneIndex.get(workerId);
      const generation = event.generation ?? Number(event.data.generation ?? 0);
      if (lane === undefined) continue;
      const span: TimelineSpan = { lane, row: 0, taskId: event.taskId, tenant: input.tenantOf(event.taskId), generation, fromMs: eventTime(event), toMs: endMs, end: 'running' };
      if (spans.length < MAX_SPANS) {
        spans.push(span);
        open.set(event.taskId, span);
      } else droppedSpans++;
      continue;
    }
    if (event.data.from !== 'running') continue;
    const span = open.get(event.taskId);
    if (span === undefined) continue;
    open.delete(event.taskId);
    span.toMs = Math.max(span.fromMs, eventTime(event));
    span.end = event.type;
    if (event.type === 'lease_expired') mark({ lane: span.lane, atMs: span.toMs, kind: 'lease-expired', label: `task ${event.taskId} g${span.generation}: lease expired, task uncertain` });
  }
  packRows(spans, lanes);

  // Markers and bands from the history.
  const bands: TimelineBand[] = [];
  const pausedAt = new Map<string, number>();
  let downAt: number | undefined;
  for (const entry of entries) {
    const at = rel(entry.timeMs);
    if (entry.type === 'note') {
      const lane = laneIndex.get(entry.actor);
      const data = entry.data as Record<string, unknown> | undefined;
      switch (entry.kind) {
        case 'kill':
          if (lane !== undefined) mark({ lane, atMs: at, kind: 'kill', label: `${entry.actor} killed${reasonSuffix(data)}` });
          break;
        case 'revive': {
          const next = sortedIds.find((id) => id.startsWith(`${entry.actor}#`) && (started.get(id) ?? -1) >= at);
          const target = next === undefined ? undefined : laneIndex.get(next);
          if (target !== undefined) mark({ lane: target, atMs: at, kind: 'revive', label: `${entry.actor} revived as ${next}` });
          break;
        }
        case 'pause':
          if (lane !== undefined) {
            pausedAt.set(entry.actor, at);
            mark({ lane, atMs: at, kind: 'pause', label: `${entry.actor} paused${reasonSuffix(data)}` });
          }
          break;
        case 'resume':
          if (lane !== undefined) {
            bands.push({ lane, fromMs: pausedAt.get(entry.actor) ?? at, toMs: at, kind: 'paused' });
            pausedAt.delete(entry.actor);
            mark({ lane, atMs: at, kind: 'resume', label: `${entry.actor} resumed` });
          }
          break;
        case 'restart':
          downAt = at;
          mark({ lane: 0, atMs: at, kind: 'restart', label: 'scheduler restart: database closed' });
          break;
        case 'reopen':
          if (downAt !== undefined) bands.push({ lane: null, fromMs: downAt, toMs: at, kind: 'scheduler-down' });
          downAt = undefined;
          mark({ lane: 0, atMs: at, kind: 'reopen', label: 'scheduler reopened the database' });
          break;
        case 'clock-jump':
          mark({ lane: 0, atMs: at, kind: 'clock-jump', label: `clock jump ${String(data?.deltaMs ?? '?')} ms` });
          break;
        case 'duplicate-delivery':
          if (lane !== undefined) mark({ lane, atMs: at, kind: 'duplicate-delivery', label: `duplicate delivery of task ${String(data?.taskId ?? '?')} to ${entry.actor}` });
          break;
        default:
          break;
      }
      continue;
    }
    if (entry.type !== 'fail') continue;
    if (entry.op === 'enqueue' && entry.reason !== 'unavailable') {
      const data = entry.data as Record<string, unknown> | undefined;
      mark({ lane: 0, atMs: at, kind: 'enqueue-refused', label: `enqueue ${String(data?.tenant ?? '')}/${String(data?.topic ?? '')} refused: ${entry.reason}` });
    } else if (entry.reason === 'stale_lease') {
      const lane = laneIndex.get(entry.actor);
      if (lane !== undefined) mark({ lane, atMs: at, kind: 'refused', label: `${entry.op} by ${entry.actor} for task ${entry.taskId ?? '?'} g${entry.generation ?? '?'} refused: stale_lease` });
    } else if (entry.op === 'confirmStopped') {
      // A late or duplicate stop confirmation the queue turned down (Q11): drawn on the queue's row.
      mark({ lane: 0, atMs: at, kind: 'refused', label: `confirmStopped for task ${entry.taskId ?? '?'} g${entry.generation ?? '?'} refused: ${entry.reason}` });
    }
  }
  for (const [actor, from] of pausedAt) {
    const lane = laneIndex.get(actor);
    if (lane !== undefined) bands.push({ lane, fromMs: from, toMs: lanes[lane]!.toMs, kind: 'paused' });
  }
  if (downAt !== undefined) bands.push({ lane: null, fromMs: downAt, toMs: endMs, kind: 'scheduler-down' });

  return {
    seed: input.seed,
    index: input.index,
    verdict: input.verdict,
    endMs,
    safetyEndMs: rel(input.safetyEndMs),
    lanes,
    spans,
    markers,
    bands,
    truncated: { spans: droppedSpans, markers: droppedMarkers },
    highlight: [...new Set(input.highlight ?? [])].sort((a, b) => a - b),
  };
}

/** Greedy interval packing per lane: each span takes the first row that is free at its start. */
function packRows(spans: TimelineSpan[], lanes: TimelineLane[]): void {
  const rowEnds = new Map<number, number[]>();
  const order = [...spans].sort((a, b) => a.fromMs - b.fromMs || a.taskId - b.taskId);
  for (const span of order) {
    let ends = rowEnds.get(span.lane);
    if (ends === undefined) rowEnds.set(span.lane, (ends = []));
    let row = ends.findIndex((end) => end <= span.fromMs);
    if (row < 0) {
      row = ends.length;
      ends.push(span.toMs);
    } else ends[row] = span.toMs;
    span.row = row;
    const lane = lanes[span.lane]!;
    lane.rows = Math.max(lane.rows, row + 1);
  }
}

function reasonSuffix(data: Record<string, unknown> | undefined): string {
  const why = data?.fault ?? data?.reason;
  return why === undefined ? '' : ` (${String(why)})`;
}
