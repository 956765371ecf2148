import type { HistoryEntry } from '../history.ts';
import type { Violation } from '../report-types.ts';

/** Entries shown before and after each offending entry. */
export const TIMELINE_CONTEXT = 20;
/** Offending entries a timeline is centred on; a violation naming more is cut here, and says so. */
const ANCHORS_MAX = 6;
const DATA_CHARS_MAX = 100;

/**
 * The replay timeline: the history around the first violation, one entry per line, the offending
 * entries (the violation's `at` indexes) marked `>>`. Time is virtual, from the start of the run.
 */
export function timelineAround(entries: readonly HistoryEntry[], violation: Violation, startMs: number, context = TIMELINE_CONTEXT): string[] {
  const { anchors, note } = anchorsOf(entries, violation);
  if (anchors.length === 0) return [`(the violation names no history entry and no task, so there is no timeline to show; write the whole history with --trace FILE.jsonl)`];
  const marked = new Set(anchors);
  const shown = anchors.slice(0, ANCHORS_MAX);
  const windows = mergeWindows(shown.map((index) => [Math.max(0, index - context), Math.min(entries.length - 1, index + context)] as [number, number]));
  const lines: string[] = [];
  if (note !== undefined) lines.push(note);
  if (anchors.length > shown.length) lines.push(`(${anchors.length} offending entries; the timeline is centred on the first ${shown.length}, all are marked >>)`);
  let previousEnd = -1;
  for (const [from, to] of windows) {
    if (from > previousEnd + 1) lines.push(`      ... ${from - previousEnd - 1} entries ...`);
    for (let index = from; index <= to; index++) lines.push(renderEntry(entries[index] as HistoryEntry, startMs, marked.has(index)));
    previousEnd = to;
  }
  if (previousEnd < entries.length - 1) lines.push(`      ... ${entries.length - 1 - previousEnd} entries to the end of the run ...`);
  return lines;
}

function anchorsOf(entries: readonly HistoryEntry[], violation: Violation): { anchors: number[]; note?: string } {
  const at = (violation.at ?? []).filter((index) => Number.isInteger(index) && index >= 0 && index < entries.length);
  if (at.length > 0) return { anchors: [...new Set(at)].sort((a, b) => a - b) };
  const taskId = namedTask(violation);
  if (taskId === undefined) return { anchors: [] };
  const last = entries.findLastIndex((entry) => 'taskId' in entry && entry.taskId === taskId);
  if (last < 0) return { anchors: [] };
  const from = violation.taskId === undefined ? ` (named in its message)` : '';
  return { anchors: [last], note: `(the violation names no history entry; the timeline is centred on the last entry of task ${taskId}${from})` };
}

/**
 * The task a violation is about: its `taskId`, else the one task its message's first line names (`task
 * 12`), as an expectation's message does ("expect[0] final-state: task 5 ('L') ended done"). A message
 * naming two or more tasks names none of them in particular: undefined.
 */
export function namedTask(violation: Pick<Violation, 'taskId' | 'message'>): number | undefined {
  if (violation.taskId !== undefined) return violation.taskId;
  const firstLine = violation.message.split('\n')[0] ?? '';
  const named = new Set([...firstLine.matchAll(/\btask (\d+)\b/g)].map((match) => Number(match[1])));
  return named.size === 1 ? ([...named][0] as number) : undefined;
}

/** Entries of one task shown at most; a longer task shows its first and last ones, the rest elided. */
export const TASK_ENTRIES_MAX = 60;

/**
 * The timeline of one task: every history entry that names it (and the invoke of each completion that
 * does, as an enqueue's, made before the id existed), in order, marked `>>` where the violation points
 * (its `at` indexes). Empty when the history never names the task.
 */
export function taskTimeline(entries: readonly HistoryEntry[], taskId: number, startMs: number, offending: readonly number[] = [], max = TASK_ENTRIES_MAX): string[] {
  const named = (entry: HistoryEntry) => 'taskId' in entry && entry.taskId === taskId;
  // An enqueue's invoke comes before the id exists: it is the task's when its completion names the task.
  const invokes = new Set(entries.filter((entry) => named(entry) && 'invokeIndex' in entry).map((entry) => (entry as { invokeIndex: number }).invokeIndex));
  const own = entries.filter((entry) => named(entry) || invokes.has(entry.index));
  if (own.length === 0) return [];
  const marked = new Set(offending);
  const render = (entry: HistoryEntry) => renderEntry(entry, startMs, marked.has(entry.index));
  if (own.length <= max) return own.map(render);
  const head = Math.floor(max / 3);
  const tail = max - head;
  return [...own.slice(0, head).map(render), `      ... ${own.length - max} entries of task ${taskId} ...`, ...own.slice(own.length - tail).map(render)];
}

function mergeWindows(windows: [number, number][]): [number, number][] {
  const merged: [number, number][] = [];
  for (const [from, to] of windows.sort((a, b) => a[0] - b[0])) {
    const last = merged.at(-1);
    if (last !== undefined && from <= last[1] + 1) last[1] = Math.max(last[1], to);
    else merged.push([from, to]);
  }
  return merged;
}

/** `>> #34     +12.345  worker-1#1  complete FAIL stale_lease   task 3 g1  {"ev":12}` */
export function renderEntry(entry: HistoryEntry, startMs: number, offending: boolean): string {
  const marker = offending ? '>>' : '  ';
  const what =
    entry.type === 'invoke' ? entry.op : entry.type === 'ok' ? `${entry.op} ok` : entry.type === 'fail' ? `${entry.op} FAIL ${entry.reason}` : `[${entry.kind}]`;
  const task = 'taskId' in entry && entry.taskId !== undefined ? `task ${entry.taskId}${entry.generation === undefined ? '' : ` g${entry.generation}`}` : '';
  const data = entry.data === undefined ? '' : compact(JSON.stringify(entry.data));
  const cells = [`${marker} #${String(entry.index).padEnd(6)}`, virtualTime(entry.timeMs - startMs).padStart(9), entry.actor.padEnd(12), what.padEnd(28), task.padEnd(12), data];
  return cells.join(' ').trimEnd();
}

/** `+12.345`: seconds and milliseconds of virtual time since the run began. */
export function virtualTime(ms: number): string {
  const sign = ms < 0 ? '-' : '+';
  const whole = Math.abs(Math.round(ms));
  return `${sign}${Math.floor(whole / 1000)}.${String(whole % 1000).padStart(3, '0')}`;
}

function compact(json: string): string {
  return json.length <= DATA_CHARS_MAX ? json : `${json.slice(0, DATA_CHARS_MAX - 3)}...`;
}
