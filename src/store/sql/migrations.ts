/** Table `schema_migrations`: one row per migration applied, by version (the migrations themselves are migrations.ts and pg-migrations.ts). */
import type { MigrationRow } from '../store.ts';
import type { Operations } from './runner.ts';
import { read } from './statement.ts';

export const migrationList = read('migrationList').rows<MigrationRow>('SELECT version, name, applied_at FROM schema_migrations ORDER BY version');

export const migrationOperations = {
  migrationList() {
    return this.run(migrationList, {});
  },
} satisfies Operations<'migrationList'>;
