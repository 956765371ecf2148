import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXPECTATION_KINDS } from './expectations/index.ts';
import { emptyPlan } from './faults/plan.ts';
import type { ScenarioSpec } from './scenario.ts';
import { formatPath, parseFaultPlan, parseScenarioFile, SCHEMA_COVERS_SCENARIO_SPEC, scenarioJsonSchema } from './scenario-schema.ts';
import { CATALOGUE_DIR, catalogueScenario, listScenarios } from './scenarios/registry.ts';
import { drawnPartOf, explicitTasksOf, floodsOf, roundsPartOf, workloadTenants } from './workloads/index.ts';
import { drawArrivals } from './workload.ts';
import { SeededRandom } from './random.ts';

const mixed = () => structuredClone(catalogueScenario('mixed')) as unknown as Record<string, unknown>;
/** A counterexample file written before workloads kept their parts (sim/workloads/legacy.test.ts replays it). */
const legacyTopics = JSON.parse(readFileSync(join(import.meta.dirname, 'workloads', '__test-helpers__', 'fixtures', 'legacy-topics-2.json'), 'utf8')) as { scenarioSpec: unknown };
/** A scenario file of parts: the sections at their defaults. */
const parts = (): Record<string, any> => ({ name: 'probe', workload: [{ kind: 'topics' }] });

function specOf(value: unknown): ScenarioSpec {
  const parsed = parseScenarioFile(value);
  if (!parsed.ok) throw new Error(`${parsed.problems[0]?.field}: ${parsed.problems[0]?.problem}`);
  return parsed.spec;
}

