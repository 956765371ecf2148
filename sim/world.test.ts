import { canonicalJson, sha256Hex } from '../src/canonical-json.ts';
import { describe, expect, it } from 'vitest';
import { KILL_POINTS, NO_RATES, type FaultPlan, type KillPoint } from './faults/plan.ts';
import type { FailEntry, OkEntry } from './history.ts';
import type { ScenarioSpec } from './scenario.ts';
import { catalogueScenario } from './scenarios/registry.ts';
import { planOf } from './faults/index.ts';
import { SeededRandom } from './random.ts';
import { judge } from './run-scenario.ts';
import { sqliteDatabaseFor, World, type WorldResult } from './world.ts';
import { topicsOnly, without } from './workloads/__test-helpers__/parts.ts';

// mixed without its client swarm: these probes count every arrival and call.
const mixed = { ...catalogueScenario('mixed'), workload: without(catalogueScenario('mixed').workload, 'client-swarm') };

/** One tenant, one topic whose script has two steps and a write effect: a run with every kind of await. */
function probe(plan: FaultPlan, overrides: Partial<ScenarioSpec> = {}): ScenarioSpec {
  return {
    ...mixed,
    name: 'probe',
    workers: { ...mixed.workers, count: 2 },
    queue: { globalLimit: 2, perTenantLimit: 2 },
    workload: topicsOnly(mixed.workload, { tenants: ['acme'], count: 1, newVersionProbability: 0, arrivalWindowMs: 0 }, { writeProbability: 1, steps: [2, 2], callsPerStep: [1, 1] }),
    faults: { plan },
    phases: { safetyMs: 240_000, livenessMs: 600_000 },
    ...overrides,
  };
}

function killAt(point: KillPoint): FaultPlan {
  return { timed: [], points: [{ kind: 'kill-at', point, occurrence: 1, reviveAfterMs: 5_000 }], rates: { ...NO_RATES } };
}

function typesOf(run: WorldResult): string[] {
  return run.events.map((event) => event.type);
}

describe('S6 determinism of the simulator', () => {
  it('gives the same trace hash for the same seed and different hashes for different seeds', async () => {
    const hashes = new Map<string, string>();
    for (const seed of ['1', '2', '3', '4', '5', '6', '7', '8']) {
      const first = await new World(mixed, seed).run();
      const second = await new World(mixed, seed).run();
      expect(first.crash).toBeUndefined();
      expect(second.history.traceHash(), `seed ${seed}`).toBe(first.history.traceHash());
      hashes.set(seed, first.history.traceHash());
    }
    expect(new Set(hashes.values()).size).toBe(hashes.size);
  });

  it('makes the trace hash cover what the run left in the database, not only the history', async () => {
    const run = await new World(mixed, '3').run();
    const notes = run.history.entries().filter((entry) => entry.type === 'note' && entry.kind === 'final-database');
    expect(notes).toHaveLength(1);
    const stored = {
      tasks: run.final.tasks,
      events: run.events,
      checkpoints: [...run.checkpoints].map(([id, checkpoint]) => [id, checkpoint ?? null]),
      holds: run.holds,
      deadLetters: run.deadLetters,
      effects: run.effects,
    };
    expect((notes[0]!.data as { sha256: string }).sha256).toBe(sha256Hex(canonicalJson(stored)));
    // One changed event time (a write path that read an ambient clock) changes the digest.
    const changed = { ...stored, events: stored.events.map((event, index) => (index === 5 ? { ...event, at: event.at + 1 } : event)) };
    expect(sha256Hex(canonicalJson(changed))).not.toBe((notes[0]!.data as { sha256: string }).sha256);
  });
});

/**
 * Transaction boundaries the probe's run never reaches: its one task is never cancelled, never fails,
 * and its first run finishes unless killed, so no worker reads it back (get, lastCheckpoint), hands it
 * back (interrupt), acknowledges a cancel or fails it. A kill planned there never fires.
 */
