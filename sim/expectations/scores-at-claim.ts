import { z } from 'zod';
import { claimDecisions } from '../checkers/i5-priority.ts';
import type { ExpectationKind } from './types.ts';
import { oneTaskOf } from './tasks.ts';
import { describeRange, inRange, labelsById, nameOf, numberOrRange, type NumberOrRange } from './values.ts';

interface ScoresAtClaim {
  kind: 'scores-at-claim';
  /** The label of the task whose claim is looked at. */
  claim: string;
  /** Which of its claims, from 1; default 1 (its first). */
  occurrence?: number;
  /** Label -> the aged score that task had at that instant (exact or [min, max]); each must be eligible then. */
  scores: Record<string, NumberOrRange>;
  /** Label -> how long that task had waited at that instant, in ms (exact or [min, max]). */
  waitsMs?: Record<string, NumberOrRange>;
  /** No task other than the listed ones was eligible at that instant; default false. */
  only?: boolean;
}

/**
 * The table of scores at one claim: every eligible ready task with its aged score at the instant a
 * given task was claimed, as seed 003's H1/M1/L1 table lists them. The eligible set and the scores are
 * I5's replay of the event log with the SPEC's formula (sim/checkers/spec-formulas.ts) (I5 also checks that the claim took the best
 * of them and recorded that score), so this states the table the scheduler really faced.
 */
export const scoresAtClaim: ExpectationKind<ScoresAtClaim> = {
  kind: 'scores-at-claim',
  class: 'safety',
  description: 'at the claim of a named task, the named eligible tasks had these aged scores (and waits): a priority table, checked',
  schema: z.strictObject({
    kind: z.literal('scores-at-claim'),
    claim: z.string().min(1),
    occurrence: z.number().int().min(1).optional(),
    scores: z.record(z.string().min(1), numberOrRange).refine((scores) => Object.keys(scores).length > 0, { message: 'name at least one task' }),
    waitsMs: z.record(z.string().min(1), numberOrRange).optional(),
    only: z.boolean().optional(),
  }),
  check(spec, run) {
    const id = oneTaskOf(run, spec.claim);
    if (typeof id === 'string') return [id];
    const labels = labelsById(run);
    const occurrence = spec.occurrence ?? 1;
    const decision = claimDecisions(run).filter((candidate) => candidate.event.taskId === id)[occurrence - 1];
    if (decision === undefined) return [`${nameOf(labels, id)} was claimed fewer than ${occurrence} time(s)`];
    const at = decision.event.at;
    const where = `at claim ${occurrence} of ${nameOf(labels, id)} (+${at - run.startMs} ms)`;
    const byLabel = new Map(decision.candidates.map((candidate) => [labels.get(candidate.track.id), candidate]));
    const problems: string[] = [];
    for (const [label, wanted] of Object.entries(spec.scores)) {
      const candidate = byLabel.get(label);
      if (candidate === undefined) problems.push(`${where}: '${label}' was not an eligible ready task`);
      else if (!inRange(candidate.score, wanted)) problems.push(`${where}: '${label}' scored ${candidate.score}, expected ${describeRange(wanted)}`);
    }
    for (const [label, wanted] of Object.entries(spec.waitsMs ?? {})) {
      const candidate = byLabel.get(label);
      if (candidate === undefined) problems.push(`${where}: '${label}' was not an eligible ready task`);
      else if (!inRange(at - candidate.track.enqueuedAt, wanted)) problems.push(`${where}: '${label}' had waited ${at - candidate.track.enqueuedAt} ms, expected ${describeRange(wanted)}`);
    }
    if (spec.only === true) {
      const others = decision.candidates.filter((candidate) => !Object.hasOwn(spec.scores, labels.get(candidate.track.id) ?? ''));
      if (others.length > 0) problems.push(`${where}: also eligible: ${others.map((candidate) => `${nameOf(labels, candidate.track.id)} scoring ${candidate.score}`).join(', ')}`);
    }
    return problems;
  },
};