describe('the scenario file schema', () => {
  it('covers every field of ScenarioSpec (checked by the compiler) and takes every catalogue scenario back unchanged', () => {
    expect(SCHEMA_COVERS_SCENARIO_SPEC).toBe(true);
    for (const { name } of listScenarios()) {
      const spec = catalogueScenario(name);
      // The explicit form: the resolved scenario written out whole reads back as itself.
      expect(parseScenarioFile(JSON.parse(JSON.stringify(spec))), name).toEqual({ ok: true, spec });
      // The file as it is resolves to the same.
      expect(parseScenarioFile(JSON.parse(readFileSync(join(CATALOGUE_DIR, `${name}.json`), 'utf8'))), name).toEqual({ ok: true, spec });
    }
  });

  it('knows every expectation kind, from the kinds themselves', () => {
    const kinds = EXPECTATION_KINDS.map((kind) => kind.kind);
    const parsed = parseScenarioFile({ ...parts(), expect: [{ kind: 'no-such-kind' }] });
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.problems[0]).toEqual({ field: 'expect[0].kind', problem: `unknown expectation kind "no-such-kind"; expected one of ${kinds.map((kind) => JSON.stringify(kind)).join(', ')}` });
  });

  it('takes weights of tool error classes, and names a class it does not know', () => {
    const good = { ...parts(), tools: { errorClasses: { rate_limited: 3, permission_denied: 1 } } };
    expect(specOf(good).tools).toEqual({ latencyMs: [100, 2_000], errorClasses: { rate_limited: 3, permission_denied: 1 } });
    const bad = parseScenarioFile({ ...parts(), tools: { errorClasses: { rate_limit: 1 } } });
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    expect(bad.problems[0]?.field).toMatch(/^tools\.errorClasses/);
    expect(bad.problems[0]?.problem).toMatch(/rate_limited/);
    const zero = parseScenarioFile({ ...parts(), tools: { errorClasses: { rate_limited: 0 } } });
    expect(zero.ok).toBe(false);
  });

  it('lists every problem, unknown fields (typos) first', () => {
    const spec = { ...parts(), workers: { count: 0, slots: 'two' }, colour: 'blue' };
    const parsed = parseScenarioFile(spec);
    expect(parsed.ok ? [] : parsed.problems).toEqual([
      { field: 'colour', problem: 'unknown field; known: $schema, name, description, source, notes, queue, workers, configSwarm, model, tools, supervisor, monitor, fleet, durability, workload, faults, phases, expect' },
      { field: 'workers.count', problem: 'expected an integer >= 1, got 0' },
      { field: 'workers.slots', problem: 'expected an integer >= 1, got "two"' },
    ]);
  });

  it('says a misspelt field is unknown and what it might have meant, before the field it meant is missing', () => {
    const parsed = parseScenarioFile({ ...parts(), workload: [{ kind: 'flood', tenat: 'acme', everyMs: 1_000, untilMs: 10_000 }] });
    expect(parsed.ok ? [] : parsed.problems.map((problem) => problem.field)).toEqual(['workload[0].tenat', 'workload[0].tenant']);
    expect(parsed.ok ? '' : parsed.problems[0]!.problem).toMatch(/^unknown field \(did you mean tenant\?\); known: kind, tenant, topicPrefix, /);
    // The explicit form the same way.
    const explicit = mixed();
    const scripts = (explicit.workload as { scripts: Record<string, unknown> }).scripts;
    scripts.step = scripts.steps;
    delete scripts.steps;
    const typed = parseScenarioFile(explicit);
    expect(typed.ok ? [] : typed.problems.map((problem) => problem.field)).toEqual(['workload.scripts.step', 'workload.scripts.steps']);
    expect(typed.ok ? '' : typed.problems[0]!.problem).toMatch(/^unknown field \(did you mean steps\?\); known: writeProbability, steps, /);
    // And the explicit form before parts, whose workload is one flat object.
    const flat = structuredClone(legacyTopics.scenarioSpec) as Record<string, unknown>;
    const workload = flat.workload as Record<string, unknown>;
    workload.tenant = workload.tenants;
    delete workload.tenants;
    const old = parseScenarioFile(flat);
    expect(old.ok ? [] : old.problems.map((problem) => problem.field)).toEqual(['workload.tenant', 'workload.tenants']);
    expect(old.ok ? '' : old.problems[0]!.problem).toMatch(/^unknown field \(did you mean tenants\?\); known: tenants, topics, /);
  });

  it('checks how fields fit together only once each field is right', () => {
    const spec = parts();
    spec.queue = { leaseMs: 10_000, heartbeatMs: 5_000 };
    const parsed = parseScenarioFile(spec);
    expect(parsed.ok ? [] : parsed.problems).toEqual([{ field: 'queue.leaseMs', problem: 'must be at least 3 x heartbeatMs (15000), got 10000' }]);
    spec.queue = { leaseMs: 'long', perTenantLimit: 9 };
    spec.faults = [{ kind: 'kill', atMs: 1, worker: 99 }];
    const shape = parseScenarioFile(spec);
    expect(shape.ok ? [] : shape.problems).toEqual([{ field: 'queue.leaseMs', problem: 'expected an integer >= 1, got "long"' }]);
  });

  it('refuses a worker idle wait of 0, which the worker runtime would refuse mid-run (a harness crash, exit 3, instead of exit 64)', () => {
    const parsed = parseScenarioFile({ ...parts(), workers: { idleWaitMs: 0 } });
    expect(parsed.ok ? [] : parsed.problems).toEqual([{ field: 'workers.idleWaitMs', problem: 'expected an integer >= 1, got 0' }]);
    expect(parseScenarioFile({ ...parts(), workers: { idleWaitMs: 1 } }).ok).toBe(true);
  });

  it('checks a fault plan as recorded in a counterexample, worker indexes included', () => {
    expect(parseFaultPlan(emptyPlan(), 'plan', 2)).toEqual([]);
    expect(parseFaultPlan({ ...emptyPlan(), timed: [{ kind: 'pause', atMs: 0, worker: 2, durationMs: 5 }] }, 'plan', 2)).toEqual([
      { field: 'plan.timed[0].worker', problem: 'must name one of the 2 workers (0..1), got 2' },
    ]);
    expect(parseFaultPlan({ ...emptyPlan(), points: [{ kind: 'kill-at', point: 'nowhere', occurrence: 1, reviveAfterMs: 0 }] }, 'plan', 2)[0]).toEqual({
      field: 'plan.points[0].point',
      problem: 'expected one of "before_model_call", "before_tool_call", "after_effect", "between_checkpoints", "after_terminal_write", "before_claim", "before_heartbeat", "before_get", "before_lastCheckpoint", "before_checkpoint", "before_effectResult", "before_recordEffect", "before_appendEvent", "before_acknowledgeCancel", "before_interrupt", "before_complete", "before_fail", got "nowhere"',
    });
    // error-at fails a model or tool call: a queue call's BEGIN is no place for it, nor an unknown class.
    expect(parseFaultPlan({ ...emptyPlan(), points: [{ kind: 'error-at', point: 'before_claim' }] }, 'plan', 2)).toEqual([
      { field: 'plan.points[0].point', problem: 'expected one of "before_model_call", "before_tool_call", got "before_claim"' },
    ]);
    expect(parseFaultPlan({ ...emptyPlan(), points: [{ kind: 'error-at', point: 'before_tool_call', errorClass: 'teapot' }] }, 'plan', 2)[0]).toMatchObject({ field: 'plan.points[0].errorClass' });
    expect(parseFaultPlan({ ...emptyPlan(), points: [{ kind: 'error-at', point: 'before_tool_call', tenant: 'acme', fromMs: 6_000 }] }, 'plan', 2)).toEqual([]);
    // A plan written before stale writes existed has no staleWriteProbability: still sound.
    const { staleWriteProbability: _none, ...older } = { ...emptyPlan().rates, staleWriteProbability: 0 };
    expect(parseFaultPlan({ timed: [], points: [], rates: older }, 'plan', 2)).toEqual([]);
  });

  it('writes field paths as people read them', () => {
    expect(formatPath(['workload', 2, 'tasks', 0, 'priority'])).toBe('workload[2].tasks[0].priority');
    expect(formatPath([])).toBe('');
  });

  it('has a JSON Schema: strict objects, the parts with their defaults, the explicit tasks', () => {
    const schema = scenarioJsonSchema() as { properties: Record<string, any>; additionalProperties: boolean; required: string[] };
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required).toEqual(['name', 'workload']);
    expect(schema.properties.workers).toMatchObject({ additionalProperties: false, properties: { count: { default: 4 }, slots: { default: 1 } } });
    const workloadKinds = schema.properties.workload.items.oneOf.map((item: any) => item.properties.kind.const);
    expect(workloadKinds).toEqual(['topics', 'rounds', 'tasks', 'flood', 'client-swarm']);
    const tasks = schema.properties.workload.items.oneOf[2];
    expect(tasks.properties.tasks.items.properties.priority).toMatchObject({ type: 'integer', minimum: 0, maximum: 30 });
    expect(tasks.properties.tasks.items.additionalProperties).toBe(false);
    const faultKinds = schema.properties.faults.items.oneOf.map((item: any) => item.properties.kind.const);
    expect(faultKinds).toEqual(expect.arrayContaining(['kill', 'kill-at', 'pause', 'pause-at', 'restart', 'clock-jump', 'busy', 'slow-tool', 'hung-tool', 'lost-response', 'duplicate-delivery', 'tool-error', 'stale-write', 'power-loss', 'fault-plan', 'swarm', 'kill-per-round', 'pause-per-round']));
    expect(schema.properties.faults.default).toEqual([]);
  });
});

