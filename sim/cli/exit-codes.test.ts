import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Counterexample } from '../check/counterexample.ts';
import type { RunReport, Verdict } from '../report-types.ts';
import type { ScenarioSpec } from '../scenario.ts';
import { findScenario } from '../scenarios/registry.ts';
import { SABOTAGES, type Sabotage } from '../../tools/mutants/catalogue.ts';
import { copyOf, plantSabotage, snapshot } from '../../tools/mutants/copy.ts';
import { EXIT_COVERAGE, EXIT_HARNESS, EXIT_LIVENESS, EXIT_OK, EXIT_SAFETY, EXIT_USAGE } from './exit-codes.ts';
import { editTopics, withTopics } from '../workloads/__test-helpers__/parts.ts';

/**
 * S9 end to end: each exit code of `leasehold check` is read from a real `node tools/leasehold.js check`
 * process, run inside a copy of the project (tools/mutants/copy.ts) that has one planted bug, or over a
 * scenario that must fail that way. The shipped code has no test hook: the verdicts come from the
 * simulator and the checkers, as in CI, and the harness failures from bugs planted in the copy's sim/check/. Each failing check's
 * counterexample is replayed in the same copy, and `replay` and `run --json` must give back the
 * verdict and the trace hash the file recorded. Runs are a seed or two of small scenarios (50 seeds of
 * mixed where coverage is judged, the least at which check enforces it), so the file takes seconds.
 */
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-exit-codes-'));
let pristine = '';
beforeAll(() => {
  pristine = snapshot(scratch);
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `node tools/leasehold.js ARGV` of the project at `project`, run from there, as a shell would. */
function leasehold(project: string, argv: string[]): Promise<Ran> {
  const env: NodeJS.ProcessEnv = { ...process.env, FORCE_COLOR: '0' };
  return new Promise((resolve) => {
    execFile(process.execPath, [join(project, 'tools', 'leasehold.js'), ...argv], { cwd: project, env, timeout: 240_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

/** A fresh copy of the project under this test's own directory, with `sabotage` planted when given. */
function project(name: string, sabotage?: Pick<Sabotage, 'id' | 'file' | 'find' | 'replace'>): string {
  const directory = copyOf(pristine, join(scratch, name, 'project'));
  if (sabotage !== undefined) plantSabotage(directory, sabotage);
  return directory;
}

function catalogueEntry(id: string): Sabotage {
  const entry = SABOTAGES.find((candidate) => candidate.id === id);
  if (entry === undefined) throw new Error(`the sabotage catalogue has no ${id}`);
  return entry;
}

/** Harness-level sabotages: planted in sim/ of the copy, so they are not in the catalogue (which plants only in src/). */
const SUPERVISOR_NEVER_CONFIRMS = {
  id: 'supervisor-never-confirms',
  file: 'sim/actors/supervisor.ts',
  find: 'if (!reported && !deadLongEnough) continue;',
  replace: 'continue;',
};
const CLOCK_JUMPS_DROPPED = {
  id: 'clock-jumps-dropped',
  file: 'sim/faults/clock-jump.ts',
  // Every jump, the timed fault's and clock-jump-at's alike: both go through jumpClock.
  find: "  world.history.note('clock-jump', 'faults', at === undefined ? { deltaMs } : { deltaMs, at });\n  world.loop.clock.jump(deltaMs);",
  replace: '  void world, deltaMs, at;',
};
/**
 * The unseed repeat of a seed reports another trace hash (its own, reversed) than its first run: the
 * narrowest nondeterminism there is, which leaves the first run, and so the counterexample, replayable.
 */
const REPEAT_HASH_DIFFERS = {
  id: 'repeat-hash-differs',
  file: 'sim/check/run-job.ts',
  find: 'traceHash: report.traceHash,',
  replace: "traceHash: job.repeat ? [...report.traceHash].reverse().join('') : report.traceHash,",
};
/** A check thread dies with an uncaught error at its first job, as a native crash or a runaway allocation would end it. */
const THREAD_DIES = {
  id: 'check-thread-dies',
  file: 'sim/check/check-worker.ts',
  find: "  if (message.type !== 'job') return;\n",
  replace: "  if (message.type !== 'job') return;\n  throw new Error('planted: the check thread dies at its first job');\n",
};
/** The score formula throws: the world crashes at its first claim. Same find text as the catalogue's aging-formula-dropped. */
const SCORE_THROWS = { ...catalogueEntry('aging-formula-dropped'), id: 'score-throws', replace: "throw new Error('planted: the score formula throws');" };

const NO_RATES = { slowToolProbability: 0, hungToolProbability: 0, lostResponseProbability: 0, duplicateDeliveryProbability: 0, toolErrorProbability: 0 };
/** One explicit kill and no rates: a run of four topics that takes a blink and passes. */
const ONE_TIMED_KILL = { plan: { timed: [{ kind: 'kill' as const, atMs: 5_000, worker: 1, reviveAfterMs: 1_000 }], points: [], rates: NO_RATES } };

/** mixed with four topics and `faults` instead of the swarm, written to `directory`; returns its path. */
function mixedFile(directory: string, name: string, faults: ScenarioSpec['faults'], change: (spec: ScenarioSpec) => void = () => {}): string {
  const spec = structuredClone(findScenario('mixed')) as ScenarioSpec;
  Object.assign(spec, { name, workload: withTopics(spec.workload, 4), faults });
  change(spec);
  mkdirSync(directory, { recursive: true });
  const path = join(directory, `${name}.json`);
  writeFileSync(path, JSON.stringify(spec));
  return path;
}

/** `leasehold check` in `project` with a fixed root seed (a copy has no git commit to derive one from), one thread. */
async function check(project: string, out: string, argv: string[]): Promise<Ran> {
  return await leasehold(project, ['check', ...argv, '--jobs', '1', '--out', out]);
}

function summaryOf(out: string): { exitCode: number; coverage: { enforced: boolean; missing?: string[] } } {
  return JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as { exitCode: number; coverage: { enforced: boolean; missing?: string[] } };
}

/** The counterexample named by check's one replay line (S9: a failure prints one line that replays it). */
function counterexampleOf(ran: Ran, project: string): { path: string; file: Counterexample } {
  const line = /^replay: leasehold replay (\S+\.json) {3}\(or: leasehold replay --scenario \S+ --seed \d+\)$/m.exec(ran.stdout);
  expect(line, ran.stdout).not.toBeNull();
  const path = isAbsolute(line?.[1] as string) ? (line?.[1] as string) : join(project, line?.[1] as string);
  return { path, file: JSON.parse(readFileSync(path, 'utf8')) as Counterexample };
}

/**
 * `leasehold replay FILE.json` and `leasehold run --scenario … --seed … --json` in the same project give
 * the verdict and the trace hash the counterexample recorded, and exit with the verdict's code.
 */
async function expectReproduced(project: string, path: string, recorded: Counterexample, verdict: Verdict, code: number): Promise<void> {
  expect(recorded.verdict).toBe(verdict);
  expect(recorded.traceHash).toMatch(/^[0-9a-f]{64}$/);
  const [replay, run] = await Promise.all([
    leasehold(project, ['replay', path]),
    leasehold(project, ['run', '--scenario', recorded.scenarioFile ?? recorded.scenario, '--seed', recorded.seed, '--json']),
  ]);
  expect(replay.code, replay.stdout + replay.stderr).toBe(code);
  expect(replay.stdout).toContain(`verdict:    ${verdict} (recorded: ${verdict})`);
  expect(replay.stdout).toContain(`trace hash: ${recorded.traceHash} (matches the recorded hash)`);
  expect(run.code, run.stderr).toBe(code);
  const report = JSON.parse(run.stdout) as RunReport;
  expect({ verdict: report.verdict, traceHash: report.traceHash, seed: report.seed }).toEqual({ verdict, traceHash: recorded.traceHash, seed: recorded.seed });
}

describe('leasehold check exit codes (S9), each from a real run', { timeout: 300_000 }, () => {
  it('exits 0 on an unsabotaged copy, over 50 seeds of mixed with coverage enforced and every required mark reached', async () => {
    const copy = project('clean');
    const out = join(scratch, 'clean', 'out');
    const ran = await check(copy, out, ['--scenario', 'mixed', '--seeds', '50', '--seed', 'exit-codes-coverage', '--unseed-rate', '0']);
    expect(ran.code, ran.stdout + ran.stderr).toBe(EXIT_OK);
    expect(ran.stdout).toMatch(/^coverage: all \d+ required marks reached$/m);
    expect(ran.stdout).toContain('result: pass (exit 0)');
    expect(summaryOf(out)).toMatchObject({ exitCode: EXIT_OK, coverage: { enforced: true, missing: [] } });
  });

  it('exits 1 on a safety failure (aging-cap-off-by-one, caught by I5 at seed index 0 of aging-table), and the counterexample replays to it', async () => {
    const copy = project('safety', catalogueEntry('aging-cap-off-by-one'));
    const out = join(scratch, 'safety', 'out');
    const ran = await check(copy, out, ['--scenario', 'aging-table', '--seeds', '1', '--seed', 'exit-codes-safety']);
    expect(ran.code, ran.stdout + ran.stderr).toBe(EXIT_SAFETY);
    expect(ran.stdout).toMatch(/^result: FAIL \(exit 1\): 1 safety/m);
    expect(summaryOf(out).exitCode).toBe(EXIT_SAFETY);
    const { path, file } = counterexampleOf(ran, copy);
    expect(file.check.seedIndex).toBe(0);
    expect(file.violations).toContainEqual(expect.objectContaining({ invariant: 'I5', kind: 'safety' }));
    await expectReproduced(copy, path, file, 'safety', EXIT_SAFETY);
  });

  it('exits 1, not 4, when a safety bug and a missing coverage mark come together: safety wins (S9 precedence)', async () => {
    const copy = project('safety-and-coverage', CLOCK_JUMPS_DROPPED);
    plantSabotage(copy, catalogueEntry('tenant-list-unfiltered'));
    const out = join(scratch, 'safety-and-coverage', 'out');
    const ran = await check(copy, out, ['--scenario', 'mixed', '--seeds', '50', '--seed', 'exit-codes-coverage', '--unseed-rate', '0']);
    expect(ran.code, ran.stdout + ran.stderr).toBe(EXIT_SAFETY);
    expect(summaryOf(out)).toMatchObject({ exitCode: EXIT_SAFETY, coverage: { enforced: true, missing: expect.arrayContaining(['clock_jump']) } });
    const { file } = counterexampleOf(ran, copy);
    expect(file.violations).toContainEqual(expect.objectContaining({ invariant: 'I13', kind: 'safety' }));
  });

  it('exits 2 on a liveness failure: a supervisor that never confirms a dead worker leaves its task uncertain, and the counterexample replays to it', async () => {
    const copy = project('liveness', SUPERVISOR_NEVER_CONFIRMS);
    const out = join(scratch, 'liveness', 'out');
    const killed = { plan: { timed: [], points: [{ kind: 'kill-at' as const, point: 'before_model_call' as const, occurrence: 1, reviveAfterMs: 1_000 }], rates: NO_RATES } };
    const scenario = mixedFile(join(scratch, 'liveness'), 'one-kill', killed);
    const ran = await check(copy, out, ['--scenario', scenario, '--seeds', '1', '--seed', 'exit-codes-liveness']);
    expect(ran.code, ran.stdout + ran.stderr).toBe(EXIT_LIVENESS);
    expect(ran.stdout).toMatch(/^result: FAIL \(exit 2\): 1 liveness/m);
    expect(summaryOf(out).exitCode).toBe(EXIT_LIVENESS);
    const { path, file } = counterexampleOf(ran, copy);
    expect(file.violations.every((violation) => violation.kind === 'liveness')).toBe(true);
    expect(file.violations).toContainEqual(expect.objectContaining({ invariant: 'I11', kind: 'liveness', message: expect.stringMatching(/still uncertain/) }));
    await expectReproduced(copy, path, file, 'liveness', EXIT_LIVENESS);
  });

  it('exits 2 on unsabotaged code when a scenario cannot drain within its phases (one run longer than both)', async () => {
    const copy = project('liveness-scenario');
    const out = join(scratch, 'liveness-scenario', 'out');
    const scenario = mixedFile(join(scratch, 'liveness-scenario'), 'too-short', { plan: { timed: [], points: [], rates: NO_RATES } }, (spec) => {
      spec.workload = editTopics(spec.workload, { arrivalWindowMs: 0 });
      spec.model = { latencyMs: [10_000, 10_000] };
      spec.phases = { safetyMs: 5_000, livenessMs: 5_000 };
    });
    const ran = await check(copy, out, ['--scenario', scenario, '--seeds', '1', '--seed', 'exit-codes-drain', '--unseed-rate', '0']);
    expect(ran.code, ran.stdout + ran.stderr).toBe(EXIT_LIVENESS);
    const { path, file } = counterexampleOf(ran, copy);
    expect(file.violations).toContainEqual(expect.objectContaining({ invariant: 'I11', kind: 'liveness', message: expect.stringMatching(/did not drain/) }));
    await expectReproduced(copy, path, file, 'liveness', EXIT_LIVENESS);
  });

  it('exits 3 on nondeterminism: retry jitter from Math.random (jitter-ambient-random) gives one seed two trace hashes', async () => {
    const copy = project('nondeterminism', catalogueEntry('jitter-ambient-random'));
    const out = join(scratch, 'nondeterminism', 'out');
    const ran = await check(copy, out, ['--scenario', 'retry-storm', '--seeds', '1', '--seed', 'exit-codes-unseed', '--unseed-rate', '1']);
    expect(ran.code, ran.stdout + ran.stderr).toBe(EXIT_HARNESS);
    expect(ran.stdout).toMatch(/^NONDETERMINISM retry-storm seed \d+: two runs gave trace hashes [0-9a-f]{64} and [0-9a-f]{64}$/m);
    expect(summaryOf(out).exitCode).toBe(EXIT_HARNESS);
    const { path, file } = counterexampleOf(ran, copy);
    expect(file.verdict).toBe('nondeterminism');
    expect(file.unseed?.hashA).toBe(file.traceHash);
    expect(file.unseed?.hashB).not.toBe(file.traceHash);
    // Nondeterministic code cannot give the hash back: the replay says so and exits 3 too.
    const replay = await leasehold(copy, ['replay', path]);
    expect(replay.code, replay.stdout + replay.stderr).toBe(EXIT_HARNESS);
    expect(replay.stdout).toContain(`(DIFFERS from the recorded ${file.traceHash})`);
  });

  it("exits 3 when only a seed's repeat run gives another trace hash; the counterexample keeps the first run, and replays to its hash", async () => {
    const copy = project('repeat-differs', REPEAT_HASH_DIFFERS);
    const out = join(scratch, 'repeat-differs', 'out');
    const scenario = mixedFile(join(scratch, 'repeat-differs'), 'tiny', ONE_TIMED_KILL);
    // Two seeds at the default unseed rate: one of them (at least one, S6) is run twice.
    const ran = await check(copy, out, ['--scenario', scenario, '--seeds', '2', '--seed', 'exit-codes-repeat']);
    expect(ran.code, ran.stdout + ran.stderr).toBe(EXIT_HARNESS);
    expect(ran.stdout).toMatch(/^NONDETERMINISM tiny seed \d+: two runs gave trace hashes [0-9a-f]{64} and [0-9a-f]{64}$/m);
    expect(ran.stdout).toContain('unseed check (S6): 1 of 1 seed(s) run twice gave two different trace hashes');
    expect(summaryOf(out).exitCode).toBe(EXIT_HARNESS);
    const { path, file } = counterexampleOf(ran, copy);
    expect(file.verdict).toBe('nondeterminism');
    expect(file.unseed?.hashA).toBe(file.traceHash);
    expect(file.unseed?.hashB).toBe([...file.traceHash].reverse().join(''));
    const trace = join(out, 'trace.jsonl');
    const replay = await leasehold(copy, ['replay', path, '--trace', trace]);
    expect(replay.code, replay.stdout + replay.stderr).toBe(EXIT_OK);
    expect(replay.stdout).toContain(`trace hash: ${file.traceHash} (matches the recorded hash)`);
    expect(replay.stdout).toContain(`note:       this seed gave two trace hashes when it was checked: ${file.unseed?.hashA} and ${file.unseed?.hashB}`);
    expect(readFileSync(trace, 'utf8').split('\n').length).toBeGreaterThan(10);
  });

  it('exits 3 with the seed it was running when a check thread dies, and prints the line that replays that seed', async () => {
    const copy = project('thread-dies', THREAD_DIES);
    const out = join(scratch, 'thread-dies', 'out');
    const scenario = mixedFile(join(scratch, 'thread-dies'), 'tiny', ONE_TIMED_KILL);
    const ran = await check(copy, out, ['--scenario', scenario, '--seeds', '2', '--seed', 'exit-codes-thread']);
    expect(ran.code, ran.stdout + ran.stderr).toBe(EXIT_HARNESS);
    expect(ran.stdout).toMatch(/^HARNESS CRASH: worker thread 0 died while running tiny seed \d+: Error: planted: the check thread dies at its first job$/m);
    expect(ran.stdout).toMatch(/^replay: leasehold replay --scenario \S+tiny\.json --seed \d+$/m);
    expect(summaryOf(out).exitCode).toBe(EXIT_HARNESS);
  });

  it('exits 3 on a harness crash: a throw inside the world (the score formula throws at the first claim), and the counterexample replays to it', async () => {
    const copy = project('crash', SCORE_THROWS);
    const out = join(scratch, 'crash', 'out');
    const ran = await check(copy, out, ['--scenario', 'aging-table', '--seeds', '1', '--seed', 'exit-codes-crash']);
    expect(ran.code, ran.stdout + ran.stderr).toBe(EXIT_HARNESS);
    expect(ran.stdout).toMatch(/harness crash: Error: planted: the score formula throws/);
    expect(summaryOf(out).exitCode).toBe(EXIT_HARNESS);
    const { path, file } = counterexampleOf(ran, copy);
    expect(file.violations).toContainEqual(expect.objectContaining({ invariant: 'harness' }));
    await expectReproduced(copy, path, file, 'nondeterminism', EXIT_HARNESS);
  });

  it('exits 4 when a required coverage mark is never reached: clock jumps silently dropped, 50 seeds of mixed, every invariant holds', async () => {
    const copy = project('coverage', CLOCK_JUMPS_DROPPED);
    const out = join(scratch, 'coverage', 'out');
    const ran = await check(copy, out, ['--scenario', 'mixed', '--seeds', '50', '--seed', 'exit-codes-coverage', '--unseed-rate', '0']);
    expect(ran.code, ran.stdout + ran.stderr).toBe(EXIT_COVERAGE);
    expect(ran.stdout).toMatch(/^mixed\s+50\s+50\s+0\s+0\s+0\s/m);
    expect(ran.stdout).toMatch(/^coverage: MISSING 1 of \d+ required marks, never reached: clock_jump$/m);
    expect(ran.stdout).toMatch(/^result: FAIL \(exit 4\)/m);
    expect(summaryOf(out)).toMatchObject({ exitCode: EXIT_COVERAGE, coverage: { enforced: true, missing: ['clock_jump'] } });
  });

  it('exits 64 on bad usage and on a bad scenario file', async () => {
    const copy = project('usage');
    const notJson = join(scratch, 'usage', 'not-json.json');
    writeFileSync(notJson, '{ "name": ');
    const lateKill = mixedFile(join(scratch, 'usage'), 'late-kill', { plan: { timed: [{ kind: 'kill', atMs: 10_000_000, worker: 0, reviveAfterMs: 1_000 }], points: [], rates: NO_RATES } });
    const cases: [string[], RegExp][] = [
      [['check', '--seeds', 'lots'], /^leasehold: --seeds expects a whole number/],
      [['check', '--scenario', 'mixed', '--report'], /^leasehold: --report writes its reports under --out DIR/],
      [['check', '--scenario', notJson, '--seeds', '1'], /^leasehold: bad scenario file .*not-json\.json: is not valid JSON/],
      [['check', '--scenario', lateKill, '--seeds', '1'], /^leasehold: bad scenario file .*late-kill\.json: faults\.plan\.timed\[0\]\.atMs: must be below phases\.safetyMs/],
    ];
    const results = await Promise.all(cases.map(([argv]) => leasehold(copy, argv)));
    results.forEach((result, index) => {
      const [argv, stderr] = cases[index] as [string[], RegExp];
      expect({ argv, code: result.code }).toEqual({ argv, code: EXIT_USAGE });
      expect(result.stderr).toMatch(stderr);
    });
  });
});
