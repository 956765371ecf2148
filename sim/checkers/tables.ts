import type { AppliedMigration, CreditEntry } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';

/**
 * Issue 15 item 5: every table the core writes is read by at least one checker. This file is the
 * registry: which WorldResult field carries each table of the migrated schema (src/store/migrations.ts)
 * into a finished run, and which checkers read it there. tables.test.ts derives the table list from the
 * real schema (sqlite_master of a queue opened on ':memory:') and fails for a table no checker reads.
 */

/**
 * The two fields added for this registry: `creditLedger` from `WorkQueue.creditLedger()` (table
 * credit_ledger) and `schemaMigrations` from `WorkQueue.schemaMigrations()` (table schema_migrations).
 * The world exports both (sim/world.ts `finish`); a result built by hand without them (an older
 * counterexample's, a test's) makes the rules that need them skip, and tables.test.ts fails if a real
 * run stops exporting either.
 */
export interface AuditFields {
  creditLedger?: CreditEntry[];
  schemaMigrations?: AppliedMigration[];
}

/**
 * Issue 16's tables (budget_levels, reservations, tenant_pauses, admission_decisions) come in through
 * WorldResult's optional fields of the same names (sim/world.ts `finish`); a result without them (an
 * older counterexample) makes the rules that need them skip, as for the audit fields above.
 */

export type AuditedWorld = WorldResult & AuditFields;

/** The audit fields of a run, when its world exported them. */
export function auditOf(world: WorldResult): AuditFields {
  return world as AuditedWorld;
}

export interface TableReader {
  /** The WorldResult field (dotted path) that carries the table's rows into the run. */
  field: string;
  /** The WorkQueue method the world reads it with. */
  method: string;
  /** The checkers (by invariant id as in allCheckers) with a rule over that field. */
  checkers: readonly string[];
  /** What the checkers hold the table to. */
  rules: string;
}

export const TABLE_READERS: Readonly<Record<string, TableReader>> = {
  tasks: {
    field: 'final.tasks',
    method: 'snapshot()',
    checkers: ['I6', 'I7', 'I9', 'I11'],
    rules: 'final attempts and deliveries in bounds (I6); one hold per task of its tier (I7); one task per key (I9); final state = state its log ends in, every accepted task exists and drained tasks are terminal (I11)',
  },
  events: {
    field: 'events',
    method: 'allEvents()',
    checkers: ['I2', 'I3', 'I4', 'I5', 'I10', 'I11', 'I12', 'I13', 'I21'],
    rules: 'the commit-order log every timeline replay reads (quotas, capacity, claims, supersede, contiguity, uncertain, isolation); every tool_result of a graph call backed by a recorded answer or the ledger (I21)',
  },
  rejections: {
    field: 'final.rejections',
    method: 'snapshot()',
    checkers: ['I4'],
    rules: 'every refused enqueue recorded once, and nothing recorded that was not refused',
  },
  counters: {
    field: 'final.live',
    method: 'snapshot() (liveCount())',
    checkers: ['I4'],
    rules: 'the kept live counter equals the ready + running + uncertain tasks of the final database',
  },
  checkpoints: {
    field: 'checkpoints',
    method: 'lastCheckpoint(taskId) per task',
    checkers: ['I2', 'I7', 'I13', 'I21'],
    rules: 'no checkpoint of a stale generation (I2); charged = checkpointed usage (I7); no checkpoint names another tenant (I13); each graph step\'s recorded outcomes agree with its graph (I21)',
  },
  credit_ledger: {
    field: 'creditLedger',
    method: 'creditLedger()',
    checkers: ['I7'],
    rules: 'one ledger row per closed hold and none for an open one: charge for settled, release for released, its credits, tenant and time',
  },
  effects: {
    field: 'effects',
    method: 'effects()',
    checkers: ['I2', 'I8', 'I13'],
    rules: 'no ledger row of a stale generation (I2); every acknowledged effect in the ledger, once per key (I8); tenant of its task (I13)',
  },
  dead_letters: {
    field: 'deadLetters',
    method: 'deadLetters()',
    checkers: ['I6', 'I13'],
    rules: 'every exhausted task dead-lettered with its reasons, and only those (I6); tenant of its task (I13)',
  },
  schema_migrations: {
    field: 'schemaMigrations',
    method: 'schemaMigrations()',
    checkers: ['I11'],
    rules: 'the run ends on a database migrated once to the latest version (versions 1..n with no gap, applied in one transaction): no reopen found an empty or half-migrated schema',
  },
  budget_levels: {
    field: 'budgetLevels',
    method: 'budgetLevels() (read at budgetLevelsAt)',
    checkers: ['I15'],
    rules: 'each row equals the replay of the log: concurrency units held, total units used, a rate bucket exactly in integers (scaled by periodMs, full at its first grant, refilled to the read), the same updatedAt; a row for every bucket the log moved and no other',
  },
  reservations: {
    field: 'reservations',
    method: 'reservations()',
    checkers: ['I16'],
    rules: 'one row per (task, generation, budget), reserved = what the log granted that attempt, released rows balance (reserved = consumed + released), released once as the log says, none held without a slot or by an older generation (I16); none held after a drained run (I16 liveness)',
  },
  tenant_pauses: {
    field: 'pausedTenants',
    method: 'pausedTenants()',
    checkers: ['I17'],
    rules: 'exactly the tenants whose last PAUSE/RESUME decision is a PAUSE, with its reason and instant; a tenant the history last paused is recorded paused',
  },
  signal_counters: {
    field: 'history',
    method: "signals() (the monitor's recorded answers)",
    checkers: ['I22'],
    rules: 'each counter a read reports equals its recomputation at the read: RUN = claims, DEFER = deferrals in the log, retries = retry_scheduled by error class (exact); REJECT, PAUSE, RESUME and rejections between the rows recorded before the read and at its instant',
  },
  admission_decisions: {
    field: 'admissionDecisions',
    method: 'admissionDecisions()',
    checkers: ['I17', 'I20'],
    rules: 'PAUSE/RESUME rows place pauses the history cannot (I17); every decision has a reason from the SPEC set, every rejection its REJECT and back, every DEFER its deferral in the log and back, retryAt not before the decision (I20)',
  },
  tenant_service: {
    field: 'tenantServices',
    method: 'tenantServices()',
    checkers: ['I19'],
    rules: "under fair share each tenant's row equals the judge's own books (claims' token reservations, corrected to checkpointed tokens at each freeing edge, raised on return from idle); no row for a tenant the books never charged",
  },
};

/** The tables of `schema` that no checker in `checkers` is declared to read. */
export function unreadTables(schema: readonly string[], registry: Readonly<Record<string, TableReader>>, checkers: readonly string[]): string[] {
  const known = new Set(checkers);
  return schema.filter((table) => {
    const reader = registry[table];
    return reader === undefined || reader.checkers.length === 0 || !reader.checkers.every((id) => known.has(id));
  });
}
