import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { REPO_ROOT } from './git.ts';

export interface Versions {
  leasehold: string;
  node: string;
  betterSqlite3: string;
  sqlite: string;
  platform: string;
}

const require = createRequire(import.meta.url);

/** The versions a trace depends on, recorded in counterexample files and summaries. */
export function versions(): Versions {
  return {
    leasehold: packageVersion(join(REPO_ROOT, 'package.json')),
    node: process.version,
    betterSqlite3: packageVersion(require.resolve('better-sqlite3/package.json')),
    sqlite: sqliteVersion(),
    platform: `${process.platform}-${process.arch}`,
  };
}

function packageVersion(path: string): string {
  try {
    return String((JSON.parse(readFileSync(path, 'utf8')) as { version?: unknown }).version ?? 'unknown');
  } catch {
    return 'unknown';
  }
}

function sqliteVersion(): string {
  const db = new Database(':memory:');
  try {
    return String((db.prepare('select sqlite_version() as version').get() as { version: unknown }).version);
  } finally {
    db.close();
  }
}
