/**
 * The durability levels in the simulator (src/store/durability.ts): a scenario's `durability` reaches
 * the store the world opens (power-loss-every-commit.json under power loss, process-crash-restarts.json
 * under restarts), the world reports the level the store ran at, and the judges hold each level to what
 * it promises: every_commit loses no commit to a power loss, the default may lose the losable writes
 * only, and process_crash is never run under a power loss (the format refuses it).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { readScenarioFile } from '../check/scenario-file.ts';
import { allCheckers } from '../checkers/index.ts';
import { i11Contiguous } from '../checkers/i11-no-lost-task.ts';
import { expectClean, expectViolation } from '../checkers/__test-helpers__/expect-checker.ts';
import type { ExpectationKind } from '../expectations/types.ts';
import { restartDurable } from '../expectations/restart-durable.ts';
import { expectationSchema } from '../expectations/index.ts';
import { NO_RATES } from '../faults/plan.ts';
import type { NoteEntry } from '../history.ts';
import { simulate } from '../run-scenario.ts';
import { parseScenarioFile } from '../scenario-schema.ts';
import type { ScenarioSpec } from '../scenario.ts';
import type { WorldResult } from '../world.ts';

const load = (name: string): ScenarioSpec => readScenarioFile(join(import.meta.dirname, '..', '..', 'scenarios', `${name}.json`));

function check<S extends { kind: string }>(kind: ExpectationKind<S>, spec: Omit<S, 'kind'>, run: WorldResult): string[] {
  return kind.check(expectationSchema.parse({ kind: kind.kind, ...spec }) as unknown as S, run);
}

function powerNotes(world: WorldResult): (NoteEntry & { data: { lost: { operation: string; synchronous: string }[] } })[] {
  return world.history.entries().filter((entry) => entry.type === 'note' && entry.kind === 'power-loss') as never;
}

describe('durability every_commit under power loss', () => {
  let world: WorldResult;
  let acknowledged: WorldResult;
  beforeAll(async () => {
    const spec = load('power-loss-every-commit');
    world = (await simulate({ scenario: spec, seed: '1' })).world;
    acknowledged = (await simulate({ scenario: { ...spec, durability: 'acknowledged' }, seed: '1' })).world;
  });

  it('runs the store at every_commit: three cuts roll back nothing, every invariant and expectation holds', () => {
    expect(world.durability).toBe('every_commit');
    const notes = powerNotes(world);
    expect(notes).toHaveLength(3);
    expect(notes.flatMap((note) => note.data.lost)).toEqual([]);
    expect(allCheckers.flatMap((checker) => checker.check(world)).map((violation) => violation.message)).toEqual([]);
    expect(check(restartDurable, { across: 'power-loss', minRestarts: 3, durability: 'every_commit' }, world)).toEqual([]);
  });

  it('the same seed at the default level loses losable writes, which restart-durable across power-loss and durability: every_commit both refuse', () => {
    expect(acknowledged.durability).toBe('acknowledged');
    const lost = powerNotes(acknowledged).flatMap((note) => note.data.lost);
    expect(lost.length).toBeGreaterThan(0);
    expect(lost.every((commit) => commit.synchronous === 'NORMAL')).toBe(true);
    // The default promises less, and I11 holds it to that.
    expectClean(i11Contiguous, acknowledged);
    const problems = check(restartDurable, { across: 'power-loss', minRestarts: 3, durability: 'every_commit' }, acknowledged);
    expect(problems[0]).toBe('the store ran at durability acknowledged, expected every_commit');
    expect(problems.join('\n')).toMatch(/the power loss at \+\d+ ms rolled back \d+ commit\(s\)/);
  });

  it('I11 holds a store at every_commit to it: a rolled-back claim is a violation there, not at the default', () => {
    const rolledBackClaim = { ...acknowledged, durability: 'every_commit' as const };
    expectViolation(i11Contiguous, rolledBackClaim, /rolled back by the power loss at history \d+/);
  });

  it('restart-durable across power-loss fails a run with too few cuts', async () => {
    const { world: quiet } = await simulate({ scenario: load('process-crash-restarts'), seed: '1' });
    expect(check(restartDurable, { across: 'power-loss' }, quiet)).toEqual(['the host lost power 0 time(s), expected at least 1']);
  });
});

describe('durability process_crash under restarts', () => {
  it('runs the store at process_crash on a file: every acknowledged write survives four restarts', async () => {
    const { world } = await simulate({ scenario: load('process-crash-restarts'), seed: '1' });
    expect(world.durability).toBe('process_crash');
    expect(allCheckers.flatMap((checker) => checker.check(world)).map((violation) => violation.message)).toEqual([]);
    expect(check(restartDurable, { minRestarts: 4, durability: 'process_crash' }, world)).toEqual([]);
    expect(check(restartDurable, { minRestarts: 4, durability: 'every_commit' }, world)).toEqual(['the store ran at durability process_crash, expected every_commit']);
    // On PGlite PostgreSQL's own settings decide: the level is not asked there, the rest is.
    const { durability: _level, ...onPglite } = world;
    expect(check(restartDurable, { minRestarts: 4, durability: 'process_crash' }, { ...onPglite, store: 'pglite' })).toEqual([]);
    expect(check(restartDurable, { minRestarts: 4, durability: 'process_crash' }, onPglite)).toEqual(['the store ran at durability (none: not a file the store set a level on), expected process_crash']);
  });

  it('a run without a stated durability reports none when it runs in memory', async () => {
    const spec = load('process-crash-restarts');
    const { durability: _stated, ...plain } = spec;
    const { world } = await simulate({ scenario: { ...plain, faults: { plan: { timed: [], points: [], rates: { ...NO_RATES } } } }, seed: '1' });
    expect(world.durability).toBeUndefined();
  });

  it('the format refuses process_crash beside a power loss, in both forms', () => {
    const file = { name: 'x', workload: [{ kind: 'topics' }], durability: 'process_crash', faults: [{ kind: 'power-loss', atMs: 1000 }] };
    const parts = parseScenarioFile(file);
    expect(parts.ok).toBe(false);
    if (!parts.ok) expect(parts.problems).toEqual([{ field: 'faults[0]', problem: expect.stringMatching(/^durability 'process_crash' promises nothing on power loss/) }]);
    const swarm = parseScenarioFile({ ...file, faults: [{ kind: 'swarm' }] });
    expect(swarm.ok).toBe(false);
    expect(parseScenarioFile({ ...file, faults: [{ kind: 'swarm', kinds: ['kill', 'restart'] }] }).ok).toBe(true);
    expect(parseScenarioFile({ ...file, durability: 'every_commit' }).ok).toBe(true);
    const bad = parseScenarioFile({ ...file, durability: 'sometimes', faults: [] });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.problems[0]).toEqual({ field: 'durability', problem: expect.stringMatching(/^expected a durability, one of "acknowledged", "every_commit", "process_crash"/) });
    // The explicit form (a counterexample's) refuses it too.
    const spec = load('power-loss-every-commit');
    const explicit = parseScenarioFile({ ...spec, durability: 'process_crash' });
    expect(explicit.ok).toBe(false);
    if (!explicit.ok) expect(explicit.problems[0]!.problem).toMatch(/^durability 'process_crash' promises nothing on power loss/);
    expect(parseScenarioFile({ ...spec }).ok).toBe(true);
  });
});
