import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { startThrowawayPostgres } from './__test-helpers__/throwaway-postgres.ts';

describe('the PostgreSQL server of the test run (SPEC P5)', () => {
  it('is reachable at LEASEHOLD_PG_URL, set by .ci/run or by the global setup\'s throwaway server', async () => {
    const url = process.env.LEASEHOLD_PG_URL;
    expect(url, 'pg-global-setup.ts sets LEASEHOLD_PG_URL when it is not given').toMatch(/^postgres(ql)?:\/\//);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await client.end();
    }
  });

  it('starts a throwaway server of its own (as root, it runs as postgres), which survives a restart with its data', async () => {
    const server = await startThrowawayPostgres();
    try {
      const query = async (sql: string) => {
        const client = new pg.Client({ connectionString: server.url });
        await client.connect();
        try {
          return (await client.query(sql)).rows;
        } finally {
          await client.end();
        }
      };
      await query('CREATE TABLE kept (n INTEGER); INSERT INTO kept VALUES (7)');
      await server.restart();
      expect(await query('SELECT n FROM kept')).toEqual([{ n: 7 }]);
    } finally {
      await server.stop();
    }
  });
});
