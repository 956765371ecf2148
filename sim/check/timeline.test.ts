import { describe, expect, it } from 'vitest';
import type { HistoryEntry } from '../history.ts';
import { namedTask, renderEntry, taskTimeline, timelineAround, virtualTime } from './timeline.ts';

function history(length: number): HistoryEntry[] {
  return Array.from({ length }, (_, index): HistoryEntry =>
    index % 2 === 0
      ? { type: 'invoke', index, timeMs: 1_000 + index * 250, actor: 'w0#1', op: 'complete', taskId: 3, generation: 1 }
      : { type: 'fail', index, timeMs: 1_000 + index * 250, actor: 'w0#1', op: 'complete', invokeIndex: index - 1, reason: 'stale_lease', taskId: 3, generation: 1, data: { ev: index } },
  );
}

describe('replay timeline', () => {
  it('shows the entries around the offending ones, marks them >>, and elides the rest', () => {
    const lines = timelineAround(history(200), { invariant: 'I2', kind: 'safety', message: 'x', at: [100, 105] }, 1_000, 20);
    const shown = lines.filter((line) => /^(>>| {2}) #/.test(line));
    expect(shown).toHaveLength(46); // 80..125
    expect(shown[0]).toMatch(/^ {3}#80 /);
    expect(shown.at(-1)).toMatch(/^ {3}#125 /);
    expect(lines.filter((line) => line.startsWith('>>'))).toEqual([expect.stringMatching(/^>> #100 /), expect.stringMatching(/^>> #105 /)]);
    expect(lines[0]).toBe('      ... 80 entries ...');
    expect(lines.at(-1)).toBe('      ... 74 entries to the end of the run ...');
  });

  it('renders one entry with virtual time, actor, operation, task and generation', () => {
    const [, fail] = history(2) as [HistoryEntry, HistoryEntry];
    expect(renderEntry(fail, 0, true)).toMatch(/^>> #1 +\+1\.250 w0#1 +complete FAIL stale_lease +task 3 g1 +\{"ev":1\}$/);
    expect(virtualTime(61_005)).toBe('+61.005');
  });

  it('centres on the task when the violation names no entry, and says so', () => {
    const lines = timelineAround(history(10), { invariant: 'I11', kind: 'liveness', message: 'x', taskId: 3 }, 0, 2);
    expect(lines[0]).toMatch(/centred on the last entry of task 3/);
    expect(lines.filter((line) => line.startsWith('>>'))).toHaveLength(1);
    expect(timelineAround(history(10), { invariant: 'I11', kind: 'liveness', message: 'x' }, 0)[0]).toMatch(/no timeline to show/);
  });
});

describe('the task a violation names', () => {
  it("takes the task an expectation's message names when the violation carries no taskId, if exactly one", () => {
    const expectation = { invariant: 'expect:final-state', kind: 'safety' as const, message: "expect[0] final-state: task 3 ('L') ended done, expected failed" };
    expect(namedTask(expectation)).toBe(3);
    const lines = timelineAround(history(10), expectation, 0, 2);
    expect(lines[0]).toMatch(/centred on the last entry of task 3 \(named in its message\)/);
    expect(lines.filter((line) => line.startsWith('>>'))).toEqual([expect.stringMatching(/^>> #9 /)]);
    // A taskId wins over the message; two tasks named, or none, name no task; only the first line counts.
    expect(namedTask({ taskId: 4, message: 'task 9' })).toBe(4);
    expect(namedTask({ message: 'task 9 and task 10 both ran' })).toBeUndefined();
    expect(namedTask({ message: 'task 9 waited for task 9' })).toBe(9);
    expect(namedTask({ message: 'quota exceeded\nsee task 9' })).toBeUndefined();
    expect(timelineAround(history(10), { invariant: 'I3', kind: 'safety', message: 'task 3 and task 4' }, 0)[0]).toMatch(/no timeline to show/);
  });

  it("lists every entry of the task, marks the offending ones, and elides the middle of a long one", () => {
    const entries = [...history(6), { type: 'invoke' as const, index: 6, timeMs: 9_000, actor: 'client', op: 'enqueue', taskId: 8 }];
    const lines = taskTimeline(entries, 3, 1_000, [2]);
    expect(lines).toHaveLength(6);
    expect(lines.filter((line) => line.startsWith('>>'))).toEqual([expect.stringMatching(/^>> #2 /)]);
    expect(taskTimeline(entries, 8, 0)).toEqual([expect.stringMatching(/^ {3}#6 .*enqueue +task 8$/)]);
    expect(taskTimeline(entries, 99, 0)).toEqual([]);
    const long = taskTimeline(history(100), 3, 1_000, [], 9);
    expect(long).toHaveLength(10);
    expect(long[3]).toBe('      ... 91 entries of task 3 ...');
    expect(long.at(-1)).toMatch(/^ {3}#99 /);
  });
});

describe('the timeline of a task', () => {
  it("includes the invoke of a completion that names the task, made before the id existed (an enqueue's)", () => {
    const entries: HistoryEntry[] = [
      { type: 'invoke', index: 0, timeMs: 0, actor: 'client', op: 'enqueue' },
      { type: 'invoke', index: 1, timeMs: 0, actor: 'client', op: 'enqueue' },
      { type: 'ok', index: 2, timeMs: 1, actor: 'client', op: 'enqueue', invokeIndex: 1, taskId: 5 },
      { type: 'ok', index: 3, timeMs: 1, actor: 'client', op: 'enqueue', invokeIndex: 0, taskId: 6 },
    ];
    expect(taskTimeline(entries, 5, 0).map((line) => line.slice(0, 6))).toEqual(['   #1 ', '   #2 ']);
  });
});
