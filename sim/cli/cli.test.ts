import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { emptyPlan } from '../faults/plan.ts';
import type { RunReport, Verdict } from '../report-types.ts';
import type { ScenarioSpec } from '../scenario.ts';
import { catalogueScenario, listScenarios } from '../scenarios/registry.ts';
import { parseCommandLine, type ParsedArgs } from './args.ts';
import { COMMAND_NAMES, COMMANDS } from './command-specs.ts';
import * as checkCommand from './commands/check.ts';
import * as runCommandModule from './commands/run.ts';
import { summarise } from './commands/run.ts';
import { COMMAND_LOADERS, loadCommand, runCli, runCommand, toRun } from './dispatch.ts';
import { EXIT_HARNESS, EXIT_LIVENESS, EXIT_OK, EXIT_SAFETY, EXIT_USAGE, exitCodeForVerdict } from './exit-codes.ts';
import { UsageError } from './usage-error.ts';
import { MissingDependencyError } from '../../src/queue/errors.ts';
import { withTasks, withTopics } from '../workloads/__test-helpers__/parts.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-cli-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Collects what a command writes. */
function collector() {
  const out: string[] = [];
  const err: string[] = [];
  return { context: { out: (text: string) => out.push(text), err: (text: string) => err.push(text) }, stdout: () => out.join('\n'), stderr: () => err.join('\n') };
}

/** Runs the CLI in-process, with the real command modules. */
async function cli(argv: string[]) {
  const io = collector();
  const code = await runCli(argv, io.context);
  return { code, stdout: io.stdout(), stderr: io.stderr() };
}

function parse(...argv: string[]): ParsedArgs {
  const parsed = parseCommandLine(argv);
  if (parsed.kind !== 'command') throw new Error('expected a command, got help');
  return parsed.args;
}

/** A small scenario file (three explicit tasks, no faults) with `change` applied; returns its path. */
function scenarioFile(name: string, change: (spec: ScenarioSpec) => void): string {
  const mixed = catalogueScenario('mixed');
  const spec: ScenarioSpec = {
    ...mixed,
    name,
    workload: withTasks(withTopics(mixed.workload, 0), [{ atMs: 0, tenant: 'acme', topic: 'lunch', priority: 30, label: 'L' }, { atMs: 0, tenant: 'acme', topic: 'report', priority: 1 }]),
    faults: { plan: emptyPlan() },
  };
  change(spec);
  const path = join(scratch, `${name}.json`);
  writeFileSync(path, JSON.stringify(spec));
  return path;
}

/** Ends with a safety violation on sound code: the scenario expects L to fail, and it ends done. */
function expectsTheImpossible(): string {
  return scenarioFile('expects-failed', (spec) => {
    spec.expect = [{ kind: 'final-state', task: 'L', state: 'failed' }];
  });
}
/** Ends with a liveness violation on sound code: one model call outlasts both phases. */
function cannotDrain(): string {
  return scenarioFile('cannot-drain', (spec) => {
    spec.model = { latencyMs: [10_000, 10_000] };
    spec.phases = { safetyMs: 5_000, livenessMs: 5_000 };
  });
}

function report(verdict: Verdict): RunReport {
  const failed = verdict === 'safety' || verdict === 'liveness';
  return {
    scenario: 'mixed',
    seed: '42',
    traceHash: 'abc123',
    verdict,
    violations: failed ? [{ invariant: 'I1', kind: verdict, message: 'two live holders of task 3', at: [10, 12], taskId: 3 }] : [],
    marks: { superseded: 2, stale_lease_rejected: 1 },
    metrics: { claims: 9 },
  };
}

