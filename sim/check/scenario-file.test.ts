import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findScenario, listScenarios } from '../scenarios/registry.ts';
import { readCounterexample } from './counterexample.ts';
import { readScenarioFile, ScenarioFileError, validateScenario } from './scenario-file.ts';

const scratch = mkdtempSync(join(tmpdir(), 'leasehold-scenario-file-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const mixed = () => structuredClone(findScenario('mixed')) as unknown as Record<string, unknown>;

function problemOf(value: unknown): { field: string; problem: string } | undefined {
  try {
    validateScenario(value);
    return undefined;
  } catch (error) {
    if (!(error instanceof ScenarioFileError)) throw error;
    return { field: error.field, problem: error.problem };
  }
}

describe('scenario files', () => {
  it('accepts every catalogue scenario as written out to JSON', () => {
    // A failure here means ScenarioSpec grew a field that sim/check/scenario-file.ts does not know yet.
    for (const { name } of listScenarios()) expect(problemOf(JSON.parse(JSON.stringify(findScenario(name)))), name).toBeUndefined();
  });

  it.each([
    ['a missing field', (s: Record<string, unknown>) => delete s.phases, 'phases', /is required/],
    ['an unknown field', (s: Record<string, unknown>) => (s.workerz = 1), 'workerz', /unknown field/],
    ['a typo inside a section', (s: Record<string, unknown>) => ((s.workload as Record<string, unknown>).tenant = ['a']), 'workload.tenant', /unknown field/],
    ['a range upside down', (s: Record<string, unknown>) => ((s.model as Record<string, unknown>).latencyMs = [9, 1]), 'model.latencyMs', /min 9 is above max 1/],
    ['a bad queue setting', (s: Record<string, unknown>) => ((s.queue as Record<string, unknown>).leaseMs = 10), 'queue.leaseMs', /3 x heartbeatMs/],
    ['an unknown fault kind', (s: Record<string, unknown>) => (s.faults = { swarm: { kinds: ['meteor'], quietProbability: 0 } }), 'faults.swarm.kinds[0]', /unknown fault kind "meteor"/],
    ['a pause point without its duration', (s: Record<string, unknown>) => (s.faults = { plan: { timed: [], points: [{ kind: 'pause-at', point: 'after_effect', occurrence: 1 }], rates: zeroRates() } }), 'faults.plan.points[0].durationMs', /is required/],
    ['both plan and swarm', (s: Record<string, unknown>) => (s.faults = { swarm: { kinds: [], quietProbability: 0 }, plan: {} }), 'faults', /exactly one/],
    ['a kill of a worker that does not exist', (s: Record<string, unknown>) => (s.faults = { plan: { timed: [{ kind: 'kill', atMs: 1, worker: 9, reviveAfterMs: 1 }], points: [], rates: zeroRates() } }), 'faults.plan.timed[0].worker', /one of the 4 workers/],
  ])('names the field at fault for %s', (_label, spoil, field, problem) => {
    const spec = mixed();
    spoil(spec);
    const found = problemOf(spec);
    expect(found?.field).toBe(field);
    expect(found?.problem).toMatch(problem);
  });

  it('says when a file is not JSON, and when it is a counterexample rather than a scenario', () => {
    const notJson = join(scratch, 'broken.json');
    writeFileSync(notJson, '{ "name": ');
    expect(() => readScenarioFile(notJson)).toThrow(/is not valid JSON/);
    const counterexample = join(scratch, 'mixed-1.json');
    writeFileSync(counterexample, JSON.stringify({ format: 'leasehold-counterexample/1' }));
    expect(() => readScenarioFile(counterexample)).toThrow(/replay it with: leasehold replay/);
  });

  it('checks the fields of a counterexample that replay relies on', () => {
    const path = join(scratch, 'ce.json');
    const good = { format: 'leasehold-counterexample/1', seed: '5', traceHash: 'ab', scenarioSpec: mixed(), plan: { timed: [], points: [], rates: zeroRates() }, git: { commit: null, dirty: false } };
    writeFileSync(path, JSON.stringify(good));
    expect(readCounterexample(path).seed).toBe('5');
    writeFileSync(path, JSON.stringify({ ...good, scenarioSpec: { ...mixed(), phases: 'soon' } }));
    expect(() => readCounterexample(path)).toThrow('scenarioSpec.phases: expected an object');
    writeFileSync(path, JSON.stringify({ ...good, plan: { timed: [], points: [] } }));
    expect(() => readCounterexample(path)).toThrow('plan.rates: expected an object');
    writeFileSync(path, JSON.stringify({ ...good, format: 'something-else' }));
    expect(() => readCounterexample(path)).toThrow(/format: expected "leasehold-counterexample\/1"/);
  });
});

function zeroRates() {
  return { slowToolProbability: 0, hungToolProbability: 0, lostResponseProbability: 0, duplicateDeliveryProbability: 0, toolErrorProbability: 0 };
}
