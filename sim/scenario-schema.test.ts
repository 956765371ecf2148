import { describe, expect, it } from 'vitest';
import { EXPECTATION_KINDS } from './expectations/index.ts';
import { emptyPlan } from './faults/plan.ts';
import { formatPath, parseFaultPlan, parseScenarioFile, SCHEMA_COVERS_SCENARIO_SPEC, scenarioJsonSchema } from './scenario-schema.ts';
import { catalogueScenario, listScenarios } from './scenarios/registry.ts';

const mixed = () => structuredClone(catalogueScenario('mixed')) as unknown as Record<string, unknown>;

describe('the scenario file schema', () => {
  it('covers every field of ScenarioSpec (checked by the compiler) and takes every catalogue scenario back unchanged', () => {
    expect(SCHEMA_COVERS_SCENARIO_SPEC).toBe(true);
    for (const { name } of listScenarios()) {
      const spec = catalogueScenario(name);
      const parsed = parseScenarioFile(JSON.parse(JSON.stringify(spec)));
      expect(parsed, name).toEqual({ ok: true, spec });
    }
  });

  it('knows every expectation kind, from the kinds themselves', () => {
    const kinds = EXPECTATION_KINDS.map((kind) => kind.kind);
    const spec = { ...mixed(), expect: [{ kind: 'no-such-kind' }] };
    const parsed = parseScenarioFile(spec);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.problems[0]).toEqual({ field: 'expect[0].kind', problem: `unknown expectation kind "no-such-kind"; expected one of ${kinds.map((kind) => JSON.stringify(kind)).join(', ')}` });
  });

  it('takes weights of tool error classes, and names a class it does not know', () => {
    const good = { ...mixed(), tools: { latencyMs: [100, 200], errorClasses: { rate_limited: 3, permission_denied: 1 } } };
    expect(parseScenarioFile(good).ok).toBe(true);
    const bad = parseScenarioFile({ ...mixed(), tools: { latencyMs: [100, 200], errorClasses: { rate_limit: 1 } } });
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    expect(bad.problems[0]?.field).toMatch(/^tools\.errorClasses/);
    expect(bad.problems[0]?.problem).toMatch(/rate_limited/);
    const zero = parseScenarioFile({ ...mixed(), tools: { latencyMs: [100, 200], errorClasses: { rate_limited: 0 } } });
    expect(zero.ok).toBe(false);
  });

  it('lists every problem, unknown fields (typos) first', () => {
    const spec = mixed();
    Object.assign(spec.workers as object, { count: 0, slots: 'two' });
    spec.colour = 'blue';
    const parsed = parseScenarioFile(spec);
    expect(parsed.ok ? [] : parsed.problems).toEqual([
      { field: 'colour', problem: 'unknown field; known: $schema, name, description, source, notes, queue, workers, workload, model, tools, supervisor, faults, phases, expect' },
      { field: 'workers.count', problem: 'expected an integer >= 1, got 0' },
      { field: 'workers.slots', problem: 'expected an integer >= 1, got "two"' },
    ]);
  });

  it('says a misspelt field is unknown and what it might have meant, before the field it meant is missing', () => {
    const spec = mixed();
    const workload = spec.workload as Record<string, unknown>;
    workload.tenant = workload.tenants;
    delete workload.tenants;
    const parsed = parseScenarioFile(spec);
    expect(parsed.ok ? [] : parsed.problems.map((problem) => problem.field)).toEqual(['workload.tenant', 'workload.tenants']);
    expect(parsed.ok ? '' : parsed.problems[0]!.problem).toMatch(/^unknown field \(did you mean tenants\?\); known: tenants, topics, /);
  });

  it('checks how fields fit together only once each field is right', () => {
    const spec = mixed();
    spec.queue = { leaseMs: 10_000, heartbeatMs: 5_000 };
    const parsed = parseScenarioFile(spec);
    expect(parsed.ok ? [] : parsed.problems).toEqual([{ field: 'queue.leaseMs', problem: 'must be at least 3 x heartbeatMs (15000), got 10000' }]);
    spec.queue = { leaseMs: 'long', perTenantLimit: 9 };
    const shape = parseScenarioFile(spec);
    expect(shape.ok ? [] : shape.problems).toEqual([{ field: 'queue.leaseMs', problem: 'expected an integer >= 1, got "long"' }]);
  });

  it('checks a fault plan as recorded in a counterexample, worker indexes included', () => {
    expect(parseFaultPlan(emptyPlan(), 'plan', 2)).toEqual([]);
    expect(parseFaultPlan({ ...emptyPlan(), timed: [{ kind: 'pause', atMs: 0, worker: 2, durationMs: 5 }] }, 'plan', 2)).toEqual([
      { field: 'plan.timed[0].worker', problem: 'must name one of the 2 workers (0..1), got 2' },
    ]);
    expect(parseFaultPlan({ ...emptyPlan(), points: [{ kind: 'kill-at', point: 'nowhere', occurrence: 1, reviveAfterMs: 0 }] }, 'plan', 2)[0]).toEqual({
      field: 'plan.points[0].point',
      problem: 'expected one of "before_model_call", "before_tool_call", "after_effect", "between_checkpoints", "after_terminal_write", got "nowhere"',
    });
  });

  it('writes field paths as people read them', () => {
    expect(formatPath(['workload', 'tasks', 2, 'priority'])).toBe('workload.tasks[2].priority');
    expect(formatPath([])).toBe('');
  });

  it('has a JSON Schema: strict objects, the explicit tasks, and exactly one fault source', () => {
    const schema = scenarioJsonSchema() as { properties: Record<string, any>; additionalProperties: boolean; required: string[] };
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required).toEqual(expect.arrayContaining(['name', 'queue', 'workers', 'workload', 'faults', 'phases']));
    const task = schema.properties.workload.properties.tasks.items;
    expect(task.properties.priority).toMatchObject({ type: 'integer', minimum: 0, maximum: 30 });
    expect(task.additionalProperties).toBe(false);
    expect(schema.properties.faults).toMatchObject({ minProperties: 1, maxProperties: 1 });
  });
});
