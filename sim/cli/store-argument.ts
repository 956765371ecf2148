import type { ScenarioSpec } from '../scenario.ts';
import { requirePackages, type Resolver } from '../../src/optional-packages.ts';
import { PGLITE_FEATURE, SIM_STORES, simStoreOf, storeSkipReason, type SimStore } from '../store/pglite.ts';
import type { ParsedArgs } from './args.ts';
import { UsageError } from './usage-error.ts';

/**
 * --store: sqlite (the default) or pglite; anything else is a usage error (exit 64) naming the choices.
 * pglite needs the optional @electric-sql/pglite: checked here, before any world starts, so a missing one
 * is one MissingDependencyError (exit 64, sim/cli/dispatch.ts) rather than a crash in every check thread.
 */
export function storeArgument(args: ParsedArgs, command: string, resolve?: Resolver): SimStore {
  const raw = args.string('store');
  if (raw === undefined) return 'sqlite';
  const store = simStoreOf(raw);
  if (store === undefined) throw new UsageError(`--store expects one of ${SIM_STORES.join(', ')}, got '${raw}'`, `leasehold ${command} --store pglite`);
  if (store === 'pglite') requirePackages(PGLITE_FEATURE, ['@electric-sql/pglite'], resolve);
  return store;
}

/** A single run (run, replay) of a scenario the store cannot run is refused with its reason (exit 64), never run without its faults. */
export function requireRunnable(spec: ScenarioSpec, store: SimStore, command: string): void {
  const reason = storeSkipReason(spec, store);
  if (reason !== undefined) throw new UsageError(`scenario '${spec.name}' cannot run on ${store}: ${reason}`, `leasehold ${command} --store sqlite`);
}
