import { z } from 'zod';
import type { ExpectationKind } from './types.ts';
import { taskIdsOf } from './tasks.ts';
import { labelsById } from './values.ts';

interface IncidentCandidates {
  kind: 'incident-candidates';
  /** Each list of labels is exactly the members of one incident candidate. */
  groups?: string[][];
  /** Each of these labels is in no incident candidate (it is investigated on its own). */
  apart?: string[];
  /** No candidates other than `groups`; default false. */
  exact?: boolean;
}

/**
 * Q17 incident grouping, read from the queue at the end of the run (WorldResult.incidents): which
 * labels share an incident candidate (a group of two or more tasks with the same tenant, brand,
 * service, stage, error code, deploy version, campaign and 5-minute bucket) and which stand apart.
 * Every candidate must also say `confirmedIncident: false` and name tasks of its own tenant only.
 */
export const incidentCandidates: ExpectationKind<IncidentCandidates> = {
  kind: 'incident-candidates',
  class: 'safety',
  description: 'these labels form exactly one incident candidate each, these stand apart; every candidate is unconfirmed and within one tenant',
  schema: z
    .strictObject({
      kind: z.literal('incident-candidates'),
      groups: z.array(z.array(z.string().min(1)).min(2)).optional(),
      apart: z.array(z.string().min(1)).optional(),
      exact: z.boolean().optional(),
    })
    .refine((spec) => (spec.groups?.length ?? 0) + (spec.apart?.length ?? 0) > 0 || spec.exact === true, { message: 'give groups, apart, or exact: true' }),
  check(spec, run) {
    if (run.incidents === undefined) return ['this run recorded no incident grouping'];
    const labels = labelsById(run);
    const tenantOf = new Map(run.final.tasks.map((task) => [task.id, task.tenant]));
    const candidates = run.incidents.filter((group) => group.taskIds.length >= 2);
    const describe = (taskIds: readonly number[]) => taskIds.map((id) => labels.get(id) ?? `#${id}`).sort();
    const key = (members: readonly string[]) => JSON.stringify([...members].sort());
    const problems: string[] = [];
    for (const candidate of candidates) {
      const where = `candidate [${describe(candidate.taskIds).join(', ')}]`;
      if (candidate.confirmedIncident !== false) problems.push(`${where} says confirmedIncident: ${String(candidate.confirmedIncident)}`);
      const strangers = candidate.taskIds.filter((id) => tenantOf.get(id) !== candidate.tenant);
      if (strangers.length > 0) problems.push(`${where} of tenant ${candidate.tenant} names tasks of another tenant: ${strangers.join(', ')}`);
    }
    const found = new Set(candidates.map((candidate) => key(describe(candidate.taskIds))));
    const wanted = new Set((spec.groups ?? []).map((group) => key(group)));
    for (const group of spec.groups ?? []) {
      if (found.has(key(group))) continue;
      const overlapping = candidates.filter((candidate) => describe(candidate.taskIds).some((label) => group.includes(label)));
      const seen = overlapping.length === 0 ? 'none of them is in any candidate' : `candidates holding them: ${overlapping.map((candidate) => `[${describe(candidate.taskIds).join(', ')}]`).join(', ')}`;
      problems.push(`no candidate is exactly [${[...group].sort().join(', ')}]; ${seen}`);
    }
    for (const label of spec.apart ?? []) {
      const ids = new Set(taskIdsOf(run, label));
      if (ids.size === 0) {
        problems.push(`no accepted task is labelled '${label}'`);
        continue;
      }
      const holding = candidates.filter((candidate) => candidate.taskIds.some((id) => ids.has(id)));
      for (const candidate of holding) problems.push(`'${label}' should stand apart but is in candidate [${describe(candidate.taskIds).join(', ')}]`);
    }
    if (spec.exact === true) {
      for (const candidate of candidates) {
        const members = describe(candidate.taskIds);
        if (!wanted.has(key(members))) problems.push(`unexpected candidate [${members.join(', ')}] (stage ${candidate.stage}, bucket ${candidate.bucketStart})`);
      }
    }
    return problems;
  },
};
