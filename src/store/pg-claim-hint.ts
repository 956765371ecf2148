import { PgStatements, ROW_CHANGED, type PgQuery, type PgQueryConfig, type PgResult } from './pg-statements.ts';
import type { ReadsFirst } from './store.ts';

/**
 * W1 on PostgreSQL: a claim hint, so that an idle worker woken by an enqueue claims in one round trip.
 *
 * A claim on PostgreSQL is two round trips: the first takes the queue lock and reads what the claim
 * decides on (ReadsFirst.claim: the holders, the paused tenants, every ready tenant's head and the row
 * of the likely pick), the second sends its writes with COMMIT. On an idle fleet a new task waits for
 * both, after the enqueue's own two. But the enqueue holds the same lock, and right before its COMMIT
 * the state it leaves is exactly what the next claim will read unless someone writes in between. So
 * an enqueue that leaves its task the only ready one computes those reads itself (the same statements,
 * as JSON, with a digest of them) and sends them in its notice's payload (pg_notify). A worker woken by
 * it answers its claim's first reads from the snapshot and sends one round trip: BEGIN, the lock, a check
 * that the same reads under the lock give the same digest, its writes, COMMIT. A changed state fails
 * the check (the marker ROW_CHANGED, as a holder's call that read its row before the lock): nothing is
 * written and the claim runs again the usual way. So the claim decides on what holds under the lock, as
 * every claim does; only its clock is read before the lock (at most one lock wait early, as for a
 * holder's call: it judges no lease expired that a locked read would not).
 *
 * The snapshot is a hint and nothing more: a worker that never gets one (a lost notice, a payload over
 * PostgreSQL's 8000 bytes, a backlog already there, another process's settings) claims as before.
 * The store that committed the enqueue keeps the snapshot too (a worker in the same process, and the
 * simulator's PGlite world, use it without a notice).
 */

/** A claim's settings, as its first reads take them (ReadsFirst.claim). */
export type ClaimReadSettings = NonNullable<ReadsFirst['claim']>;

/** A claim's first reads as an enqueue left them: the settings and time they were made with, their rows, and their digest. */
export interface ClaimSnapshot {
  /** [time, agingCap, agingPeriodMs, perTenantLimit, tenantLimits] as the statements took them. */
  readonly settings: readonly [number, number, number, number, Readonly<Record<string, number>>];
  /** The rows of the claim's three first reads, in order (PgStatements.readsFirst). */
  readonly results: readonly PgResult[];
  readonly digest: string;
}

/** The largest snapshot sent in a notice: PostgreSQL refuses a payload of 8000 bytes or more. */
export const HINT_MAX_BYTES = 7_900;

/** The claim's first reads (PgStatements.readsFirst) for these settings at `at`: holders and pauses take no values, the heads five. */
function claimReads(settings: ClaimReadSettings, at: number): PgQueryConfig[] {
  const reads = PgStatements.readsFirst({ claim: settings }, at);
  if (reads.length !== 3 || reads[0]!.values.length !== 0 || reads[1]!.values.length !== 0 || reads[2]!.values.length !== 5) {
    throw new TypeError('a claim hint expects the claim to read first its holders, its pauses and its heads (five values)');
  }
  return reads;
}

