import { describe, expect, it } from 'vitest';
import type { HistoryEntry } from '../history.ts';
import { renderEntry, timelineAround, virtualTime } from './timeline.ts';

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
