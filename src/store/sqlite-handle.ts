/**
 * The types of a better-sqlite3 connection, as @types/better-sqlite3 (MIT) declares them, kept here so
 * that leasehold's declarations need neither @types/better-sqlite3 nor the @types/node it brings: a
 * strict TypeScript consumer of the SQLite store compiles with nothing installed beyond leasehold (the
 * runtime needs better-sqlite3 itself, a dependency). A better-sqlite3 Database is a SqliteDatabase, and
 * the other way round: the two are the same shape.
 */

/** Node's Buffer where @types/node declares it (so the two types stay one shape), else the Uint8Array a Buffer is. */
type NodeBuffer = typeof globalThis extends { Buffer: { prototype: infer B } } ? B : Uint8Array;

/** A prepared statement of a SqliteDatabase (better-sqlite3's Statement). */
export interface SqliteStatement<BindParameters extends unknown[] = unknown[], Result = unknown> {
  database: SqliteDatabase;
  source: string;
  reader: boolean;
  readonly: boolean;
  busy: boolean;
  run(...params: BindParameters): { changes: number; lastInsertRowid: number | bigint };
  get(...params: BindParameters): Result | undefined;
  all(...params: BindParameters): Result[];
  iterate(...params: BindParameters): IterableIterator<Result>;
  pluck(toggleState?: boolean): this;
  expand(toggleState?: boolean): this;
  raw(toggleState?: boolean): this;
  bind(...params: BindParameters): this;
  columns(): { name: string; column: string | null; table: string | null; database: string | null; type: string | null }[];
  safeIntegers(toggleState?: boolean): this;
}

/* eslint-disable @typescript-eslint/no-explicit-any -- as @types/better-sqlite3 declares them */
type VariableArgFunction = (...params: any[]) => unknown;
type ArgumentTypes<F extends VariableArgFunction> = F extends (...args: infer A) => unknown ? A : never;

/** A function run in a transaction (better-sqlite3's Transaction). */
export interface SqliteTransaction<F extends VariableArgFunction> {
  (...params: ArgumentTypes<F>): ReturnType<F>;
  default(...params: ArgumentTypes<F>): ReturnType<F>;
  deferred(...params: ArgumentTypes<F>): ReturnType<F>;
  immediate(...params: ArgumentTypes<F>): ReturnType<F>;
  exclusive(...params: ArgumentTypes<F>): ReturnType<F>;
}

interface RegistrationOptions {
  varargs?: boolean | undefined;
  deterministic?: boolean | undefined;
  safeIntegers?: boolean | undefined;
  directOnly?: boolean | undefined;
}

/** A better-sqlite3 connection (`new Database(path)` from 'better-sqlite3'). */
export interface SqliteDatabase {
  memory: boolean;
  readonly: boolean;
  name: string;
  open: boolean;
  inTransaction: boolean;
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- as @types/better-sqlite3 declares it
  prepare<BindParameters extends unknown[] | {} = unknown[], Result = unknown>(
    source: string,
  ): BindParameters extends unknown[] ? SqliteStatement<BindParameters, Result> : SqliteStatement<[BindParameters], Result>;
  transaction<F extends VariableArgFunction>(fn: F): SqliteTransaction<F>;
  exec(source: string): this;
  pragma(source: string, options?: { simple?: boolean | undefined }): unknown;
  function(name: string, cb: (...params: any[]) => any): this;
  function(name: string, options: RegistrationOptions, cb: (...params: any[]) => any): this;
  aggregate<T>(
    name: string,
    options: RegistrationOptions & {
      start?: T | (() => T);
      step: (total: T, next: T extends Array<infer E> ? E : T) => T | void;
      inverse?: ((total: T, dropped: T) => T) | undefined;
      result?: ((total: T) => unknown) | undefined;
    },
  ): this;
  loadExtension(path: string): this;
  close(): this;
  defaultSafeIntegers(toggleState?: boolean): this;
  backup(destinationFile: string, options?: { progress: (info: { totalPages: number; remainingPages: number }) => number }): Promise<{ totalPages: number; remainingPages: number }>;
  table(name: string, options: { rows: (...params: unknown[]) => Generator; columns: string[]; parameters?: string[] | undefined; safeIntegers?: boolean | undefined; directOnly?: boolean | undefined }): this;
  unsafeMode(unsafe?: boolean): this;
  serialize(options?: { attached?: string }): NodeBuffer;
}
/* eslint-enable @typescript-eslint/no-explicit-any */
