import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readCounterexample, type Counterexample } from '../check/counterexample.ts';
import { ScenarioFileError, validateScenario } from '../check/scenario-file.ts';
import { runCli } from '../cli/dispatch.ts';
import { EXIT_SAFETY } from '../cli/exit-codes.ts';
import { simulate } from '../run-scenario.ts';
import type { ScenarioSpec } from '../scenario.ts';
import { shrink } from '../testing-harness.ts';
import { clientSwarmOf, drawnPartOf, explicitTasksOf, floodsOf } from './index.ts';
import { FlatWorkloadError, upgradeFlatWorkload, type FlatWorkload } from './legacy.ts';

/**
 * Counterexample files written before workloads kept their typed parts (fixtures/, written by
 * `leasehold run --out` at 377f5a2: mixed's shape with four topics and a task L, kill-takeover's
 * rounds with its stub script and needs, and a workload written by hand in the flat form: tiers that
 * start with long, a task and a flood that state no tier) still read, replay to their recorded trace
 * hash, and shrink.
 */
const FIXTURES = join(import.meta.dirname, '__test-helpers__', 'fixtures');
const LEGACY = ['legacy-topics-2.json', 'legacy-rounds-1.json', 'legacy-by-hand-3.json'];
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-legacy-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const raw = (name: string) => JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as Omit<Counterexample, 'scenarioSpec'> & { scenarioSpec: Omit<ScenarioSpec, 'workload'> & { workload: FlatWorkload } };

