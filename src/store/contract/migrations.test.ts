/**
 * The store contract, table `schema_migrations` (Q18): migrationList, against every store kind
 * (__test-helpers__/harness.ts). Both dialects apply the same versions under the same names (their DDL differs).
 */
import { describe, expect, it } from 'vitest';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from '../migrations.ts';
import { PG_MIGRATIONS } from '../pg-migrations.ts';
import { STORE_KINDS, contractStore } from './__test-helpers__/harness.ts';

describe.each(STORE_KINDS)('migrations on %s', (kind) => {
  const db = contractStore(kind);

  describe('migrationList', () => {
    it('lists every migration applied, by version, with its name and the time the store opened at (0 here)', async () => {
      const rows = await db.read((tx) => tx.migrationList());
      expect(rows).toEqual(MIGRATIONS.map((migration) => ({ version: migration.version, name: migration.name, applied_at: 0 })));
      expect(rows.at(-1)?.version).toBe(LATEST_SCHEMA_VERSION);
    });
  });
});

describe('the migrations of both dialects', () => {
  it('are the same versions under the same names', () => {
    expect(PG_MIGRATIONS.map((migration) => [migration.version, migration.name])).toEqual(MIGRATIONS.map((migration) => [migration.version, migration.name]));
  });
});