describe('leasehold run', () => {
  it.each([
    ['pass', EXIT_OK],
    ['safety', EXIT_SAFETY],
    ['liveness', EXIT_LIVENESS],
    ['nondeterminism', EXIT_HARNESS],
  ] as const)('maps verdict %s to its exit code', (verdict, code) => {
    expect(exitCodeForVerdict(verdict)).toBe(code);
  });

  // A real nondeterminism verdict needs a planted bug: exit-codes.test.ts runs `run --json` on one and gets 3.
  it.each([
    ['pass', 'mixed', EXIT_OK],
    ['safety', 'expects-failed', EXIT_SAFETY],
    ['liveness', 'cannot-drain', EXIT_LIVENESS],
  ] as const)('prints one JSON report and exits with the code of a real %s run', async (verdict, scenario, code) => {
    const argument = scenario === 'mixed' ? scenario : scenario === 'expects-failed' ? expectsTheImpossible() : cannotDrain();
    const result = await cli(['run', '--scenario', argument, '--seed', '1', '--json']);
    expect(result.code, result.stderr).toBe(code);
    const printed = JSON.parse(result.stdout) as RunReport;
    expect(Object.keys(printed)).toEqual(expect.arrayContaining(['scenario', 'seed', 'traceHash', 'verdict', 'violations', 'marks', 'metrics']));
    expect(printed).toMatchObject({ verdict, seed: '1' });
    expect(result.stderr).toBe(verdict === 'pass' ? '' : `replay: leasehold replay --scenario ${argument} --seed 1`);
  });

  it('prints a human summary with the violation and the replay line', async () => {
    const file = expectsTheImpossible();
    const result = await cli(['run', '--scenario', file, '--seed', '1']);
    expect(result.code).toBe(EXIT_SAFETY);
    expect(result.stdout).toContain('scenario:   expects-failed');
    expect(result.stdout).toContain('verdict:    safety');
    expect(result.stdout).toMatch(/^ {2}expect:final-state \(safety\) expect\[0\] final-state: task \d+ \('L'\) ended done, expected failed$/m);
    expect(result.stdout).toContain(`replay:     leasehold replay --scenario ${file} --seed 1`);
    expect(summarise(report('safety')).split('\n')).toEqual([
      'scenario:   mixed',
      'seed:       42',
      'verdict:    safety',
      'trace hash: abc123',
      'violations: 1',
      '  I1 (safety) two live holders of task 3 [task 3; history #10, #12]',
      'marks:      stale_lease_rejected=1, superseded=2',
      'metrics:    claims=9',
    ]);
    expect(summarise(report('pass'))).toContain('violations: none');
  });

  it('refuses an unknown scenario name with exit 64 and the nearest name', async () => {
    const result = await cli(['run', '--scenario', 'queue-ful', '--seed', '1']);
    expect(result.code).toBe(EXIT_USAGE);
    const names = listScenarios().map((entry) => entry.name).join(', ');
    expect(result.stderr).toBe(`leasehold: unknown scenario 'queue-ful' (catalogue: ${names}). Did you mean queue-full? Try: leasehold run --seed 1 --scenario queue-full`);
  });

  it('refuses a scenario file that does not exist with exit 64', async () => {
    const result = await cli(['run', '--scenario', 'scenarios/nope.json', '--seed', '1']);
    expect(result.code).toBe(EXIT_USAGE);
    expect(result.stderr).toMatch(/^leasehold: scenario file not found: scenarios\/nope\.json\. Try: /);
  });
});

describe('every command resolves --scenario the same way (sim/check/scenario-source.ts)', () => {
  it.each([
    [['check', '--scenario', 'mixd'], 'leasehold check --scenario'],
    [['run', '--scenario', 'mixd', '--seed', '7'], 'leasehold run --seed 7 --scenario'],
    [['replay', '--scenario', 'mixd', '--seed', '7'], 'leasehold replay --seed 7 --scenario'],
    [['report', '--scenario', 'mixd'], 'leasehold report --scenario'],
  ])('%j', async (argv, tryPrefix) => {
    const names = listScenarios().map((entry) => entry.name).join(', ');
    const result = await cli(argv);
    expect(result).toEqual({ code: EXIT_USAGE, stdout: '', stderr: `leasehold: unknown scenario 'mixd' (catalogue: ${names}). Did you mean mixed? Try: ${tryPrefix} mixed` });
    const notJson = await cli(argv.map((word) => (word === 'mixd' ? 'desk.yaml' : word)));
    expect(notJson).toEqual({ code: EXIT_USAGE, stdout: '', stderr: `leasehold: scenario files are JSON (a .json file), got desk.yaml. Try: ${tryPrefix} mixed` });
  });
});