const NOT_IN_PROBE = new Set<KillPoint>(['before_get', 'before_lastCheckpoint', 'before_acknowledgeCancel', 'before_interrupt', 'before_fail']);

describe('S4 kills at each kind of await', () => {
  for (const point of KILL_POINTS) {
    it(`takes over after a kill ${point.replaceAll('_', ' ')} and completes the task once`, async () => {
      const run = await new World(probe(killAt(point)), `kill-${point}`).run();
      expect(run.crash).toBeUndefined();
      const kills = run.history.entries().filter((entry) => entry.type === 'note' && entry.kind === 'kill');
      const task = run.final.tasks[0]!;
      expect(task.state).toBe('done');
      expect(run.provider.executions).toHaveLength(1);
      if (NOT_IN_PROBE.has(point)) {
        expect(kills, 'the probe never reaches this point').toHaveLength(0);
        expect(task.generation).toBe(1);
        return;
      }
      expect(kills, 'the planned kill happened').toHaveLength(1);
      const types = typesOf(run);
      if (point === 'before_claim') {
        // The worker died before its claim was sent: the task was never held, so nobody takes it over.
        expect(task.generation).toBe(1);
        expect(types).not.toContain('stop_confirmed');
      } else if (point === 'after_terminal_write') {
        // The run had already committed: nothing to take over, nothing to repeat.
        expect(task.generation).toBe(1);
        expect(types).not.toContain('stop_confirmed');
      } else {
        // The dead holder's lease lapsed, the supervisor confirmed the stop, and a new generation finished.
        expect(task.generation).toBe(2);
        const expiredAt = types.indexOf('lease_expired');
        const confirmedAt = types.indexOf('stop_confirmed');
        const reclaimedAt = types.lastIndexOf('claimed');
        expect(expiredAt).toBeGreaterThan(-1);
        expect(confirmedAt).toBeGreaterThan(expiredAt);
        expect(reclaimedAt).toBeGreaterThan(confirmedAt);
        const confirm = run.events[confirmedAt]!;
        expect(confirm.data).toMatchObject({ source: 'supervisor', generation: 1 });
      }
      // R3: the write effect reached the provider exactly once, whatever the kill interrupted.
      expect(run.provider.executions).toHaveLength(1);
    });
  }
});

describe('error-at: a model or tool call that fails at a known moment', () => {
  const errorAt = (point: 'before_model_call' | 'before_tool_call', fields: { tenant?: string; errorClass?: 'rate_limited' | 'permission_denied' } = {}): FaultPlan => ({
    timed: [],
    points: [{ kind: 'error-at', point, occurrence: 1, errorClass: fields.errorClass ?? 'rate_limited', ...(fields.tenant === undefined ? {} : { tenant: fields.tenant }) }],
    rates: { ...NO_RATES },
  });
  const failures = (run: WorldResult) => run.events.filter((event) => event.type === 'retry_scheduled' || event.type === 'failed');

  for (const point of ['before_model_call', 'before_tool_call'] as const) {
    it(`fails the call ${point.replaceAll('_', ' ')} with its class: the run backs off and the retry finishes the task once`, async () => {
      const run = await new World(probe(errorAt(point)), `error-${point}`).run();
      expect(run.crash).toBeUndefined();
      const notes = run.history.entries().filter((entry) => entry.type === 'note' && entry.kind === 'error-at');
      expect(notes.map((note) => note.data)).toEqual([{ at: point, errorClass: 'rate_limited' }]);
      expect(failures(run).map((event) => [event.type, (event.data as { errorClass?: string }).errorClass])).toEqual([['retry_scheduled', 'rate_limited']]);
      expect(run.final.tasks[0]!.state).toBe('done');
      expect(run.provider.executions).toHaveLength(1);
    });
  }

  it('ends the task failed with a class that is not retried', async () => {
    const run = await new World(probe(errorAt('before_model_call', { errorClass: 'permission_denied' })), 'error-fatal').run();
    expect(failures(run).map((event) => event.type)).toEqual(['failed']);
    expect(run.final.tasks[0]!.state).toBe('failed');
  });

  it("counts only the calls of its tenant's runs", async () => {
    const other = await new World(probe(errorAt('before_model_call', { tenant: 'globex' })), 'error-tenant').run();
    expect(other.history.entries().filter((entry) => entry.type === 'note' && entry.kind === 'error-at')).toHaveLength(0);
    expect(failures(other)).toEqual([]);
    const own = await new World(probe(errorAt('before_model_call', { tenant: 'acme' })), 'error-tenant').run();
    expect(failures(own).map((event) => event.type)).toEqual(['retry_scheduled']);
  });
});

