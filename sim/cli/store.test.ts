/**
 * `--store` (SPEC P6) as real processes: `leasehold check --store pglite` runs the PostgreSQL store's own
 * SQL on PGlite in its worker threads and says so in its output, summary.json and JUnit report; an
 * unknown store is bad usage (exit 64) naming the choices.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parseCommandLine } from './args.ts';
import { EXIT_OK, EXIT_USAGE } from './exit-codes.ts';
import { storeArgument } from './store-argument.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const TSX_CLI = join(REPO, 'node_modules', 'tsx', 'dist', 'cli.mjs');
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-store-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function leasehold(argv: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [TSX_CLI, join(REPO, 'sim/cli/main.ts'), ...argv], { cwd: REPO, timeout: 600_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

describe('leasehold --store', () => {
  it('check --store pglite --scenario mixed --seeds 3 exits 0 and reports the store', async () => {
    const out = join(scratch, 'pglite');
    const result = await leasehold(['check', '--store', 'pglite', '--scenario', 'mixed', '--scenario', 'io-errors', '--seeds', '3', '--seed', 'store-test-1', '--jobs', '1', '--out', out, '--junit', join(out, 'junit.xml')]);
    expect(result.stderr).not.toMatch(/harness crash/);
    expect(result.code).toBe(EXIT_OK);
    expect(result.stdout).toContain("store: pglite (the PostgreSQL store's own SQL, in-process on PGlite)");
    expect(result.stdout).toContain('rerun: leasehold check --scenario mixed --scenario io-errors --seeds 3 --seed store-test-1 --store pglite');
    expect(result.stdout).toMatch(/^mixed\s+3\s+3\s+0\s+0\s+0\s/m);
    expect(result.stdout).toMatch(/skipped: io-errors: its fault plan needs io-error/);
    expect(result.stdout).toContain('unseed check (S6): 1 seed(s) run twice, every trace hash equal');
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as { store: string; skipped: { scenario: string }[]; total: { seeds: number } };
    expect(summary).toMatchObject({ store: 'pglite', skipped: [{ scenario: 'io-errors' }], total: { seeds: 3 } });
    const junit = readFileSync(join(out, 'junit.xml'), 'utf8');
    expect(junit).toContain('<property name="store" value="pglite"/>');
    expect(junit).toMatch(/<testsuite name="io-errors" tests="1" failures="0" errors="0" skipped="1"/);
  });

  it('exits 64 on an unknown store, for check, run and replay', async () => {
    const cases = [
      ['check', '--store', 'foo', '--scenario', 'mixed', '--seeds', '1'],
      ['run', '--store', 'foo', '--scenario', 'mixed', '--seed', '1'],
      ['replay', '--store', 'foo', '--scenario', 'mixed', '--seed', '1'],
    ];
    const results = await Promise.all(cases.map((argv) => leasehold(argv)));
    for (const result of results) {
      expect(result.code).toBe(EXIT_USAGE);
      expect(result.stderr).toMatch(/^leasehold: --store expects one of sqlite, pglite, got 'foo'\. Try: leasehold /);
    }
  });

  it('refuses to run a scenario on pglite whose plan needs a fault beneath SQLite (exit 64, with the reason)', async () => {
    const result = await leasehold(['run', '--store', 'pglite', '--scenario', 'io-errors', '--seed', '1']);
    expect(result.code).toBe(EXIT_USAGE);
    expect(result.stderr).toMatch(/scenario 'io-errors' cannot run on pglite: its fault plan needs io-error/);
  });

  it('checks for @electric-sql/pglite (an optional package) when --store pglite is given, and only then', () => {
    const parsed = parseCommandLine(['check', '--store', 'pglite']);
    const sqlite = parseCommandLine(['check']);
    if (parsed.kind !== 'command' || sqlite.kind !== 'command') throw new Error('expected commands');
    const missing = (name: string): string => {
      throw Object.assign(new Error(`Cannot find module '${name}'`), { code: 'MODULE_NOT_FOUND' });
    };
    expect(() => storeArgument(parsed.args, 'check', missing)).toThrow(
      `leasehold: the simulator's PostgreSQL store (--store pglite) needs the "@electric-sql/pglite" package: npm install @electric-sql/pglite`,
    );
    expect(storeArgument(sqlite.args, 'check', missing)).toBe('sqlite');
    expect(storeArgument(parsed.args, 'check')).toBe('pglite');
  });
});
