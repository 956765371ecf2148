/**
 * `leasehold/postgres`: the PostgreSQL store (SPEC P1-P4). `openWorkQueue({ db: 'postgres://...' })` from
 * 'leasehold' opens it as well; this entry adds the store class and its types for those who build the
 * store themselves. It needs the optional peer dependency `pg` (`npm install pg`), loaded when the first
 * store is opened on a URL: without it, opening throws MissingDependencyError naming it. A PGlite
 * database (@electric-sql/pglite, the caller's) runs the same store in-process and needs no `pg`.
 */
export { PgStore, type PgStoreOptions, type PgPoolLike, type PgliteLike } from './store/pg-store.ts';
export { ConnectionError, type ConnectionErrorCode, MissingDependencyError, OpenError } from './queue/errors.ts';
export { openWorkQueue, type OpenWorkQueueOptions } from './work-queue.ts';
