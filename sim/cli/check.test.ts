import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { ScenarioSpec } from '../scenario.ts';
import { findScenario } from '../scenarios/registry.ts';
import { EXIT_OK, EXIT_USAGE } from './exit-codes.ts';
import { withTasks, withTopics } from '../workloads/__test-helpers__/parts.ts';

/**
 * `leasehold check` and `leasehold replay` as real processes, through both ways of starting the CLI
 * (tools/leasehold.js, and tsx on sim/cli/main.ts as `npx tsx` does), because worker threads must load
 * TypeScript under each of them. Runs are kept tiny: the point is the plumbing, not the simulator.
 */
const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const TSX_CLI = join(REPO, 'node_modules', 'tsx', 'dist', 'cli.mjs');
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-check-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function leasehold(argv: string[], options: { via?: 'bin' | 'tsx' } = {}): Promise<Ran> {
  const entry = options.via === 'tsx' ? [TSX_CLI, join(REPO, 'sim/cli/main.ts')] : [join(REPO, 'tools/leasehold.js')];
  return new Promise((resolve) => {
    execFile(process.execPath, [...entry, ...argv], { cwd: REPO, timeout: 90_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

/** A small scenario file: mixed's shape with four topics and one explicit kill, so each run takes a blink. */
function tinyScenarioFile(name: string): string {
  const mixed = findScenario('mixed');
  if (mixed === undefined) throw new Error('the catalogue has no mixed scenario');
  const plan = { timed: [{ kind: 'kill', atMs: 5_000, worker: 1, reviveAfterMs: 1_000 }], points: [], rates: { slowToolProbability: 0, hungToolProbability: 0, lostResponseProbability: 0, duplicateDeliveryProbability: 0, toolErrorProbability: 0 } };
  const path = join(scratch, `${name}.json`);
  writeFileSync(path, JSON.stringify({ ...mixed, name, workload: withTopics(mixed.workload, 4), faults: { plan } }));
  return path;
}

/** mixed written out as a scenario file, spoiled by `spoil`: a file the CLI must refuse. */
function spoiled(name: string, spoil: (spec: ScenarioSpec) => void): string {
  const spec = structuredClone(findScenario('mixed')) as ScenarioSpec;
  spec.name = name;
  spoil(spec);
  const path = join(scratch, `${name}.json`);
  writeFileSync(path, JSON.stringify(spec));
  return path;
}

const task = (priority: number) => ({ atMs: 0, tenant: 'acme', topic: `t${priority}`, priority });

/** The seeds a check ran, read back from its JUnit report (one testcase per scenario x seed). */
function junitSeeds(path: string): string[] {
  return [...readFileSync(path, 'utf8').matchAll(/<testcase classname="leasehold\.check\.([^"]+)" name="seed ([^"]+)"/g)].map((match) => `${match[1]}/${match[2]}`).sort();
}

describe('leasehold check and replay as processes', () => {
  it('checks two seeds of mixed, exits 0 and prints the root seed and a summary table', async () => {
    // The root seed is fixed so the test does not depend on the commit; both of its mixed seeds pass today.
    const out = join(scratch, 'mixed');
    const result = await leasehold(['check', '--scenario', 'mixed', '--seeds', '2', '--seed', 'cli-test-1', '--jobs', '2', '--out', out, '--junit', join(out, 'junit.xml')]);
    expect(result.stderr).not.toMatch(/harness crash/);
    expect(result.code).toBe(EXIT_OK);
    expect(result.stdout).toContain('root seed: cli-test-1 (from --seed)');
    expect(result.stdout).toMatch(/^scenario\s+seeds\s+pass\s+safety\s+liveness\s+nondet\s+seeds\/s\s+marks reached$/m);
    expect(result.stdout).toMatch(/^mixed\s+2\s+2\s+0\s+0\s+0\s/m);
    expect(result.stdout).toContain('unseed check (S6): 1 seed(s) run twice, every trace hash equal');
    expect(result.stdout).toContain('result: pass (exit 0)');
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as { exitCode: number; total: { seeds: number }; rootSeed: string };
    expect(summary).toMatchObject({ exitCode: 0, rootSeed: 'cli-test-1', total: { seeds: 2 } });
    expect(junitSeeds(join(out, 'junit.xml'))).toHaveLength(2);
  });

  it('exits 64 with a one-line hint on bad usage and bad files', async () => {
    const badFile = join(scratch, 'bad.json');
    writeFileSync(badFile, JSON.stringify({ ...findScenario('mixed'), name: 'bad', workers: { count: 0, slots: 1, idleWaitMs: 1, maxSteps: 1, toolTimeoutMs: 1 } }));
    const cases: [string[], RegExp][] = [
      [['check', '--scenario', 'mixd', '--seeds', '1'], /^leasehold: unknown scenario 'mixd' \(catalogue: mixed.*\)\. Did you mean mixed\? Try: leasehold check --scenario mixed\n$/],
      [['check', '--seeds', '1', '--unseed-rate', '150%'], /^leasehold: --unseed-rate expects a share.* Try: /],
      [['check', '--scenario', badFile, '--seeds', '1'], /^leasehold: bad scenario file .*bad\.json: workers\.count: expected an integer >= 1, got 0\. Try: /],
      [['run', '--scenario', spoiled('bad-task', (spec) => (spec.workload = withTasks(spec.workload, [task(1), task(2), task(31)]))), '--seed', '1'], /^leasehold: bad scenario file .*bad-task\.json: workload\.parts\[2\]\.tasks\[2\]\.priority: expected an integer from 0 to 30, got 31\. Try: leasehold run --seed 1 --scenario mixed\n$/],
      [['check', '--scenario', spoiled('typo', (spec) => Object.assign(spec, { workerz: 2 })), '--seeds', '1'], /^leasehold: bad scenario file .*typo\.json: workerz: unknown field \(did you mean workers\?\); known: .*\. Try: /],
      [['run', '--scenario', spoiled('unknown-kind', (spec) => (spec.expect = [{ kind: 'meteor' }])), '--seed', '1'], /^leasehold: bad scenario file .*unknown-kind\.json: expect\[0\]\.kind: unknown expectation kind "meteor"; expected one of "final-state".*\. Try: /],
      [['replay', join(scratch, 'missing.json')], /^leasehold: bad counterexample file .*missing\.json: cannot be read \(ENOENT\)\. Try: /],
      [['replay', '--scenario', 'mixed'], /^leasehold: replay needs --seed, or a FILE\.json\. Try: /],
    ];
    const results = await Promise.all(cases.map(([argv]) => leasehold(argv, { via: 'tsx' })));
    results.forEach((result, index) => {
      const [argv, stderr] = cases[index] as [string[], RegExp];
      expect({ argv, code: result.code }).toEqual({ argv, code: EXIT_USAGE });
      expect(result.stderr).toMatch(stderr);
    });
  });

  it('runs exactly the unsharded seeds across --shard 1/2 and 2/2 (tsx and bin entries)', async () => {
    const scenarios = ['--scenario', tinyScenarioFile('tiny'), '--scenario', tinyScenarioFile('tiny-b')];
    const run = (name: string, extra: string[], via: 'bin' | 'tsx') =>
      leasehold(['check', ...scenarios, '--seeds', '3', '--seed', 'shard-test', '--jobs', '1', '--unseed-rate', '0', '--junit', join(scratch, `${name}.xml`), '--out', join(scratch, name), ...extra], { via });
    const [whole, first, second] = await Promise.all([run('whole', [], 'bin'), run('shard-1', ['--shard', '1/2'], 'tsx'), run('shard-2', ['--shard', '2/2'], 'bin')]);
    for (const result of [whole, first, second]) expect(result.stderr).not.toMatch(/harness crash/);
    const all = junitSeeds(join(scratch, 'whole.xml'));
    const one = junitSeeds(join(scratch, 'shard-1.xml'));
    const two = junitSeeds(join(scratch, 'shard-2.xml'));
    expect(all).toHaveLength(6);
    expect(one.length).toBeGreaterThan(0);
    expect(two.length).toBeGreaterThan(0);
    expect(one.filter((seed) => two.includes(seed))).toEqual([]);
    expect([...one, ...two].sort()).toEqual(all);
    expect(first.stdout).toContain('shard 1/2');
  });
});
