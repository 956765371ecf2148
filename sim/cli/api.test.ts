import { afterEach, describe, expect, it, vi } from 'vitest';
import pkg from '../../package.json' with { type: 'json' };
import { InputError } from '../../src/queue/errors.ts';
import { EXIT_OK, EXIT_USAGE, runCli } from './api.ts';

function collector() {
  const out: string[] = [];
  const err: string[] = [];
  return { output: { out: (text: string) => void out.push(text), err: (text: string) => void err.push(text) }, out, err };
}

afterEach(() => vi.restoreAllMocks());

describe('leasehold/cli', () => {
  it('runs a command in this process and resolves to its exit code, its lines to the output given', async () => {
    const version = collector();
    expect(await runCli(['--version'], version.output)).toBe(EXIT_OK);
    expect(version.out.join('\n')).toMatch(new RegExp(`^leasehold ${pkg.version.replaceAll('.', '\\.')} \\(node `));
    const scenarios = collector();
    expect(await runCli(['scenarios'], scenarios.output)).toBe(EXIT_OK);
    expect(scenarios.out.join('\n')).toMatch(/^mixed\b/m);
  });

  it('resolves bad usage to EXIT_USAGE with the one-line message, as the command does', async () => {
    const io = collector();
    expect(await runCli(['check', '--shard', '9/2'], io.output)).toBe(EXIT_USAGE);
    expect(io.out).toEqual([]);
    expect(io.err.join('\n')).toMatch(/^leasehold: /);
  });

  it('writes to standard output and standard error by default', async () => {
    const written: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => (written.push(String(chunk)), true));
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => (written.push(`stderr: ${String(chunk)}`), true));
    expect(await runCli(['--help'])).toBe(EXIT_OK);
    expect(await runCli(['no-such-command'])).toBe(EXIT_USAGE);
    vi.restoreAllMocks();
    expect(written.some((chunk) => /^Usage: leasehold|leasehold check/m.test(chunk))).toBe(true);
    expect(written.some((chunk) => chunk.startsWith('stderr: leasehold: '))).toBe(true);
  });

  it('rejects an argv or an output of the wrong shape with InputError', async () => {
    await expect(runCli('check' as never)).rejects.toMatchObject({ name: 'InputError', field: 'argv' });
    await expect(runCli(['check', 5] as never)).rejects.toBeInstanceOf(InputError);
    await expect(runCli(['--version'], { out: () => undefined } as never)).rejects.toMatchObject({ field: 'output' });
    await expect(runCli(['--version'], null as never)).rejects.toMatchObject({ field: 'output' });
  });
});