/** `$n` becomes `$(n + by)`: a statement's parameters placed after others. */
function shifted(text: string, by: number): string {
  return text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + by}`);
}

/**
 * The three reads as JSON arrays h, p, r and their digest, with the heads' values at $(1 + by)..$(5 + by).
 * Each array keeps its statement's own order (a sorted subquery's rows go to json_agg in that order).
 * OFFSET 0 keeps each level a subquery of its own: the planner would otherwise fold it into the level
 * above and run the reads once for every reference to h, p and r there (the digest, the payload, its size).
 */
function snapshotSelect(reads: readonly PgQueryConfig[], by: number): string {
  const [holding, pauses, heads] = reads as [PgQueryConfig, PgQueryConfig, PgQueryConfig];
  return `SELECT h, p, r, md5(h::text || '|' || p::text || '|' || r::text) AS digest FROM (SELECT
            (SELECT COALESCE(json_agg(x), '[]'::json) FROM (${holding.text}) AS x) AS h,
            (SELECT COALESCE(json_agg(x), '[]'::json) FROM (${pauses.text}) AS x) AS p,
            (SELECT COALESCE(json_agg(x), '[]'::json) FROM (${shifted(heads.text, by)}) AS x) AS r OFFSET 0) AS reads`;
}

/**
 * The notice an enqueue sends with its COMMIT, in place of `NOTIFY channel, 'xid'`: pg_notify($1, $2)
 * with the snapshot appended (after a space) when this transaction leaves exactly one ready task and
 * the snapshot fits in a notice. It answers the snapshot it sent (`hint`, or null), so the store keeps it.
 */
export function notifyWithHint(channel: string, xid: string | undefined, settings: ClaimReadSettings, at: number): PgQueryConfig {
  const reads = claimReads(settings, at);
  const text = `SELECT pg_notify($1::text, $2::text || COALESCE(' ' || hinted.hint, '')) AS notified, hinted.hint FROM (
      SELECT CASE WHEN (SELECT COUNT(*) FROM (SELECT 1 FROM tasks WHERE state = 'ready' LIMIT 2) AS ready) = 1 THEN (
        SELECT CASE WHEN octet_length(t) <= ${HINT_MAX_BYTES} THEN t END FROM (
          SELECT json_build_object('s', json_build_array($3::bigint, $4::bigint, $5::bigint, $6::bigint, $7::jsonb), 'h', h, 'p', p, 'r', r, 'd', digest)::text AS t
          FROM (${snapshotSelect(reads, 2)} OFFSET 0) AS snapshot OFFSET 0) AS sized)
      END AS hint OFFSET 0) AS hinted`;
  return { name: 'leasehold_notifyClaimHint', text, values: [channel, xid ?? '', ...reads[2]!.values] };
}

/**
 * The check that goes first after the lock in a hinted claim's one round trip: the same reads, under
 * the lock, give the snapshot's digest; otherwise the transaction fails with ROW_CHANGED, nothing written.
 */
export function snapshotUnchanged(snapshot: ClaimSnapshot): PgQueryConfig {
  const [at, agingCap, agingPeriodMs, perTenantLimit, tenantLimits] = snapshot.settings;
  const reads = claimReads({ agingCap, agingPeriodMs, perTenantLimit, tenantLimits }, at);
  const text = `SELECT (CASE WHEN (SELECT digest FROM (${snapshotSelect(reads, 0)}) AS snapshot) = $6::text THEN '1' ELSE '${ROW_CHANGED}' END)::int AS unchanged`;
  return { name: 'leasehold_claimSnapshotUnchanged', text, values: [...reads[2]!.values, snapshot.digest] };
}

/** A notice's payload: the enqueue's transaction id (PgListener's choice of who wakes first), then the snapshot if there is one. */
export function splitPayload(payload: string | undefined): { xid: string | undefined; hint: string | undefined } {
  if (payload === undefined || payload === '') return { xid: undefined, hint: undefined };
  const space = payload.indexOf(' ');
  return space < 0 ? { xid: payload, hint: undefined } : { xid: payload.slice(0, space), hint: payload.slice(space + 1) };
}

/** The snapshot a notice carried, or undefined for anything that is not one (a hint is never trusted to be well formed). */
export function parseSnapshot(text: string | undefined | null): ClaimSnapshot | undefined {
  if (typeof text !== 'string') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const { s, h, p, r, d } = (value ?? {}) as Record<string, unknown>;
  if (!Array.isArray(s) || s.length !== 5 || !s.slice(0, 4).every((n) => typeof n === 'number' && Number.isSafeInteger(n))) return undefined;
  if (typeof s[4] !== 'object' || s[4] === null || Array.isArray(s[4])) return undefined;
  if (!Array.isArray(h) || !Array.isArray(p) || !Array.isArray(r) || typeof d !== 'string' || !/^[0-9a-f]{32}$/.test(d)) return undefined;
  const rows = (list: unknown[]): PgResult | undefined =>
    list.every((row) => typeof row === 'object' && row !== null && !Array.isArray(row)) ? { rows: list as Record<string, unknown>[], rowCount: list.length } : undefined;
  const results = [rows(h), rows(p), rows(r)];
  if (results.some((result) => result === undefined)) return undefined;
  return { settings: s as unknown as ClaimSnapshot['settings'], results: results as PgResult[], digest: d };
}

/**
 * A runner whose first round trip begins the transaction: `leader` (BEGIN and what goes with it, the
 * last of it a SELECT of the transaction's id as `xid`) leads whatever is sent first, prepared as
 * prepareIn does for a leader's batch. Later calls go straight through. `xid` is known once the first
 * round trip has answered.
 */
export class LeadingRunner implements PgQuery {
  private leader: string | undefined;
  xid: string | undefined;

  constructor(
    private readonly inner: PgQuery,
    leader: string,
    private readonly setPath: string,
  ) {
    this.leader = leader;
  }

  /** Whether the leader has not been sent yet. */
  get unsent(): boolean {
    return this.leader !== undefined;
  }

  async query(config: PgQueryConfig): Promise<PgResult> {
    if (this.leader === undefined) return this.inner.query(config);
    // A statement without a name is transaction control (a SAVEPOINT): sent as it is.
    const batched = config.name === undefined ? { ...config, control: true as const } : config;
    return (await this.batch([batched]))[0]!;
  }

  async batch(configs: readonly PgQueryConfig[], trailer?: string, leader?: string): Promise<PgResult[]> {
    if (this.leader === undefined) return this.inner.batch(configs, trailer, leader);
    if (leader !== undefined) throw new TypeError('a leading runner already begins the transaction');
    const begin = this.leader;
    this.leader = undefined;
    const prepared = configs.filter((config) => config.control !== true);
    if (prepared.length > 0) await this.inner.prepareIn(prepared, this.setPath);
    const results = await this.inner.batch(configs, trailer, begin);
    // The leader's results come first; its last is the transaction's id.
    const at = results.findIndex((result) => result.rows[0] !== undefined && 'xid' in result.rows[0]);
    if (at < 0) throw new TypeError('a leading runner found no xid in the answer to its leader');
    const xid = results[at]!.rows[0]!.xid;
    this.xid = xid === null || xid === undefined ? undefined : String(xid);
    return results.slice(at + 1, at + 1 + configs.length);
  }

  prepareIn(configs: readonly PgQueryConfig[], setPath: string): Promise<void> {
    return this.inner.prepareIn(configs, setPath);
  }
}