describe('S4 pause: a zombie wakes after its lease', () => {
  it('refuses the first write of a worker paused 45 s under a 30 s lease, and it writes nothing after', async () => {
    const plan: FaultPlan = { timed: [{ kind: 'pause', atMs: 1_500, worker: 0, durationMs: 45_000 }], points: [], rates: { ...NO_RATES } };
    // No transaction waits for the others: the timed pause is aimed at worker 0 as the task's holder,
    // and a reordered first claim would hand the task to worker 1.
    const run = await new World(probe(plan, { workers: { ...mixed.workers, count: 2 }, fleet: { interleave: 0, maxWaitMs: 0 } }), 'zombie').run();
    expect(run.crash).toBeUndefined();
    const entries = run.history.entries();
    const resumeIndex = entries.findIndex((entry) => entry.type === 'note' && entry.kind === 'resume');
    expect(resumeIndex).toBeGreaterThan(-1);
    const zombie = entries[resumeIndex]!.actor;
    const completions = entries.filter((entry): entry is OkEntry | FailEntry => entry.type === 'ok' || entry.type === 'fail');
    const writesAfterWake = completions.filter((entry) => entry.index > resumeIndex && entry.actor === zombie);
    const heldTask = completions.find((entry) => entry.type === 'ok' && entry.op === 'claim' && entry.actor === zombie);
    expect(heldTask, 'the paused worker held the task when it froze').toBeDefined();
    const reads = new Set(['get', 'lastCheckpoint', 'effectResult', 'claim']);
    const firstWrite = writesAfterWake.find((entry) => !reads.has(entry.op));
    expect(firstWrite).toMatchObject({ type: 'fail', reason: 'stale_lease' });
    // Nothing more from the zombie's generation (the same worker may later claim the task afresh).
    const staleGeneration = writesAfterWake.filter((entry) => entry.taskId === heldTask!.taskId && entry.generation === heldTask!.generation);
    expect(staleGeneration.filter((entry) => entry.type === 'ok' && !reads.has(entry.op))).toEqual([]);
    // Exactly one write attempt after waking: the refused one. The heartbeat loop makes none.
    expect(staleGeneration.filter((entry) => !reads.has(entry.op))).toEqual([firstWrite]);
    expect(run.final.tasks[0]!.state).toBe('done');
    expect(run.final.tasks[0]!.generation).toBe(2);
  });
});

