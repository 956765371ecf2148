import Database from 'better-sqlite3';
import { SqliteStore } from '../src/store/sqlite-store.ts';

/**
 * A migrated, empty database image, made once per process: each in-memory run starts from a copy of it
 * instead of migrating an empty database again (the queue then finds its schema current and only checks
 * it). Files (restart runs) still migrate from scratch, as production does.
 */
let migratedImage: Buffer | undefined;

export function freshMemoryDatabase(): Database.Database {
  if (migratedImage === undefined) {
    const scratch = new Database(':memory:');
    void SqliteStore.open(scratch, { busyTimeoutMs: 0, busyRetries: 0 }, () => 0).close();
    migratedImage = scratch.serialize();
    scratch.close();
  }
  return new Database(migratedImage);
}
