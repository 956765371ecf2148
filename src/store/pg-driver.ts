import type * as Pg from 'pg';
import { requireOptional, type Requirer } from '../optional-packages.ts';

/** The `pg` module (node-postgres), as its own types describe it. */
export type PgModule = typeof Pg;

let driver: PgModule | undefined;

/**
 * `pg`, loaded on first use: by the first PostgreSQL store opened on a URL, or the first query through a
 * pool passed in (its type parsers). Never by `import 'leasehold'`, so a SQLite user need not install it;
 * when it is missing this throws MissingDependencyError naming it. Loaded with require, so opening stays
 * synchronous (P2: a malformed URL, or a missing driver, is refused by openWorkQueue itself).
 */
export function pgDriver(load?: Requirer): PgModule {
  driver ??= requireOptional<PgModule>('pg', 'PostgreSQL', load);
  return driver;
}
