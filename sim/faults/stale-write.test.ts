import { describe, expect, it } from 'vitest';
import { emptyPlan } from './plan.ts';
import type { FailEntry, OkEntry } from '../history.ts';
import { simulate } from '../run-scenario.ts';
import { catalogueScenario } from '../scenarios/registry.ts';

describe('stale writes', () => {
  it("replays a holder's writes once its lease has moved on, and the queue refuses every one", async () => {
    const plan = emptyPlan();
    plan.rates.staleWriteProbability = 1;
    plan.timed.push({ kind: 'kill', atMs: 20_000, worker: 0, reviveAfterMs: 5_000 });
    const { world, report } = await simulate({ scenario: catalogueScenario('mixed'), seed: '3', plan });
    const entries = world.history.entries();
    const notes = entries.filter((entry) => entry.type === 'note' && entry.kind === 'stale-write');
    expect(notes.length).toBeGreaterThan(5);
    expect(report.marks.stale_write).toBe(notes.length);
    // Every write after a stale-write note, up to the next entry of another kind, is a refusal.
    let replayed = 0;
    for (const note of notes) {
      const { taskId, generation } = note.data as { taskId: number; generation: number };
      const writes = entries.slice(note.index + 1).filter((entry): entry is OkEntry | FailEntry => (entry.type === 'ok' || entry.type === 'fail') && entry.taskId === taskId && entry.generation === generation);
      const burst = writes.slice(0, 6);
      for (const entry of burst) {
        replayed++;
        expect(entry.type, `${entry.op} of task ${taskId} g${generation} after a stale-write note`).toBe('fail');
      }
    }
    expect(replayed).toBeGreaterThan(notes.length * 4);
    expect(report.violations).toEqual([]);
  });
});
