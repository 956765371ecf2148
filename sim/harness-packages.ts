import { requirePackages, type Resolver } from '../src/optional-packages.ts';

/**
 * The packages the simulation harness needs beyond leasehold's own dependencies: optional peer
 * dependencies (package.json), so a user of the queue alone does not install them. The harness's
 * entries (the CLI's harness commands, sim/cli/dispatch.ts; `leasehold/testing`, sim/testing.ts) check
 * for them before loading anything that imports them.
 */
export const HARNESS_PACKAGES: readonly string[] = Object.freeze(['zod', 'seedrandom']);

/** Throws one MissingDependencyError for `feature` naming every harness package that is not installed. */
export function requireHarnessPackages(feature: string, resolve?: Resolver): void {
  requirePackages(feature, HARNESS_PACKAGES, resolve);
}
