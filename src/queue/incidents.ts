import type { TaskRow } from '../store/store.ts';
import type { IncidentCandidate, IncidentContext } from './types.ts';

const KEY_FIELDS = ['brand', 'service', 'stage', 'errorCode', 'deployVersion', 'campaign'] as const;

/**
 * Q17: groups tasks whose verified context is complete by (tenant, the six context fields, time
 * bucket). Store is deliberately not in the key, so several stores of one brand meet in one group.
 * Only the latest enqueued version of each topic counts, so a corrected report replaces the old one.
 * A group is a candidate for people to look at, never a confirmed incident.
 */
export function groupIncidentCandidates(
  rows: readonly TaskRow[],
  latestVersion: (tenant: string, topic: string) => number,
  bucketMs: number,
  minGroupSize: number,
): IncidentCandidate[] {
  const groups = new Map<string, IncidentCandidate>();
  for (const row of rows) {
    if (row.context === null || latestVersion(row.tenant, row.topic) !== row.version) continue;
    const context = JSON.parse(row.context) as IncidentContext;
    if (!KEY_FIELDS.every((field) => isKnown(context[field]))) continue;
    const bucketStart = Math.floor(row.enqueued_at / bucketMs) * bucketMs;
    // The tenant leads the key, so no group can span tenants (Q17, I13).
    const key = JSON.stringify([row.tenant, ...KEY_FIELDS.map((field) => context[field]), bucketStart]);
    let group = groups.get(key);
    if (group === undefined) {
      group = {
        tenant: row.tenant,
        brand: context.brand as string,
        service: context.service as string,
        stage: context.stage as string,
        errorCode: context.errorCode as string,
        deployVersion: context.deployVersion as string,
        campaign: context.campaign as string,
        bucketStart,
        taskIds: [],
        confirmedIncident: false,
      };
      groups.set(key, group);
    }
    group.taskIds.push(row.id);
  }
  return [...groups.values()].filter((group) => group.taskIds.length >= minGroupSize);
}

function isKnown(value: string | undefined): value is string {
  return typeof value === 'string' && value.trim() !== '' && value.trim().toLowerCase() !== 'unknown';
}
