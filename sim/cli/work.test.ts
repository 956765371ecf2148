/**
 * `leasehold work` (SPEC W3): its usage errors (exit 64, one line, what to type), its help, and a real
 * process that runs an agent module's tasks and drains on SIGTERM (exit 0), or stops with exit 64 when
 * the module never loads.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SystemClock } from '../../src/adapters/clock.ts';
import { openWorkQueue } from '../../src/work-queue.ts';
import { runCli } from './dispatch.ts';
import { EXIT_OK, EXIT_USAGE } from './exit-codes.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const AGENT = join(REPO, 'src', 'worker', '__test-helpers__', 'provider-agent.ts');
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-work-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A configuration file in the scratch folder; its path. */
function configFile(name: string, text: string): string {
  const file = join(scratch, name);
  writeFileSync(file, text);
  return file;
}

async function cli(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

describe('leasehold work: usage', () => {
  it.each([
    [['work', '--agent', AGENT], /^leasehold: work needs --db\. Try: leasehold work --agent \S+ --db queue\.sqlite$/],
    [['work', '--db', 'q.sqlite'], /^leasehold: work needs --agent\. Try: leasehold work --db q\.sqlite --agent agent\.mjs$/],
    [['work', '--db', ':memory:', '--agent', AGENT], /^leasehold: --db ':memory:' is private to one process/],
    [['work', '--db', 'q.sqlite', '--agent', 'missing.mjs'], /^leasehold: agent module not found: missing\.mjs\. Try: leasehold work --db queue\.sqlite --agent agent\.mjs --processes 4$/],
    [['work', '--db', 'q.sqlite', '--agent', join(REPO, 'package.json')], /^leasehold: --agent expects a module file \(\.mjs, \.js/],
    [['work', '--db', 'q.sqlite', '--agent', AGENT, '--processes', '0'], /^leasehold: --processes expects a whole number >= 1, got '0'/],
    [['work', '--db', 'q.sqlite', '--agent', AGENT, '--drain-ms', 'soon'], /^leasehold: --drain-ms expects a whole number >= 0/],
    [['work', '--db', 'q.sqlite', '--agent', AGENT, '--schema', 'x'], /^leasehold: --schema is for a postgres:\/\/ database only/],
    [['work', '--db', 'q.sqlite', '--agent', AGENT, '--proceses', '2'], /^leasehold: unknown flag --proceses for work\. Did you mean --processes\?/],
    [['work', '--db', 'q.sqlite', '--agent', AGENT, '--config', 'missing.json'], /^leasehold: --config: no configuration file at missing\.json\. Try: leasehold work/],
    [['work', '--db', 'q.sqlite', '--agent', AGENT, '--config', configFile('bad-json.json', '{ leaseMs: 1')], /^leasehold: --config \S+bad-json\.json: not JSON/],
    [['work', '--db', 'q.sqlite', '--agent', AGENT, '--config', configFile('list.json', '[1]')], /^leasehold: --config \S+list\.json: expected a JSON object of queue settings/],
    [['work', '--db', 'q.sqlite', '--agent', AGENT, '--config', configFile('ratio.json', '{"leaseMs": 20000, "heartbeatMs": 10000}')], /^leasehold: --config \S+ratio\.json: .*leaseMs/],
  ])('%j exits 64 with one line', async (argv, stderr) => {
    const result = await cli(argv);
    expect(result.code).toBe(EXIT_USAGE);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(stderr);
  });

  it('is listed by --help, with its flags under work --help', async () => {
    expect((await cli(['--help'])).stdout).toMatch(/^ {2}work +run a supervised fleet of worker processes/m);
    const help = await cli(['work', '--help']);
    expect(help.code).toBe(EXIT_OK);
    for (const flag of ['--db FILE|URL', '--agent MODULE', '--processes N', '--slots N', '--drain-ms MS']) expect(help.stdout).toContain(flag);
  });
});

describe('leasehold work: the process', () => {
  function start(argv: string[], env: NodeJS.ProcessEnv = {}) {
    const child = spawn(process.execPath, ['--import', 'tsx', 'sim/cli/main.ts', 'work', ...argv], { cwd: REPO, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    return { child, exited, output: () => ({ stdout, stderr }) };
  }

  it('runs the tasks with the agent module and drains on SIGTERM: exit 0', async () => {
    const db = join(scratch, 'queue.sqlite');
    const queue = openWorkQueue({ db, clock: new SystemClock() });
    try {
      for (let i = 0; i < 5; i++) await queue.enqueue({ tenant: 'acme', topic: `t${i}`, version: 1, priority: 1, input: { i } });
      const run = start(['--db', db, '--agent', AGENT, '--processes', '2', '--drain-ms', '5000'], { PROVIDER_DB: join(scratch, 'provider.sqlite') });
      const give = Date.now() + 120_000;
      while ((await queue.snapshot()).countsByState.done < 5) {
        if (Date.now() > give) throw new Error(`hang guard: ${JSON.stringify(run.output())}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(EXIT_OK);
      const { stdout } = run.output();
      expect(stdout).toMatch(/^supervisor: started \S+:\d+:1 \(slot 0, pid \d+\)$/m);
      expect(stdout).toMatch(/^supervisor: SIGTERM: draining$/m);
      expect(stdout.match(/^supervisor: \S+ exited \(code 0\)$/gm)).toHaveLength(2);
      expect(stdout).toMatch(/^supervisor: stopped \(stopped\): 2 start\(s\), 0 restart\(s\)/m);
    } finally {
      await queue.close();
    }
  });

  it('runs its workers with the queue configuration of --config FILE: their claims take its lease', async () => {
    const db = join(scratch, 'configured.sqlite');
    const config = configFile('workers.json', JSON.stringify({ leaseMs: 90_000, heartbeatMs: 30_000 }));
    const queue = openWorkQueue({ db, clock: new SystemClock() });
    try {
      for (let i = 0; i < 2; i++) await queue.enqueue({ tenant: 'acme', topic: `c${i}`, version: 1, priority: 1, input: { i } });
      const run = start(['--db', db, '--agent', AGENT, '--processes', '1', '--drain-ms', '5000', '--config', config], { PROVIDER_DB: join(scratch, 'provider-configured.sqlite') });
      const give = Date.now() + 120_000;
      while ((await queue.snapshot()).countsByState.done < 2) {
        if (Date.now() > give) throw new Error(`hang guard: ${JSON.stringify(run.output())}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(EXIT_OK);
      for (const id of [1, 2]) {
        const claimed = (await queue.events(id)).find((event) => event.type === 'claimed');
        expect(claimed).toBeDefined();
        expect((claimed!.data as { leaseUntil: number }).leaseUntil - claimed!.at).toBe(90_000);
      }
    } finally {
      await queue.close();
    }
  });

  it('stops with exit 64 and the module\'s error when the agent module never loads', async () => {
    const agent = join(scratch, 'not-an-agent.mjs');
    writeFileSync(agent, 'export default 42;\n');
    const run = start(['--db', join(scratch, 'other.sqlite'), '--agent', agent, '--processes', '3']);
    expect(await run.exited).toBe(EXIT_USAGE);
    expect(run.output().stderr).toMatch(/^leasehold: the agent module \S+not-an-agent\.mjs failed to load 3 time\(s\) in a row: AgentModuleError: agent module \S+: its default export is number 42, not made by defineAgent/m);
  });
});
