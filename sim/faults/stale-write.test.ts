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

  it('waits for the lease by the clock the queue reads: after the wall clock went back, a live lease is not stale yet', async () => {
    // mixed seed 71641167819277 failed I7 and I8 when the writer judged the lease by the timeline: a
    // clock jumped back 2 s left a killed holder's lease valid for 2 s more than the timeline said, and
    // the "stale" replay landed inside it, so the queue rightly accepted an effect no script intends.
    // With the timeline check, seeds 10 and 12 of this plan each get a stale-replay effect accepted.
    const accepted: string[] = [];
    for (let seed = 1; seed <= 12; seed++) {
      const plan = emptyPlan();
      plan.rates.staleWriteProbability = 1;
      plan.timed.push({ kind: 'clock-jump', atMs: 5_000, deltaMs: -25_000 });
      for (let worker = 0; worker < 4; worker++) plan.timed.push({ kind: 'kill', atMs: 15_000 + 10_000 * worker, worker, reviveAfterMs: 5_000 });
      const { world, report } = await simulate({ scenario: catalogueScenario('mixed'), seed: String(seed), plan });
      const entries = world.history.entries();
      for (const note of entries.filter((entry) => entry.type === 'note' && entry.kind === 'stale-write')) {
        const { taskId, generation } = note.data as { taskId: number; generation: number };
        const writes = entries.slice(note.index + 1).filter((entry): entry is OkEntry | FailEntry => (entry.type === 'ok' || entry.type === 'fail') && entry.taskId === taskId && entry.generation === generation);
        for (const entry of writes.slice(0, 6)) if (entry.type === 'ok') accepted.push(`seed ${seed}: ${entry.op} of task ${taskId} g${generation}`);
      }
      for (const violation of report.violations) accepted.push(`seed ${seed}: ${violation.invariant} ${violation.message}`);
    }
    expect(accepted).toEqual([]);
  });

  it('delivers a late confirmation again when the database stays busy, instead of crashing the run', async () => {
    // mixed seed 260029602785498: a replayed confirmStopped met the busy fault's competing writer past the
    // store's retries, and its BusyError escaped the supervisor's scan as a harness crash.
    const { report, world } = await simulate({ scenario: catalogueScenario('mixed'), seed: '260029602785498' });
    expect(world.crash).toBeUndefined();
    expect(report.violations).toEqual([]);
  });
});
