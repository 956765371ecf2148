/**
 * The fleet example of docs/postgresql.md ("A fleet on two hosts") runs as written (issue 19 item 6): three worker processes, two "hosts"
 * (here: two groups of processes), one PostgreSQL queue. Every seeded task ends done, claimed once,
 * and the processes' own counts add up to the queue's.
 */
import { spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { SystemClock, openWorkQueue } from '../../src/index.ts';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '..', '..');
const schemas: string[] = [];

function serverUrl(): string {
  const url = process.env.LEASEHOLD_PG_URL;
  if (url === undefined || url === '') throw new Error('LEASEHOLD_PG_URL is not set: vitest.config.ts globalSetup should have set it');
  return url;
}

async function sql(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl() });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

afterEach(async () => {
  for (const schema of schemas.splice(0)) await sql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
});

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(here, 'fleet-worker.ts'), ...args], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

describe('the fleet example (tools/examples/fleet-worker.ts)', () => {
  it('three processes on two "hosts" share one PostgreSQL queue: every task done once, the counts add up', async () => {
    const schema = `lh_fleet_${process.pid}`;
    schemas.push(schema);
    await sql(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
    const base = serverUrl();
    const db = `${base}${base.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
    const tasks = 60;
    const runs = await Promise.all([
      run(['--db', db, '--worker', 'a1', '--seed-tasks', String(tasks), '--supervise', '--idle-exit-ms', '1500']),
      run(['--db', db, '--worker', 'a2', '--idle-exit-ms', '1500']),
      run(['--db', db, '--worker', 'b1', '--idle-exit-ms', '1500']),
    ]);
    for (const result of runs) expect(result.code, result.stderr).toBe(0);
    const reports = runs.map((result) => JSON.parse(result.stdout.trim().split('\n').at(-1)!) as { worker: string; completed: number; unfinished: number });
    expect(reports.map((report) => report.unfinished)).toEqual([0, 0, 0]);
    expect(reports.reduce((sum, report) => sum + report.completed, 0)).toBe(tasks);

    const queue = openWorkQueue({ db, clock: new SystemClock() });
    try {
      const snapshot = await queue.snapshot();
      expect(snapshot.tasks).toHaveLength(tasks);
      expect(snapshot.tasks.filter((task) => task.state !== 'done')).toEqual([]);
      const claims = (await queue.allEvents()).filter((event) => event.type === 'claimed');
      expect(claims).toHaveLength(tasks);
      expect(new Set(claims.map((event) => event.taskId)).size).toBe(tasks);
    } finally {
      await queue.close();
    }
  }, 120_000);

  it('refuses bad usage with exit 64 and says what to type', async () => {
    const result = await run(['--worker', 'x', '--db', 'queue.sqlite']);
    expect(result.code).toBe(64);
    expect(result.stderr).toMatch(/usage: fleet-worker\.ts --db postgres:\/\//);
  });
});
