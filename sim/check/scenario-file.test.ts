import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CATALOGUE_DIR, findScenario, listScenarios } from '../scenarios/registry.ts';
import { readCounterexample } from './counterexample.ts';
import { readScenarioFile, ScenarioFileError, validateScenario } from './scenario-file.ts';

const scratch = mkdtempSync(join(tmpdir(), 'leasehold-scenario-file-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const mixed = () => structuredClone(findScenario('mixed')) as unknown as Record<string, unknown>;
/** mixed's shape as a counterexample recorded it before workloads kept their parts (four topics, a task L, a client swarm, one kill). */
const flatMixed = (): Record<string, any> =>
  (JSON.parse(readFileSync(join(import.meta.dirname, '..', 'workloads', '__test-helpers__', 'fixtures', 'legacy-topics-2.json'), 'utf8')) as { scenarioSpec: Record<string, any> }).scenarioSpec;

function problemOf(value: unknown): { field: string; problem: string } | undefined {
  try {
    validateScenario(value);
    return undefined;
  } catch (error) {
    if (!(error instanceof ScenarioFileError)) throw error;
    return { field: error.field, problem: error.problem };
  }
}

/** mixed as a scenario file lists it: parts, each section at its defaults but the queue. */
const parts = (): Record<string, any> => ({
  name: 'probe',
  queue: { globalLimit: 4, perTenantLimit: 2, capacity: 100 },
  workload: [{ kind: 'topics', tiers: ['standard', 'standard', 'long'] }],
  faults: [{ kind: 'swarm' }],
});

describe('scenario files', () => {
  it('accepts every catalogue scenario as written out to JSON, and every catalogue file as it is', () => {
    // A failure here means ScenarioSpec grew a field that the explicit form (sim/scenario-explicit.ts) does not know yet.
    for (const { name } of listScenarios()) expect(problemOf(JSON.parse(JSON.stringify(findScenario(name)))), name).toBeUndefined();
    for (const { name } of listScenarios()) expect(problemOf(JSON.parse(readFileSync(join(CATALOGUE_DIR, `${name}.json`), 'utf8'))), name).toBeUndefined();
  });

  it.each([
    ['a missing field', (s: Record<string, any>) => delete s.name, 'name', /is required/],
    ['an unknown field', (s: Record<string, any>) => (s.workerz = 1), 'workerz', /unknown field/],
    ['a typo inside a part', (s: Record<string, any>) => (s.workload[0].tenant = ['a']), 'workload[0].tenant', /unknown field \(did you mean tenants\?\)/],
    ['a range upside down', (s: Record<string, any>) => (s.model = { latencyMs: [9, 1] }), 'model.latencyMs', /min 9 is above max 1/],
    ['a bad queue setting', (s: Record<string, any>) => (s.queue.leaseMs = 10), 'queue.leaseMs', /3 x heartbeatMs/],
    ['an unknown workload part', (s: Record<string, any>) => (s.workload = [{ kind: 'meteor' }]), 'workload[0].kind', /^unknown workload part "meteor"; expected one of "topics", "rounds", "tasks", "flood", "client-swarm"$/],
    ['an unknown fault kind in a swarm', (s: Record<string, any>) => (s.faults = [{ kind: 'swarm', kinds: ['meteor'] }]), 'faults[0].kinds[0]', /^expected a fault kind, one of "kill", .*, got "meteor"$/],
    ['an unknown fault part', (s: Record<string, any>) => (s.faults = [{ kind: 'meteor', atMs: 1 }]), 'faults[0].kind', /^unknown fault kind "meteor"; expected one of "kill", "pause", /],
    ['a point fault without its point', (s: Record<string, any>) => (s.faults = [{ kind: 'pause-at', occurrence: 1 }]), 'faults[0].point', /is required/],
    ['a swarm beside other faults', (s: Record<string, any>) => (s.faults = [{ kind: 'swarm' }, { kind: 'kill', atMs: 1 }]), 'faults[1].kind', /cannot be combined with the swarm at faults\[0\]/],
    ['a rate given twice', (s: Record<string, any>) => (s.faults = [{ kind: 'tool-error', probability: 0.1 }, { kind: 'fault-plan', rates: { toolErrorProbability: 0.2 } }]), 'faults[1].rates.toolErrorProbability', /already given at faults\[0\]/],
    ['a kill of a worker that does not exist', (s: Record<string, any>) => (s.faults = [{ kind: 'kill', atMs: 1, worker: 9 }]), 'faults[0].worker', /one of the 4 workers \(0\.\.3\), got 9/],
    ['a fault of a whole plan after the safety phase', (s: Record<string, any>) => (s.faults = [{ kind: 'fault-plan', timed: [{ kind: 'restart', atMs: 150_000, downMs: 1 }] }]), 'faults[0].timed[0].atMs', /below phases\.safetyMs \(150000\)/],
    ['a fault after the safety phase', (s: Record<string, any>) => (s.faults = [{ kind: 'restart', atMs: 150_000 }]), 'faults[0].atMs', /below phases\.safetyMs \(150000\)/],
    ['a faults object beside workload parts', (s: Record<string, any>) => (s.faults = { swarm: { kinds: [], quietProbability: 0 } }), 'faults', /^expected a list of fault parts, e\.g\. \[\{ "kind": "swarm", \.\.\. \}\]; an object \{ plan \| swarm \| perRound \} belongs to the explicit form/],
    ['a string for a number', (s: Record<string, any>) => (s.workers = { count: '4' }), 'workers.count', /^expected an integer >= 1, got "4"$/],
    ['a fraction for an integer', (s: Record<string, any>) => (s.phases = { safetyMs: 1.5 }), 'phases.safetyMs', /^expected an integer >= 1, got 1\.5$/],
    ['an object for an array', (s: Record<string, any>) => (s.workload[0].tenants = { acme: true }), 'workload[0].tenants', /^expected an array of at least 1 item, got \{"acme":true\}$/],
    ['a probability above 1', (s: Record<string, any>) => (s.model = { writeProbability: 2 }), 'model.writeProbability', /^expected a probability from 0 to 1, got 2$/],
    ['a bad name', (s: Record<string, any>) => (s.name = 'my scenario'), 'name', /expected letters, digits/],
    ['a queue typo', (s: Record<string, any>) => (s.queue.leasMs = 1), 'queue.leasMs', /^unknown field \(did you mean leaseMs\?\); known: capacity, /],
    ['an explicit task priority out of range', (s: Record<string, any>) => s.workload.push({ kind: 'tasks', tasks: [task(), task(), { ...task(), priority: 31 }] }), 'workload[1].tasks[2].priority', /^expected an integer from 0 to 30, got 31$/],
    ['an explicit task without its topic', (s: Record<string, any>) => s.workload.push({ kind: 'tasks', tasks: [{ ...task(), topic: undefined }] }), 'workload[1].tasks[0].topic', /^is required \(expected a non-empty string\), here or in the part's defaults$/],
    ['an explicit task without a tenant, here or in its defaults', (s: Record<string, any>) => s.workload.push({ kind: 'tasks', defaults: { priority: 3 }, tasks: [{ topic: 't' }] }), 'workload[1].tasks[0].tenant', /^is required/],
    ['an explicit task with an unknown tier', (s: Record<string, any>) => s.workload.push({ kind: 'tasks', tasks: [{ ...task(), tier: 'gold' }] }), 'workload[1].tasks[0].tier', /^expected one of "standard", "long", got "gold"$/],
    ['a resend before the task arrives', (s: Record<string, any>) => s.workload.push({ kind: 'tasks', tasks: [{ ...task(), atMs: 500, resendAtMs: [100] }] }), 'workload[1].tasks[0].resendAtMs[0]', /comes before the task arrives/],
    ['a resend before the arrival its defaults give', (s: Record<string, any>) => s.workload.push({ kind: 'tasks', defaults: { atMs: 500 }, tasks: [{ ...task(), atMs: undefined, cancelAtMs: 100 }] }), 'workload[1].tasks[0].cancelAtMs', /a cancel at 100 ms comes before the task arrives \(atMs 500\)/],
    ['a flood that ends before it starts', (s: Record<string, any>) => (s.workload = [{ kind: 'flood', tenant: 'acme', everyMs: 100, fromMs: 1_000, untilMs: 1_000 }]), 'workload[0].untilMs', /must be after fromMs \(1000\)/],
    ['a flood priority out of range', (s: Record<string, any>) => (s.workload = [{ kind: 'flood', tenant: 'acme', priority: [20, 40], everyMs: 100, untilMs: 1_000 }]), 'workload[0].priority[1]', /^expected an integer from 0 to 30, got 40$/],
    ['more poison tasks than the rounds have', (s: Record<string, any>) => (s.workload = [{ kind: 'rounds', count: 1, everyMs: 1_000, tasksPerRound: 2, poisonTasks: 3 }]), 'workload[0].poisonTasks', /exceeds the 2 tasks of the rounds/],
    ['two parts that draw arrivals', (s: Record<string, any>) => s.workload.push({ kind: 'rounds', count: 1, everyMs: 1_000 }), 'workload[1].kind', /one topics or rounds part, and workload\[0\] is one/],
    ['per-round faults without rounds', (s: Record<string, any>) => (s.faults = [{ kind: 'kill-per-round' }]), 'faults[0].kind', /needs a rounds part in workload/],
    ['a per-round fault during calls too short to hit', (s: Record<string, any>) => ((s.workload = [{ kind: 'rounds', count: 1, everyMs: 1_000 }]), (s.model = { latencyMs: [1, 5] }), (s.faults = [{ kind: 'pause-per-round' }])), 'model.latencyMs', /needs calls of at least 2 ms, got a min of 1/],
    ['a workload with no parts at all', (s: Record<string, any>) => (s.workload = []), 'workload', /^expected a list of workload parts of at least 1 item, got 0 items$/],
    ['an expectation of an unknown kind', (s: Record<string, any>) => (s.expect = [{ kind: 'meteor-strike', task: 'x' }]), 'expect[0].kind', /^unknown expectation kind "meteor-strike"; expected one of "final-state"/],
    ['an expectation without a kind', (s: Record<string, any>) => (s.expect = [{ task: 'x' }]), 'expect[0].kind', /^is required \(expected one of "final-state"/],
    ['an expectation with a bad field', (s: Record<string, any>) => (s.expect = [{ kind: 'final-state', task: 'x', state: 'finished' }]), 'expect[0].state', /^expected one of "ready", .*, got "finished"$/],
    ['an expectation with an unknown field', (s: Record<string, any>) => (s.expect = [{ kind: 'final-state', task: 'x', state: 'done', when: 'always' }]), 'expect[0].when', /^unknown field; known: kind, task, state$/],
    ['notes that are not text', (s: Record<string, any>) => (s.notes = 5), 'notes', /^expected a string or an array, got 5$/],
    ['not an object at all', () => undefined, '', /^expected an object, got \[\]$/],
  ])('names the field at fault for %s', (label, spoil, field, problem) => {
    const spec = parts();
    spoil(spec);
    const found = problemOf(label === 'not an object at all' ? [] : spec);
    expect(found?.field).toBe(field);
    expect(found?.problem).toMatch(problem);
  });

  // The explicit form (a workload object, as counterexamples record a scenario) is read as it is; its
  // errors name its own paths.
  it.each([
    ['a missing section', (s: Record<string, any>) => delete s.phases, 'phases', /^is required \(expected an object\): a workload object is the explicit form, which states every section; a scenario file lists parts instead/],
    ['a typo inside a section', (s: Record<string, any>) => (s.workload.tenant = ['a']), 'workload.tenant', /unknown field/],
    ['an explicit task priority out of range', (s: Record<string, any>) => s.workload.parts.push({ kind: 'tasks', tasks: [task(), task(), { ...task(), priority: 31 }] }), 'workload.parts[2].tasks[2].priority', /^expected an integer from 0 to 30, got 31$/],
    ['two parts that draw arrivals', (s: Record<string, any>) => s.workload.parts.push({ kind: 'rounds', count: 1, everyMs: 1_000 }), 'workload.parts[2].kind', /one topics or rounds part, and workload\.parts\[0\] is one/],
    ['a script drawing without its steps', (s: Record<string, any>) => delete s.workload.scripts.steps, 'workload.scripts.steps', /is required/],
    ['both plan and swarm', (s: Record<string, any>) => (s.faults = { swarm: { kinds: [], quietProbability: 0 }, plan: {} }), 'faults', /exactly one/],
    ['a fault after the safety phase', (s: Record<string, any>) => (s.faults = { plan: { timed: [{ kind: 'restart', atMs: 150_000, downMs: 1 }], points: [], rates: zeroRates() } }), 'faults.plan.timed[0].atMs', /below phases\.safetyMs \(150000\)/],
    ['a kill of a worker that does not exist', (s: Record<string, any>) => (s.faults = { plan: { timed: [{ kind: 'kill', atMs: 1, worker: 9, reviveAfterMs: 1 }], points: [], rates: zeroRates() } }), 'faults.plan.timed[0].worker', /one of the 4 workers \(0\.\.3\), got 9/],
    ['per-round faults without rounds', (s: Record<string, any>) => (s.faults = structuredClone(findScenario('kill-takeover')!.faults)), 'faults.perRound', /needs a rounds workload/],
  ])('in the explicit form, names the field at fault for %s', (_label, spoil, field, problem) => {
    const spec = mixed() as Record<string, any>;
    spoil(spec);
    const found = problemOf(spec);
    expect(found?.field).toBe(field);
    expect(found?.problem).toMatch(problem);
  });

  // The explicit form before parts, whose workload is one flat object (as files were written before
  // workloads kept their parts), is read as it was, and its errors name its own paths too.
  it.each([
    ['a typo inside the workload', (s: Record<string, any>) => (s.workload.tenant = ['a']), 'workload.tenant', /unknown field \(did you mean tenants\?\)/],
    ['an explicit task priority out of range', (s: Record<string, any>) => (s.workload.tasks = [task(), task(), { ...task(), priority: 31 }]), 'workload.tasks[2].priority', /^expected an integer from 0 to 30, got 31$/],
    ['poison tasks without rounds', (s: Record<string, any>) => (s.workload.poisonTasks = 1), 'workload.poisonTasks', /needs a rounds workload/],
    ['a workload with no tasks at all', (s: Record<string, any>) => ((s.workload.topics = 0), delete s.workload.tasks), 'workload', /has no tasks/],
    ['per-round faults without rounds', (s: Record<string, any>) => (s.faults = structuredClone(findScenario('kill-takeover')!.faults)), 'faults.perRound', /needs a rounds workload \(workload\.rounds\)/],
    [
      'a client swarm without topics whose tenants parts cannot give',
      (s: Record<string, any>) => ((s.workload.topics = 0), (s.workload.tenants = ['acme', 'zeta'])),
      'workload.tenants',
      /^a client swarm without topics or rounds draws its new requests from the tenants its tasks and floods name \(acme\)/,
    ],
  ])('in the explicit form before parts, names the field at fault for %s', (_label, spoil, field, problem) => {
    const spec = flatMixed();
    spoil(spec);
    const found = problemOf(spec);
    expect(found?.field).toBe(field);
    expect(found?.problem).toMatch(problem);
  });

  it('accepts the fields for people ($schema, notes) and keeps them out of the spec', () => {
    const file: Record<string, any> = { $schema: './schema.json', notes: ['why this scenario exists'], ...parts() };
    file.workload.push({ kind: 'client-swarm' });
    const validated = validateScenario(file) as unknown as Record<string, unknown>;
    expect(validated).not.toHaveProperty('$schema');
    expect(validated).not.toHaveProperty('notes');
    expect(validated).toEqual({ ...mixed(), name: 'probe', description: '', source: '' });
    const explicit = validateScenario({ $schema: './schema.json', notes: 'one line', ...mixed() }) as unknown as Record<string, unknown>;
    expect(explicit).toEqual(mixed());
  });

  it('accepts explicit tasks, floods and expectations', () => {
    const spec = parts();
    spec.workload.push(
      { kind: 'tasks', defaults: { tenant: 'acme', context: { brand: 'b' } }, tasks: [{ ...task(), label: 'H1', tier: 'long', version: 2, deadlineAfterMs: 5_000, resendAtMs: [10, 20], poison: false, context: { errorCode: 'E1' } }] },
      { kind: 'flood', tenant: 'globex', topicPrefix: 'flood', priority: [25, 30], everyMs: 1_000, untilMs: 10_000, count: 2 },
    );
    spec.expect = [{ kind: 'final-state', task: 'H1', state: ['done', 'failed'] }];
    expect(problemOf(spec)).toBeUndefined();
  });

  it('names the file, the field path and what was expected in one message', () => {
    const path = join(scratch, 'x.json');
    const spec = parts();
    spec.workload.push({ kind: 'tasks', tasks: [task(), task(), { ...task(), priority: 31 }] });
    writeFileSync(path, JSON.stringify(spec));
    expect(() => readScenarioFile(path)).toThrow(`${path}: workload[1].tasks[2].priority: expected an integer from 0 to 30, got 31`);
    expect(() => readScenarioFile(path, 'scenarios/x.json')).toThrow('scenarios/x.json: workload[1].tasks[2].priority: expected an integer from 0 to 30, got 31');
    spec.workload[1].tasks = [{ ...task(), priority: 31 }, { ...task(), priority: -1 }];
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
