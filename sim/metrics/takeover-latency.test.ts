import { describe, expect, it } from 'vitest';
import type { TaskEvent } from '../../src/queue/types.ts';
import type { HistoryEntry } from '../history.ts';
import { foldToolCards } from './tool-cards.ts';
import { latencyDistribution, runsHeldAt, takeoverLatency, unresolvedTakeovers } from './takeover-latency.ts';

let nextId = 1;
function event(taskId: number, seq: number, type: string, at: number, data: Record<string, unknown> = {}, by?: { workerId: string; generation: number }): TaskEvent {
  return { id: nextId++, taskId, seq, type, at, data, ...(by ?? {}) };
}

const killNote = (actor: string, timeMs: number): HistoryEntry => ({ type: 'note', kind: 'kill', index: 0, timeMs, actor });

/** Task 1 is killed mid-run and resumed from a checkpoint; task 2 finished before the kill; task 3 starts over. */
function run() {
  // Ids start at 1 in every call, so a test sees the same events whichever tests called run() before it.
  nextId = 1;
  const a = { workerId: 'w0#1', generation: 1 };
  const events: TaskEvent[] = [
    event(1, 1, 'enqueued', 0),
    event(1, 2, 'claimed', 1_000, { from: 'ready', to: 'running' }, a),
    event(1, 3, 'checkpoint', 3_000, { kind: 'A' }, a),
    event(1, 4, 'tool_result', 3_500, { toolCallId: 't1-s0-c0' }, a),
    event(1, 5, 'lease_expired', 31_000, { from: 'running', to: 'uncertain' }),
    event(1, 6, 'stop_confirmed', 35_000, { from: 'uncertain', to: 'ready' }),
    event(1, 7, 'claimed', 36_000, { from: 'ready', to: 'running' }, { workerId: 'w1#1', generation: 2 }),
    event(1, 8, 'task_resumed', 36_000, { checkpointEventSeq: 3 }, { workerId: 'w1#1', generation: 2 }),
    event(1, 9, 'tool_result', 37_000, { toolCallId: 't1-s0-c0' }, { workerId: 'w1#1', generation: 2 }),
    event(2, 1, 'enqueued', 0),
    event(2, 2, 'claimed', 1_000, { from: 'ready', to: 'running' }, a),
    event(2, 3, 'completed', 4_000, { from: 'running', to: 'done' }, a),
    event(3, 1, 'enqueued', 0),
    event(3, 2, 'claimed', 1_000, { from: 'ready', to: 'running' }, a),
    event(3, 3, 'lease_expired', 31_000, { from: 'running', to: 'uncertain' }),
    event(3, 4, 'stop_confirmed', 35_000, { from: 'uncertain', to: 'ready' }),
    event(3, 5, 'claimed', 38_000, { from: 'ready', to: 'running' }, { workerId: 'w1#1', generation: 2 }),
  ];
  return { events, history: { entries: () => [killNote('w0#1', 4_000)] } };
}

describe('takeover latency (seed 002: kill to task_resumed)', () => {
  it('measures each run the killed worker held, to task_resumed or, with no checkpoint, to the claim', () => {
    const { samples, resumed, all } = takeoverLatency([run()]);
    expect(samples.map(({ taskId, latencyMs, resumedAtMs }) => ({ taskId, latencyMs, resumed: resumedAtMs !== undefined }))).toEqual([
      { taskId: 1, latencyMs: 32_000, resumed: true },
      { taskId: 3, latencyMs: 34_000, resumed: false },
    ]);
    expect(resumed).toEqual({ count: 1, minMs: 32_000, p50Ms: 32_000, p90Ms: 32_000, maxMs: 32_000 });
    expect(all?.count).toBe(2);
    expect(runsHeldAt(run().events, 'w0#1', 4_000)).toEqual([{ taskId: 1, generation: 1 }, { taskId: 3, generation: 1 }]);
  });

  it('lists a held run nobody took over', () => {
    const lost = run();
    lost.events = lost.events.filter((e) => !(e.taskId === 3 && e.seq === 5));
    expect(unresolvedTakeovers(lost)).toEqual([{ taskId: 3, killed: 'w0#1', killedAtMs: 4_000 }]);
  });

  it('takes nearest-rank percentiles', () => {
    expect(latencyDistribution([5, 1, 4, 2, 3, 6, 7, 8, 9, 10])).toEqual({ count: 10, minMs: 1, p50Ms: 5, p90Ms: 9, maxMs: 10 });
    expect(latencyDistribution([])).toBeUndefined();
  });
});

describe('tool cards as a client folds them (R2)', () => {
  it('folds the half-finished step at task_resumed, then shows one card per tool-call id', () => {
    const folded = foldToolCards(run().events.filter((e) => e.taskId === 1));
    expect(folded).toEqual({ emitted: 2, foldedByResume: 1, duplicatesAfterResume: [], shown: ['t1-s0-c0'], unresolvedResumes: [] });
  });

  it('cannot fold when task_resumed names no checkpoint event, and then the card shows twice', () => {
    const events = run().events.filter((e) => e.taskId === 1).map((e) => (e.type === 'task_resumed' ? { ...e, data: { checkpointEventSeq: 2 } } : e));
    const folded = foldToolCards(events);
    expect(folded.unresolvedResumes).toEqual([8]);
    expect(folded.duplicatesAfterResume).toEqual(['t1-s0-c0']);
  });
});
