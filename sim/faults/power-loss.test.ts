/**
 * The power-loss fault end to end (faults/power-loss.ts over sim/store/power-loss.ts), and the checkers
 * across the boundary it draws: what legitimately rolled back (claims, heartbeats, checkpoints, event
 * appends, sweeps) is not a violation, and what must not (an acknowledged enqueue, an acknowledged
 * effect-ledger row, a write after the cut by a holder that died with the host) still is.
 */
import { describe, expect, it } from 'vitest';
import { allCheckers } from '../checkers/index.ts';
import { coverageMarks } from '../checkers/marks.ts';
import { expectClean, expectViolation } from '../checkers/__test-helpers__/expect-checker.ts';
import { i1NoDoubleClaim } from '../checkers/i1-no-double-claim.ts';
import { i2StaleLeases } from '../checkers/i2-stale-leases.ts';
import { i8EffectsOnce } from '../checkers/i8-effects-once.ts';
import { i11Contiguous } from '../checkers/i11-no-lost-task.ts';
import { analyse, rolledBack } from '../checkers/timeline.ts';
import type { NoteEntry, OkEntry } from '../history.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import { World, type WorldResult } from '../world.ts';
import { NO_RATES, type FaultPlan } from './plan.ts';
import { drawSwarmPlan, SWARM_KINDS } from './swarm.ts';
import { SeededRandom } from '../random.ts';

const mixed = catalogueScenario('mixed');

/** mixed with one power cut at +9.5 s, when two runs are under way: it rolls back a claim, checkpoints and event appends. */
function plan(keep: 'none' | 'prefix' = 'none', atMs = 9_500): FaultPlan {
  return { timed: [{ kind: 'power-loss', atMs, downMs: 2_000, keep }], points: [], rates: { ...NO_RATES } };
}

async function powerRun(keep: 'none' | 'prefix' = 'none'): Promise<WorldResult> {
  return await new World(mixed, 'power-loss-test', plan(keep)).run();
}

type LostCommit = { commit: number; operation: string; synchronous: string; invoke: number };

function powerNote(world: WorldResult): NoteEntry & { data: { cursor: number; lost: LostCommit[]; kept: number } } {
  const note = world.history.entries().find((entry) => entry.type === 'note' && entry.kind === 'power-loss');
  if (note === undefined) throw new Error('no power-loss note');
  return note as NoteEntry & { data: { cursor: number; lost: LostCommit[]; kept: number } };
}

function oks(world: WorldResult, op: string): OkEntry[] {
  return world.history.entries().filter((entry): entry is OkEntry => entry.type === 'ok' && entry.op === op);
}

describe('power-loss fault', () => {
  it('cuts the power: the database returns to its last synced state, the host comes back, every invariant holds', async () => {
    const world = await powerRun();
    expect(world.crash).toBeUndefined();
    const note = powerNote(world);
    const lost = note.data.lost.map((commit) => commit.operation);
    expect(lost).toContain('claim');
    // Under the default durability only writes that may roll back are ever lost.
    expect(lost.every((operation) => ['claim', 'heartbeat', 'checkpoint', 'appendEvent', 'expireLeases', 'reconcile', 'confirmStopped'].includes(operation))).toBe(true);
    expect(note.data.lost.every((commit) => commit.synchronous === 'NORMAL' && commit.invoke >= 0)).toBe(true);
    // Every worker died with the host.
    const kills = world.history.entries().filter((entry) => entry.type === 'note' && entry.kind === 'kill' && (entry.data as { reason?: string }).reason === 'power-loss');
    expect(kills.length).toBe(mixed.workers.count);
    expect(allCheckers.flatMap((checker) => checker.check(world)).map((violation) => violation.message)).toEqual([]);
    expect(coverageMarks(world)).toMatchObject({ power_loss: 1, power_loss_lost_commits: 1 });
    expect(world.drained).toBe(true);
  });

  it('keeps a seeded prefix of the unsynced commits with keep: prefix, and is deterministic', async () => {
    const first = await powerRun('prefix');
    const second = await powerRun('prefix');
    expect(powerNote(first).data).toEqual(powerNote(second).data);
    expect(first.history.entries().length).toBe(second.history.entries().length);
    expect(allCheckers.flatMap((checker) => checker.check(first)).map((violation) => violation.message)).toEqual([]);
  });

  it('is drawn after every kind that came before it, so their draws are what they were', () => {
    const at = SWARM_KINDS.indexOf('power-loss');
    expect(at).toBeGreaterThan(0);
    const without = { kinds: SWARM_KINDS.slice(0, at), quietProbability: 0.1 };
    const withIt = { kinds: SWARM_KINDS.slice(0, at + 1), quietProbability: 0.1 };
    for (let seed = 0; seed < 50; seed++) {
      const a = drawSwarmPlan(new SeededRandom(`s${seed}`), without, 4, 150_000);
      const b = drawSwarmPlan(new SeededRandom(`s${seed}`), withIt, 4, 150_000);
      expect({ ...b, timed: b.timed.filter((fault) => fault.kind !== 'power-loss') }).toEqual(a);
    }
  });

  it('is followed only by kinds appended after it the same way (pause-at, the storage faults, then the timing faults at points), each leaving the draws before it alone', () => {
    const from = SWARM_KINDS.indexOf('power-loss');
    expect(SWARM_KINDS.slice(from)).toEqual(['power-loss', 'pause-at', 'disk-full', 'io-error', 'clock-jump-at', 'cancel-at']);
    for (let at = from + 1; at < SWARM_KINDS.length; at++) {
      const kind = SWARM_KINDS[at]!;
      for (let seed = 0; seed < 30; seed++) {
        const a = drawSwarmPlan(new SeededRandom(`s${seed}`), { kinds: SWARM_KINDS.slice(0, at), quietProbability: 0.1 }, 4, 150_000);
        const b = drawSwarmPlan(new SeededRandom(`s${seed}`), { kinds: SWARM_KINDS.slice(0, at + 1), quietProbability: 0.1 }, 4, 150_000);
        expect({ ...b, timed: b.timed.filter((fault) => fault.kind !== kind), points: b.points.filter((fault) => fault.kind !== kind) }, kind).toEqual(a);
      }
    }
  });
});