describe('parts resolve into the scenario the runner takes', () => {
  it('fills every section with its defaults, and a topics part with the default scenario\'s load', () => {
    const spec = specOf(parts());
    expect(spec).toMatchObject({
      description: '',
      queue: {},
      workers: { count: 4, slots: 1, idleWaitMs: 1_000, maxSteps: 16, toolTimeoutMs: 20_000 },
      model: { latencyMs: [500, 3_000] },
      tools: { latencyMs: [100, 2_000] },
      supervisor: { scanMs: 5_000, confirmDelayMs: 10_000 },
      faults: { plan: emptyPlan() },
      phases: { safetyMs: 150_000, livenessMs: 1_800_000 },
    });
    expect(spec.workload).toEqual({
      parts: [{ kind: 'topics', count: 20, tenants: ['acme', 'globex', 'initech'], newVersionProbability: 0.2, priorities: [0, 30], arrivalWindowMs: 60_000, tiers: ['standard'] }],
      scripts: { writeProbability: 0.8, steps: [1, 4], callsPerStep: [1, 3], tokensPerCall: [200, 2_000] },
    });
  });

  it("keeps the parts as the file lists them, gives each task its part's defaults (context field by field), and a flood its own tiers", () => {
    const spec = specOf({
      name: 'probe',
      workload: [
        { kind: 'topics', count: 2, tiers: ['long'] },
        { kind: 'tasks', defaults: { tenant: 'acme', atMs: 500, context: { brand: 'b', stage: 's' } }, tasks: [{ topic: 'a', priority: 1 }, { topic: 'b', priority: 2, atMs: 0, tenant: 'globex', context: { stage: 't' } }] },
        { kind: 'flood', tenant: 'bulk', everyMs: 1_000, untilMs: 2_000 },
        { kind: 'flood', tenant: 'acme', topicPrefix: 'hot', everyMs: 1_000, untilMs: 2_000, count: 2, tiers: ['long'] },
      ],
    });
    expect(spec.workload.parts.map((item) => item.kind)).toEqual(['topics', 'tasks', 'flood', 'flood']);
    expect(spec.workload.parts[1]).toEqual({ kind: 'tasks', defaults: { tenant: 'acme', atMs: 500, context: { brand: 'b', stage: 's' } }, tasks: [{ topic: 'a', priority: 1 }, { topic: 'b', priority: 2, atMs: 0, tenant: 'globex', context: { stage: 't' } }] });
    expect(explicitTasksOf(spec.workload)).toEqual([
      { tenant: 'acme', atMs: 500, context: { brand: 'b', stage: 's' }, topic: 'a', label: 'a', priority: 1 },
      { tenant: 'globex', atMs: 0, context: { brand: 'b', stage: 't' }, topic: 'b', label: 'b', priority: 2 },
    ]);
    expect(floodsOf(spec.workload)).toEqual([
      { kind: 'flood', tenant: 'bulk', priority: [0, 30], everyMs: 1_000, fromMs: 0, untilMs: 2_000 },
      { kind: 'flood', tenant: 'acme', topicPrefix: 'hot', priority: [0, 30], everyMs: 1_000, fromMs: 0, untilMs: 2_000, count: 2, tiers: ['long'] },
    ]);
    expect(drawnPartOf(spec.workload)).toMatchObject({ kind: 'topics', count: 2, tiers: ['long'] });
    // A task and a flood draw the standard tier unless they say otherwise, whatever tiers the topics part draws from.
    const arrivals = drawArrivals(new SeededRandom('tiers').fork('workload'), spec.workload);
    const tierOf = (topic: string) => arrivals.find((arrival) => arrival.request.topic === topic)?.request.tier;
    expect([tierOf('a'), tierOf('b'), tierOf('bulk-1'), tierOf('hot-1')]).toEqual(['standard', 'standard', 'standard', 'long']);
    expect(workloadTenants(spec.workload)).toEqual(['acme', 'globex', 'initech']);
    // Without a topics or rounds part, the tenants are the ones the tasks and floods name.
    expect(workloadTenants(specOf({ name: 'probe', workload: [{ kind: 'flood', tenant: 'bulk', everyMs: 1_000, untilMs: 2_000 }, { kind: 'tasks', tasks: [{ tenant: 'acme', topic: 't', priority: 0 }] }] }).workload)).toEqual(['acme', 'bulk']);
  });

  it('puts rounds, their poison tasks and the stub model where the runner reads them', () => {
    const script = { steps: [{ calls: [{ tool: 'search_kb', args: { ref: 'x' } }] }], answer: { summary: 'done' } };
    const spec = specOf({ name: 'probe', model: { latencyMs: [2_000, 2_000], script }, workload: [{ kind: 'rounds', count: 3, everyMs: 60_000, poisonTasks: 1 }] });
    expect(spec.model).toEqual({ latencyMs: [2_000, 2_000] });
    expect(roundsPartOf(spec.workload)).toMatchObject({ count: 3, everyMs: 60_000, tasksPerRound: 3, poisonTasks: 1 });
    expect(spec.workload.scripts.script).toEqual({ steps: [{ calls: [{ tool: 'search_kb', args: { ref: 'x' } }], inputTokens: 800, outputTokens: 200 }], answer: { status: 'needs_human', summary: 'done' }, finalTokens: { inputTokens: 600, outputTokens: 150 } });
    expect(spec.workload.scripts).not.toHaveProperty('poisonProbability');
  });

  it('makes one plan of the explicit fault parts, in file order, and keeps a drawn source alone', () => {
    const spec = specOf({
      ...parts(),
      faults: [
        { kind: 'restart', atMs: 50_000 },
        { kind: 'kill-at', point: 'before_model_call', fromMs: 40_000 },
        { kind: 'kill', atMs: 10_000, worker: 1 },
        { kind: 'tool-error', probability: 0.25 },
        { kind: 'fault-plan', timed: [{ kind: 'clock-jump', atMs: 1, deltaMs: -5 }], rates: { staleWriteProbability: 1 } },
      ],
    });
    expect(spec.faults).toEqual({
      plan: {
        timed: [
          { kind: 'restart', atMs: 50_000, downMs: 3_000 },
          { kind: 'kill', atMs: 10_000, worker: 1, reviveAfterMs: 5_000 },
          { kind: 'clock-jump', atMs: 1, deltaMs: -5 },
        ],
        points: [{ kind: 'kill-at', point: 'before_model_call', occurrence: 1, fromMs: 40_000, reviveAfterMs: 5_000 }],
        rates: { slowToolProbability: 0, hungToolProbability: 0, lostResponseProbability: 0, duplicateDeliveryProbability: 0, toolErrorProbability: 0.25, staleWriteProbability: 1 },
      },
    });
    expect(specOf({ ...parts(), faults: [{ kind: 'swarm', quietProbability: 0 }] }).faults).toEqual({ swarm: { kinds: expect.arrayContaining(['kill', 'stale-write']), quietProbability: 0 } });
    const rounds = { name: 'probe', workload: [{ kind: 'rounds', count: 2, everyMs: 1_000 }] };
    expect(specOf({ ...rounds, faults: [{ kind: 'pause-per-round', moments: ['model_call'] }] }).faults).toEqual({
      perRound: { action: { kind: 'pause', durationMs: 45_000 }, moments: ['model_call'], occurrence: [1, 1], target: 'busiest' },
    });
    expect(specOf({ ...rounds, faults: [{ kind: 'kill-per-round' }] }).faults).toEqual({
      perRound: { action: { kind: 'kill', reviveAfterMs: [2_000, 8_000] }, moments: ['model_call', 'tool_call', 'between_checkpoints', 'after_terminal_write'], occurrence: [1, 1], target: 'busiest' },
    });
  });
});
