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
    ['an unknown fault kind', (s: Record<string, unknown>) => (s.faults = { swarm: { kinds: ['meteor'], quietProbability: 0 } }), 'faults.swarm.kinds[0]', /^expected a fault kind, one of "kill", .*, got "meteor"$/],
    ['a point fault without its point', (s: Record<string, unknown>) => (s.faults = { plan: { timed: [], points: [{ kind: 'pause-at', occurrence: 1 }], rates: zeroRates() } }), 'faults.plan.points[0].point', /is required/],
    ['both plan and swarm', (s: Record<string, unknown>) => (s.faults = { swarm: { kinds: [], quietProbability: 0 }, plan: {} }), 'faults', /exactly one/],
    ['a kill of a worker that does not exist', (s: Record<string, unknown>) => (s.faults = { plan: { timed: [{ kind: 'kill', atMs: 1, worker: 9, reviveAfterMs: 1 }], points: [], rates: zeroRates() } }), 'faults.plan.timed[0].worker', /one of the 4 workers \(0\.\.3\), got 9/],
    ['a fault after the safety phase', (s: Record<string, unknown>) => (s.faults = { plan: { timed: [{ kind: 'restart', atMs: 150_000, downMs: 1 }], points: [], rates: zeroRates() } }), 'faults.plan.timed[0].atMs', /below phases\.safetyMs \(150000\)/],
    ['an unknown timed fault', (s: Record<string, unknown>) => (s.faults = { plan: { timed: [{ kind: 'meteor', atMs: 1 }], points: [], rates: zeroRates() } }), 'faults.plan.timed[0].kind', /expected one of "kill", "pause", .*got "meteor"/],
    ['a string for a number', (s: Record<string, unknown>) => ((s.workers as Record<string, unknown>).count = '4'), 'workers.count', /^expected an integer >= 1, got "4"$/],
    ['a fraction for an integer', (s: Record<string, unknown>) => ((s.phases as Record<string, unknown>).safetyMs = 1.5), 'phases.safetyMs', /^expected an integer >= 1, got 1\.5$/],
    ['an object for an array', (s: Record<string, unknown>) => ((s.workload as Record<string, unknown>).tenants = { acme: true }), 'workload.tenants', /^expected an array of at least 1 item, got \{"acme":true\}$/],
    ['a probability above 1', (s: Record<string, unknown>) => ((s.workload as Record<string, unknown>).writeProbability = 2), 'workload.writeProbability', /^expected a probability from 0 to 1, got 2$/],
    ['a bad name', (s: Record<string, unknown>) => (s.name = 'my scenario'), 'name', /expected letters, digits/],
    ['a queue typo', (s: Record<string, unknown>) => ((s.queue as Record<string, unknown>).leasMs = 1), 'queue.leasMs', /^unknown field \(did you mean leaseMs\?\); known: capacity, /],
    ['an explicit task priority out of range', (s: Record<string, unknown>) => ((s.workload as Record<string, unknown>).tasks = [task(), task(), { ...task(), priority: 31 }]), 'workload.tasks[2].priority', /^expected an integer from 0 to 30, got 31$/],
    ['an explicit task without its topic', (s: Record<string, unknown>) => ((s.workload as Record<string, unknown>).tasks = [{ ...task(), topic: undefined }]), 'workload.tasks[0].topic', /^is required \(expected a non-empty string\)$/],
    ['an explicit task with an unknown tier', (s: Record<string, unknown>) => ((s.workload as Record<string, unknown>).tasks = [{ ...task(), tier: 'gold' }]), 'workload.tasks[0].tier', /^expected one of "standard", "long", got "gold"$/],
    ['a resend before the task arrives', (s: Record<string, unknown>) => ((s.workload as Record<string, unknown>).tasks = [{ ...task(), atMs: 500, resendAtMs: [100] }]), 'workload.tasks[0].resendAtMs[0]', /comes before the task arrives/],
    ['a flood that ends before it starts', (s: Record<string, unknown>) => ((s.workload as Record<string, unknown>).floods = [{ tenant: 'acme', topicPrefix: 'f', priority: [20, 30], everyMs: 100, fromMs: 1_000, untilMs: 1_000 }]), 'workload.floods[0].untilMs', /must be after fromMs \(1000\)/],
    ['a flood priority out of range', (s: Record<string, unknown>) => ((s.workload as Record<string, unknown>).floods = [{ tenant: 'acme', topicPrefix: 'f', priority: [20, 40], everyMs: 100, fromMs: 0, untilMs: 1_000 }]), 'workload.floods[0].priority[1]', /^expected an integer from 0 to 30, got 40$/],
    ['poison tasks without rounds', (s: Record<string, unknown>) => ((s.workload as Record<string, unknown>).poisonTasks = 1), 'workload.poisonTasks', /needs a rounds workload/],
    ['per-round faults without rounds', (s: Record<string, unknown>) => (s.faults = structuredClone(findScenario('kill-takeover')!.faults)), 'faults.perRound', /needs a rounds workload/],
    ['a workload with no tasks at all', (s: Record<string, unknown>) => ((s.workload as Record<string, unknown>).topics = 0), 'workload', /has no tasks/],
    ['an expectation of an unknown kind', (s: Record<string, unknown>) => (s.expect = [{ kind: 'meteor-strike', task: 'x' }]), 'expect[0].kind', /^unknown expectation kind "meteor-strike"; expected one of "final-state"/],
    ['an expectation without a kind', (s: Record<string, unknown>) => (s.expect = [{ task: 'x' }]), 'expect[0].kind', /^is required \(expected one of "final-state"/],
    ['an expectation with a bad field', (s: Record<string, unknown>) => (s.expect = [{ kind: 'final-state', task: 'x', state: 'finished' }]), 'expect[0].state', /^expected one of "ready", .*, got "finished"$/],
    ['an expectation with an unknown field', (s: Record<string, unknown>) => (s.expect = [{ kind: 'final-state', task: 'x', state: 'done', when: 'always' }]), 'expect[0].when', /^unknown field; known: kind, task, state$/],
    ['notes that are not text', (s: Record<string, unknown>) => (s.notes = 5), 'notes', /^expected a string or an array, got 5$/],
    ['not an object at all', () => undefined, '', /^expected an object, got \[\]$/],
  ])('names the field at fault for %s', (label, spoil, field, problem) => {
    const spec = mixed();
    spoil(spec);
    const found = problemOf(label === 'not an object at all' ? [] : spec);
    expect(found?.field).toBe(field);
    expect(found?.problem).toMatch(problem);
  });

  it('accepts the fields for people ($schema, notes) and keeps them out of the spec', () => {
    const spec = { $schema: './schema.json', notes: ['why this scenario exists'], ...mixed() };
    const validated = validateScenario(spec) as unknown as Record<string, unknown>;
    expect(validated).not.toHaveProperty('$schema');
    expect(validated).not.toHaveProperty('notes');
    expect(validated).toEqual(mixed());
  });

  it('accepts explicit tasks, floods and expectations', () => {
    const spec = mixed();
    Object.assign(spec.workload as object, {
      tasks: [{ ...task(), label: 'H1', tier: 'long', version: 2, deadlineAfterMs: 5_000, resendAtMs: [10, 20], poison: false, context: { brand: 'b', errorCode: 'E1' } }],
      floods: [{ tenant: 'globex', topicPrefix: 'flood', priority: [25, 30], everyMs: 1_000, fromMs: 0, untilMs: 10_000, count: 2 }],
    });
    spec.expect = [{ kind: 'final-state', task: 'H1', state: ['done', 'failed'] }];
    expect(problemOf(spec)).toBeUndefined();
  });

  it('names the file, the field path and what was expected in one message', () => {
    const path = join(scratch, 'x.json');
    const spec = mixed();
    (spec.workload as Record<string, unknown>).tasks = [task(), task(), { ...task(), priority: 31 }];
    writeFileSync(path, JSON.stringify(spec));
    expect(() => readScenarioFile(path)).toThrow(`${path}: workload.tasks[2].priority: expected an integer from 0 to 30, got 31`);
    expect(() => readScenarioFile(path, 'scenarios/x.json')).toThrow('scenarios/x.json: workload.tasks[2].priority: expected an integer from 0 to 30, got 31');
    (spec.workload as Record<string, unknown>).tasks = [{ ...task(), priority: 31 }, { ...task(), priority: -1 }];
    writeFileSync(path, JSON.stringify(spec));
    expect(() => readScenarioFile(path)).toThrow(/got 31 \(and 1 more problem\)$/);
    expect(() => readScenarioFile(join(scratch, 'missing.json'))).toThrow(/missing\.json: cannot be read \(ENOENT\)/);
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

function task() {
  return { atMs: 0, tenant: 'acme', topic: 'explicit', priority: 10 };
}

function zeroRates() {
  return { slowToolProbability: 0, hungToolProbability: 0, lostResponseProbability: 0, duplicateDeliveryProbability: 0, toolErrorProbability: 0 };
}
