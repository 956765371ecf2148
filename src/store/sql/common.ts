/** What several tables' statements share (sql/). */

/**
 * The order of the holding index (tenant, lease_until, state, generation, worker_id, hold_state, then
 * the row): SQLite's walk of it, which a PostgreSQL text that must answer in the same order spells out.
 */
export const HOLDING_ORDER = 'tenant, lease_until, state, generation, worker_id, hold_state NULLS FIRST, id';