describe('where a run keeps its database', () => {
  it('runs most restart seeds on an image in memory and a sampled share on a real WAL file, each reproducible, each passing', async () => {
    const restart = catalogueScenario('scheduler-restart');
    const seeds = Array.from({ length: 64 }, (_, i) => String(i + 1));
    const kinds = seeds.map((seed) => {
      const random = new SeededRandom(seed);
      return sqliteDatabaseFor(planOf(restart, random), random);
    });
    const onFile = kinds.filter((kind) => kind === 'file').length;
    expect(kinds.filter((kind) => kind === 'memory').length).toBe(0); // every seed of it restarts
    expect(onFile).toBeGreaterThan(0);
    expect(onFile).toBeLessThan(seeds.length / 3); // about RESTART_ON_FILE of them
    // A plan with no restart stays in plain memory; one with a power loss is always on a file.
    expect(sqliteDatabaseFor({ timed: [], points: [], rates: { ...NO_RATES } }, new SeededRandom('x'))).toBe('memory');
    expect(sqliteDatabaseFor({ timed: [{ kind: 'power-loss', atMs: 1_000, downMs: 1_000, keep: 'none' }], points: [], rates: { ...NO_RATES } } as FaultPlan, new SeededRandom('x'))).toBe('file');
    for (const kind of ['file', 'memory-image'] as const) {
      const seed = seeds[kinds.indexOf(kind)]!;
      const first = new World(restart, seed);
      expect(first.database).toBe(kind);
      const a = await first.run();
      const b = await new World(restart, seed).run();
      expect(a.crash).toBeUndefined();
      expect(a.history.traceHash()).toBe(b.history.traceHash());
      expect(judge(a).verdict, `scheduler-restart seed ${seed} on ${kind}`).toBe('pass');
    }
  });
});

describe('a scheduler restart restarts its processes (issue 35, 5b)', () => {
  it('kills every live worker process as the scheduler goes down and starts each again, a new incarnation with a queue of its own, when it reopens', async () => {
    const result = await new World(catalogueScenario('scheduler-restart'), '1').run();
    expect(result.crash).toBeUndefined();
    expect(judge(result).verdict).toBe('pass');
    const entries = result.history.entries();
    const notes = entries.filter((entry) => entry.type === 'note');
    const restarts = notes.filter((entry) => entry.kind === 'restart');
    expect(restarts.length).toBeGreaterThan(0);
    for (const restart of restarts) {
      const reopen = notes.find((entry) => entry.kind === 'reopen' && entry.index > restart.index)!;
      expect(reopen).toBeDefined();
      // Between the restart and its reopen: the workers' processes died with the scheduler.
      const killed = notes.filter((entry) => entry.kind === 'kill' && entry.index > restart.index && entry.index < reopen.index && (entry.data as { reason?: string }).reason === 'scheduler-restart');
      expect(killed.length).toBeGreaterThan(0);
      for (const kill of killed) {
        const slot = kill.actor.split('#')[0]!;
        // Right after the reopen each comes back as a new incarnation of its slot, which calls the queue it opened.
        const revive = notes.find((entry) => entry.kind === 'revive' && entry.actor === slot && entry.index > reopen.index);
        expect(revive, `${kill.actor} revived after the reopen at ${reopen.index}`).toBeDefined();
        expect(revive!.timeMs).toBe(reopen.timeMs);
        const next = entries.find((entry) => entry.type === 'invoke' && entry.index > revive!.index && entry.actor.startsWith(`${slot}#`));
        if (next !== undefined) expect(next.actor).not.toBe(kill.actor);
      }
    }
  });

  it('leaves the worker processes alive through a restart without processes', async () => {
    const restart = catalogueScenario('scheduler-restart');
    const plan = planOf(restart, new SeededRandom('1'));
    const without: FaultPlan = { ...plan, timed: plan.timed.map((fault) => (fault.kind === 'restart' ? { kind: 'restart', atMs: fault.atMs, downMs: fault.downMs } : fault)) };
    expect(plan.timed.filter((fault) => fault.kind === 'restart' && fault.processes === true).length).toBe(5);
    const result = await new World(restart, '1', without).run();
    expect(result.crash).toBeUndefined();
    const notes = result.history.entries().filter((entry) => entry.type === 'note');
    expect(notes.filter((entry) => entry.kind === 'restart').length).toBeGreaterThan(0);
    expect(notes.filter((entry) => entry.kind === 'kill' && (entry.data as { reason?: string }).reason === 'scheduler-restart')).toEqual([]);
  });
});