describe('checkers across a power loss', () => {
  it('I1 leaves out a rolled-back claim (its generation is handed out again) but still fails on one that was not', async () => {
    const world = await powerRun();
    const analysis = analyse(world);
    const undone = oks(world, 'claim').filter((entry) => rolledBack(analysis, entry));
    expect(undone.length).toBeGreaterThan(0);
    expectClean(i1NoDoubleClaim, world);
    // Without the note's boundary the same history would look like a double claim or an unlogged one.
    const blind = { ...world, history: world.history };
    const note = powerNote(blind);
    const saved = note.data;
    (note as { data: unknown }).data = { ...(saved as object), lost: [], cursor: Number.MAX_SAFE_INTEGER };
    expectViolation(i1NoDoubleClaim, blind, /has no claimed event|handed to .* by a second claim|log names/);
    (note as { data: unknown }).data = saved;
    // A claim answered after the power came back is judged as any other: one with no claimed event fails.
    const invoke = world.history.invoke('w0#9', 'claim');
    world.history.ok(invoke, { taskId: 1, generation: 99, data: { ev: 1 } });
    expectViolation(i1NoDoubleClaim, { ...world }, /claim by w0#9 of task 1 generation 99 has no claimed event/);
  });

  it('I2 does not hold a rolled-back heartbeat or checkpoint against the log, but fails a write after the cut by a holder that died with the host', async () => {
    const world = await powerRun();
    expectClean(i2StaleLeases, world);
    const analysis = analyse(world);
    const undone = oks(world, 'claim').find((entry) => rolledBack(analysis, entry))!;
    // The dead holder of the rolled-back claim checkpoints after the power came back, and is told ok.
    const invoke = world.history.invoke(undone.actor, 'checkpoint', { taskId: undone.taskId!, generation: undone.generation! });
    world.history.ok(invoke, { data: { ev: world.events.at(-1)!.id } });
    expectViolation(i2StaleLeases, { ...world }, new RegExp(`checkpoint by ${undone.actor}@g${undone.generation} succeeded but no event of it is in the log`));
  });

  it('I11 fails when an acknowledged enqueue is gone after a power-loss note', async () => {
    const world = await powerRun();
    expectClean(i11Contiguous, world);
    const enqueue = oks(world, 'enqueue').find((entry) => entry.index < powerNote(world).index)!;
    const taskId = enqueue.taskId!;
    const gone: WorldResult = {
      ...world,
      final: { ...world.final, tasks: world.final.tasks.filter((task) => task.id !== taskId) },
      events: world.events.filter((event) => event.taskId !== taskId),
    };
    expectViolation(i11Contiguous, gone, new RegExp(`accepted enqueue named task ${taskId}, which does not exist`));
  });

  it('I11 fails when an acknowledged enqueue\'s id was given to a later task (the enqueue rolled back)', async () => {
    const world = await powerRun();
    const taskId = oks(world, 'enqueue')[0]!.taskId!;
    const reused: WorldResult = { ...world, final: { ...world.final, tasks: world.final.tasks.map((task) => (task.id === taskId ? { ...task, topic: 'someone-else' } : task)) } };
    expectViolation(i11Contiguous, reused, /the acknowledged task is gone/);
  });

  it('I11 fails when the power-loss note names an acknowledged enqueue among the commits it rolled back', async () => {
    const world = await powerRun();
    const note = powerNote(world);
    const enqueue = oks(world, 'enqueue').find((entry) => entry.index < note.index)!;
    note.data.lost.push({ commit: 0, operation: 'enqueue', synchronous: 'NORMAL', invoke: enqueue.invokeIndex });
    expectViolation(i11Contiguous, { ...world }, new RegExp(`client's enqueue of task ${enqueue.taskId} was acknowledged .* rolled back by the power loss`));
  });

  it('I8 fails when an acknowledged ledger row is gone after a power loss, and when its key is sent again', async () => {
    const world = await powerRun();
    expectClean(i8EffectsOnce, world);
    expect(powerNote(world).index).toBeGreaterThan(0);
    const record = oks(world, 'recordEffect')[0]!;
    const key = (world.history.entries()[record.invokeIndex]!.data as { requestKey: string }).requestKey;
    expectViolation(i8EffectsOnce, { ...world, effects: world.effects.filter((effect) => effect.requestKey !== key) }, new RegExp(`ledger row of ${key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} was acknowledged`));
    // A takeover after the cut that found no row and asked the provider again: the provider's key
    // deduplicates it (no second execution), so only the ledger rule can see it.
    const first = world.provider.requests.find((request) => request.requestKey === key)!;
    const sentIndex = world.provider.noteSent({ requestKey: key, taskId: first.taskId, generation: first.generation + 1, actor: 'w3#9' });
    world.provider.execute({ ...first, generation: first.generation + 1, actor: 'w3#9', sentIndex }, {});
    expectViolation(i8EffectsOnce, { ...world }, /sent .* again .* after its ledger row was acknowledged/);
  });
});