describe('a counterexample file whose workload is one flat object', () => {
  it.each(LEGACY)('%s reads as typed parts and replays to its recorded trace hash and violations', async (name) => {
    const recorded = readCounterexample(join(FIXTURES, name));
    expect(raw(name).scenarioSpec.workload).not.toHaveProperty('parts');
    expect(recorded.scenarioSpec.workload.parts.length).toBeGreaterThan(0);
    // The explicit form before parts, read as a scenario file, gives the same parts.
    expect(validateScenario(raw(name).scenarioSpec)).toEqual(recorded.scenarioSpec);
    const { report } = await simulate({ scenario: recorded.scenarioSpec, seed: recorded.seed, ...(recorded.plan === undefined ? {} : { plan: recorded.plan }) });
    expect(report.traceHash).toBe(recorded.traceHash);
    expect(report.verdict).toBe(recorded.verdict);
    expect(report.violations).toEqual(recorded.violations);
  });

  it('becomes the parts it stands for: the drawn part, one tasks part, a flood part each, the client swarm, and the script drawing', () => {
    const topics = upgradeFlatWorkload(raw('legacy-topics-2.json').scenarioSpec.workload);
    expect(topics.parts.map((item) => item.kind)).toEqual(['topics', 'tasks', 'client-swarm']);
    expect(drawnPartOf(topics)).toEqual({ kind: 'topics', count: 4, tenants: ['acme', 'globex', 'initech'], priorities: [0, 30], newVersionProbability: 0.2, arrivalWindowMs: 60_000, tiers: ['standard', 'standard', 'long'] });
    expect(topics.scripts).toEqual({ writeProbability: 0.8, steps: [1, 4], callsPerStep: [1, 3], tokensPerCall: [200, 2_000] });
    expect(clientSwarmOf(topics)).toEqual(raw('legacy-topics-2.json').scenarioSpec.workload.clientSwarm);

    const rounds = upgradeFlatWorkload(raw('legacy-rounds-1.json').scenarioSpec.workload);
    const flat = raw('legacy-rounds-1.json').scenarioSpec.workload;
    expect(drawnPartOf(rounds)).toMatchObject({ kind: 'rounds', ...flat.rounds, tenants: flat.tenants, priorities: flat.priorities, tiers: flat.tiers, poisonTasks: 0, needs: flat.needs });
    expect(rounds.scripts.script).toEqual(flat.script);

    // What a flat object left to its tiers, the parts state: the task's first tier, the flood's tiers.
    const byHand = upgradeFlatWorkload(raw('legacy-by-hand-3.json').scenarioSpec.workload);
    expect(explicitTasksOf(byHand)).toEqual([{ atMs: 1_000, tenant: 'acme', topic: 'hand', priority: 20, tier: 'long', label: 'hand' }]);
    expect(floodsOf(byHand)).toEqual([{ kind: 'flood', tenant: 'globex', topicPrefix: 'burst', priority: [1, 9], everyMs: 2_000, fromMs: 0, untilMs: 6_000, tiers: ['long', 'standard'] }]);
    expect(drawnPartOf(byHand)).toMatchObject({ kind: 'topics', count: 3, tenants: ['acme', 'globex'], priorities: [5, 25], tiers: ['long', 'standard'] });
  });

  it('is refused, naming the field, when its client swarm drew from tenants, priorities or tiers that parts cannot give', () => {
    const flat = raw('legacy-topics-2.json').scenarioSpec.workload;
    // Without topics, the client swarm drew its bursts from the flat object's own tenants: parts draw them from the tasks' (acme).
    expect(() => upgradeFlatWorkload({ ...flat, topics: 0, tenants: ['acme', 'globex'] })).toThrow(FlatWorkloadError);
    expect(() => upgradeFlatWorkload({ ...flat, topics: 0, tenants: ['acme'], priorities: [3, 9] })).toThrow(/^priorities: a client swarm without topics or rounds draws its new requests at priorities 0 to 30/);
    expect(() => upgradeFlatWorkload({ ...flat, topics: 0, tenants: ['acme'], tiers: ['long'] })).toThrow(/^tiers: /);
    // The same without the client swarm: nothing drew from them.
    const { clientSwarm: _swarm, ...quiet } = flat;
    expect(upgradeFlatWorkload({ ...quiet, topics: 0, tenants: ['acme', 'globex'] }).parts.map((item) => item.kind)).toEqual(['tasks']);

    const path = join(scratch, 'unrepresentable.json');
    const file = raw('legacy-topics-2.json');
    writeFileSync(path, JSON.stringify({ ...file, scenarioSpec: { ...file.scenarioSpec, workload: { ...flat, topics: 0, tenants: ['acme', 'globex'] } } }));
    let error: unknown;
    try {
      readCounterexample(path);
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(ScenarioFileError);
    expect(error).toMatchObject({ field: 'scenarioSpec.workload.tenants', problem: expect.stringMatching(/from the tenants its tasks and floods name \(acme\)/) });
  });

  it('shrinks on its parts, and the shrunk file keeps them', async () => {
    const file = join(scratch, 'legacy-topics-2.json');
    copyFileSync(join(FIXTURES, 'legacy-topics-2.json'), file);
    const out = join(scratch, 'legacy-topics-2.shrunk.json');
    const result = await shrink({ file, out, maxRuns: 4 });
    expect(result).toMatchObject({ reproduced: true, exitCode: EXIT_SAFETY, invariant: 'expect:final-state' });
    expect(result.workload).toEqual(['topics 4 -> 1']);
    const shrunk = JSON.parse(readFileSync(out, 'utf8')) as Counterexample;
    expect(drawnPartOf(shrunk.scenarioSpec.workload)).toMatchObject({ kind: 'topics', count: 1 });
    const { report } = await simulate({ scenario: shrunk.scenarioSpec, seed: shrunk.seed, ...(shrunk.plan === undefined ? {} : { plan: shrunk.plan }) });
    expect(report.traceHash).toBe(shrunk.traceHash);
  });

  it('replays with leasehold replay, which says how it read the file', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(['replay', join(FIXTURES, 'legacy-rounds-1.json')], { out: (text) => out.push(text), err: (text) => err.push(text) });
    const stdout = out.join('\n');
    expect(code, err.join('\n')).toBe(EXIT_SAFETY);
    expect(stdout).toContain(`trace hash: ${raw('legacy-rounds-1.json').traceHash} (matches the recorded hash)`);
    expect(stdout).toContain('this file records its workload as one flat object, as files were written before workloads kept their parts; it is read as the parts that draw the same arrivals');
    expect(stdout).not.toContain('changed since this file was written');
  });
});
