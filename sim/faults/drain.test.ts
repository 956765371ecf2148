import { describe, expect, it } from 'vitest';
import { coverageMarks } from '../checkers/marks.ts';
import { checkExpectations } from '../expectations/index.ts';
import { simulate } from '../run-scenario.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import type { ScenarioSpec } from '../scenario.ts';
import type { WorldResult } from '../world.ts';
import type { TimedFault } from './plan.ts';

const base = catalogueScenario('graceful-drain');

function planOf(spec: ScenarioSpec): TimedFault[] {
  if (!('plan' in spec.faults)) throw new Error('graceful-drain has an explicit plan');
  return spec.faults.plan.timed;
}

function withTimed(timed: TimedFault[]): ScenarioSpec {
  if (!('plan' in base.faults)) throw new Error('graceful-drain has an explicit plan');
  return { ...base, faults: { plan: { ...base.faults.plan, timed } } };
}

async function world(spec: ScenarioSpec, seed = '1'): Promise<WorldResult> {
  return (await simulate({ scenario: spec, seed })).world;
}

function notes(run: WorldResult, kind: string) {
  return run.history.entries().filter((entry) => entry.type === 'note' && entry.kind === kind);
}

describe('the drain fault (R8, faults/drain.ts)', () => {
  it('runs the production drain: a drain note, runs handed back interrupted, then the incarnation exits and a new one starts reviveAfterMs later', async () => {
    const run = await world(base);
    const drains = notes(run, 'drain');
    const exits = notes(run, 'exit');
    // Six drains of a live or frozen incarnation, and one of a dead worker, which drains nothing.
    expect(drains.map((entry) => entry.actor)).toEqual(exits.map((entry) => entry.actor));
    expect(drains).toHaveLength(6);
    expect(notes(run, 'drain-missed').map((entry) => entry.actor)).toEqual(['w2#2']);
    // The frozen w1#2 drains only when it resumes, 50 s after it froze.
    const frozen = drains.find((entry) => entry.actor === 'w1#2')!;
    expect(frozen.timeMs - run.startMs).toBe(140_000);
    // Each exit is followed, 5 s later, by the worker's next incarnation.
    const first = exits[0]!;
    const next = run.history.entries().find((entry) => entry.type === 'note' && entry.kind === 'start' && entry.actor === 'w0#2')!;
    expect(next.timeMs - first.timeMs).toBe(5_000);
    // The exit note counts the hand-backs, which the event log holds as interrupted events of that incarnation.
    const handedBack = exits.reduce((sum, entry) => sum + Number((entry.data as { interrupted: number }).interrupted), 0);
    expect(run.events.filter((event) => event.type === 'interrupted')).toHaveLength(handedBack);
    expect(coverageMarks(run)).toMatchObject({ drain_interrupted: handedBack });
    expect(coverageMarks(run).drain_finished).toBeGreaterThan(0);
    // An exited incarnation makes no call after its exit note.
    for (const exit of exits) expect(run.history.entries().some((entry) => entry.index > exit.index && entry.actor === exit.actor && entry.type === 'invoke')).toBe(false);
  });

  it('is deterministic: the same seed gives the same trace', async () => {
    const [a, b] = await Promise.all([simulate({ scenario: base, seed: '4' }), simulate({ scenario: base, seed: '4' })]);
    expect(a.report.traceHash).toBe(b.report.traceHash);
  });

  it('is what drain-handback and the marks need: with every drain turned into a kill, nothing is handed back and they fail', async () => {
    const kills = planOf(base).map((fault): TimedFault => (fault.kind === 'drain' ? { kind: 'kill', atMs: fault.atMs, worker: fault.worker, reviveAfterMs: fault.reviveAfterMs } : fault));
    const run = await world(withTimed(kills));
    expect(run.events.some((event) => event.type === 'interrupted')).toBe(false);
    const failed = checkExpectations(run).map((violation) => violation.invariant);
    expect(failed).toEqual(expect.arrayContaining(['expect:drain-handback', 'expect:mark']));
  });
});