describe('leasehold dispatch', () => {
  it('prints help with every command, and per command with its flags', async () => {
    const global = await cli(['--help']);
    expect(global.code).toBe(EXIT_OK);
    for (const name of COMMAND_NAMES) expect(global.stdout).toContain(`  ${name} `);
    const check = await cli(['check', '-h']);
    for (const flag of ['--scenario NAME|FILE', '--seeds N', '--seed S', '--jobs J', '--shard K/N', '--junit FILE', '--out DIR']) {
      expect(check.stdout).toContain(flag);
    }
    for (const name of COMMAND_NAMES) {
      const help = await cli(['help', name]);
      expect(help.code).toBe(EXIT_OK);
      expect(help.stdout.split('\n').at(-1)).toBe(`Example: leasehold ${COMMANDS[name].example}`);
    }
  });

  it('prints its version and those a trace depends on with --version (or -V), and nothing else on the line', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const result = await cli([flag]);
      expect(result.code).toBe(EXIT_OK);
      expect(result.stdout).toMatch(new RegExp(`^leasehold ${pkg.version.replaceAll('.', '\\.')} \\(node v\\d+\\.\\d+\\.\\d+, better-sqlite3 \\S+, SQLite \\d+\\.\\d+\\.\\d+, \\S+\\)$`));
    }
    const extra = await cli(['--version', 'check']);
    expect(extra.code).toBe(EXIT_USAGE);
    expect(extra.stdout).toBe('');
  });

  it('checks usage before any command runs', async () => {
    const result = await cli(['check', '--shard', '9/2']);
    expect(result.code).toBe(EXIT_USAGE);
    expect(result.stdout).toBe('');
  });

  it("runs each command's own module, and start through the command named by START_RUNS, with that command's defaults", async () => {
    expect(await loadCommand(toRun(parse('run', '--scenario', 'mixed', '--seed', '1')).command)).toBe(runCommandModule);
    const start = toRun(parse('start'));
    expect(await loadCommand(start.command)).toBe(checkCommand);
    expect(start.args.toJSON()).toEqual({ command: 'check', flags: { out: 'reports/latest', report: true }, positionals: [] });
    expect(Object.keys(COMMAND_LOADERS).sort()).toEqual(COMMAND_NAMES.filter((name) => name !== 'start').sort());
  });

  it("checks for the harness's packages before loading a harness command, and loads work without them", async () => {
    const nothingInstalled = (name: string): string => {
      throw Object.assign(new Error(`Cannot find module '${name}'`), { code: 'MODULE_NOT_FOUND' });
    };
    for (const command of ['check', 'merge', 'replay', 'run', 'report', 'scenarios', 'demo'] as const) {
      await expect(loadCommand(command, nothingInstalled)).rejects.toMatchObject({
        name: 'MissingDependencyError',
        message: `leasehold: leasehold ${command} needs the "zod" and "seedrandom" packages: npm install zod seedrandom`,
      });
    }
    expect(typeof (await loadCommand('work', nothingInstalled)).execute).toBe('function');
  });

  it('hands parsed arguments to a command module and returns its exit code', async () => {
    let seen: unknown;
    const standIn = { execute: async (args: ParsedArgs) => ((seen = args.toJSON()), 4) };
    const code = await runCommand(standIn, parse('check', '--seeds', '5', '--scenario', 'a', '--scenario', 'b'), collector().context);
    expect(code).toBe(4);
    expect(seen).toEqual({ command: 'check', flags: { seeds: 5, scenario: ['a', 'b'] }, positionals: [] });
  });

  it('maps a UsageError or a MissingDependencyError from a module to 64, anything else thrown to 3, and a non-exit code to 3', async () => {
    const outcome = async (execute: () => Promise<number>) => {
      const io = collector();
      const code = await runCommand({ execute }, parse('check'), io.context);
      return { code, stderr: io.stderr() };
    };
    const bad = await outcome(async () => Promise.reject(new UsageError('scenario x.json: workload.tenants is required', 'leasehold check --scenario mixed')));
    expect(bad).toEqual({ code: EXIT_USAGE, stderr: 'leasehold: scenario x.json: workload.tenants is required. Try: leasehold check --scenario mixed' });
    const crash = await outcome(async () => Promise.reject(new TypeError('db gone')));
    expect(crash.code).toBe(EXIT_HARNESS);
    expect(crash.stderr.split('\n')[0]).toBe('leasehold: harness crash in check: TypeError: db gone');
    expect(crash.stderr.split('\n').length).toBeGreaterThan(1);
    const missing = await outcome(async () => Promise.reject(new MissingDependencyError('PostgreSQL', ['pg'])));
    expect(missing).toEqual({ code: EXIT_USAGE, stderr: 'leasehold: PostgreSQL needs the "pg" package: npm install pg' });
    const nonsense = await outcome(async () => 256);
    expect(nonsense).toEqual({ code: EXIT_HARNESS, stderr: 'leasehold: harness crash: check returned 256 instead of an exit code' });
  });
});

/** The real process: exit codes as a shell sees them. All spawned at once to keep the suite fast. */
describe('leasehold as a process', () => {
  function spawnCli(argv: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', 'sim/cli/main.ts', ...argv], { cwd: REPO, timeout: 60_000 }, (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
      });
    });
  }

  it('exits 64 on bad usage with one line that says what to type, 0 on --help', async () => {
    const cases: [string[], number, RegExp][] = [
      [['chek'], EXIT_USAGE, /^leasehold: unknown command 'chek'.*Did you mean check\? Try: leasehold check --seeds 100\n$/],
      [['check', '--seeds-count', '100'], EXIT_USAGE, /^leasehold: unknown flag --seeds-count for check\. Did you mean --seeds\? Try: leasehold check --seeds 100\n$/],
      [['check', '--seeds'], EXIT_USAGE, /^leasehold: --seeds needs a value/],
      [['check', '--seeds', 'lots'], EXIT_USAGE, /^leasehold: --seeds expects a whole number/],
      [['check', '--shard', '3'], EXIT_USAGE, /^leasehold: --shard expects K\/N/],
      [['run', '--scenario', 'mixed'], EXIT_USAGE, /^leasehold: run needs --seed\. Try: leasehold run --scenario mixed --seed 42\n$/],
      [['--help'], EXIT_OK, /^$/],
    ];
    const results = await Promise.all(cases.map(([argv]) => spawnCli(argv)));
    results.forEach((result, index) => {
      const [argv, code, stderr] = cases[index] as [string[], number, RegExp];
      expect({ argv, code: result.code }).toEqual({ argv, code });
      expect(result.stderr).toMatch(stderr);
    });
    expect(results.at(-1)?.stdout).toContain('Usage: leasehold <command> [flags]');
  });

});
