/**
 * The optional peer dependencies (package.json peerDependenciesMeta), loaded on first use: `pg` for
 * PostgreSQL, `prom-client` for Prometheus text, `@electric-sql/pglite` for the simulator's PostgreSQL,
 * `zod` and `seedrandom` for the harness. `import 'leasehold'` loads none of them, so a SQLite user
 * installs better-sqlite3 and nothing else; a feature that needs one loads it when first used, and when
 * it is not installed throws MissingDependencyError (src/queue/errors.ts) naming the package and the
 * command that installs it.
 */
import { createRequire } from 'node:module';
import { MissingDependencyError } from './queue/errors.ts';

/** A synchronous loader: Node's require (for CommonJS packages such as pg). Tests pass their own. */
export type Requirer = (specifier: string) => unknown;
/** An asynchronous loader: dynamic import. Tests pass their own. */
export type Importer = (specifier: string) => Promise<unknown>;
/** Where a package resolves to, or a throw when it cannot be found. */
export type Resolver = (specifier: string) => string;

const nodeRequire = createRequire(import.meta.url);
const nodeImport: Importer = (specifier) => import(specifier);
const nodeResolve: Resolver = (specifier) => nodeRequire.resolve(specifier);

/**
 * Whether `error`, thrown by require, import or resolve, says that `packageName` itself is not installed
 * (Node's MODULE_NOT_FOUND or ERR_MODULE_NOT_FOUND naming it), rather than that something it loads is
 * missing or broken: only the first is answered with MissingDependencyError.
 */
export function isMissingPackage(error: unknown, packageName: string): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND') return false;
  return typeof message === 'string' && (message.includes(`'${packageName}'`) || message.includes(`"${packageName}"`));
}

/** Loads `packageName` with require (synchronously); MissingDependencyError for `feature` when it is not installed. */
export function requireOptional<T>(packageName: string, feature: string, load: Requirer = nodeRequire): T {
  try {
    return load(packageName) as T;
  } catch (error) {
    if (isMissingPackage(error, packageName)) throw new MissingDependencyError(feature, [packageName], { cause: error });
    throw error;
  }
}

/** Loads `packageName` with a dynamic import; rejects with MissingDependencyError for `feature` when it is not installed. */
export async function importOptional<T>(packageName: string, feature: string, load: Importer = nodeImport): Promise<T> {
  try {
    return (await load(packageName)) as T;
  } catch (error) {
    if (isMissingPackage(error, packageName)) throw new MissingDependencyError(feature, [packageName], { cause: error });
    throw error;
  }
}

/**
 * Checks, without loading them, that every package of `packageNames` is installed where leasehold can
 * load it; throws one MissingDependencyError for `feature` naming all that are not (so one install
 * command fixes them all). A package that is there but refuses require (an ESM-only export map) counts
 * as installed.
 */
export function requirePackages(feature: string, packageNames: readonly string[], resolve: Resolver = nodeResolve): void {
  const missing = packageNames.filter((name) => {
    try {
      resolve(name);
      return false;
    } catch (error) {
      return isMissingPackage(error, name);
    }
  });
  if (missing.length > 0) throw new MissingDependencyError(feature, missing as [string, ...string[]]);
}
