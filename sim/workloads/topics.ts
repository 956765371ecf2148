import type { z } from 'zod';
import type { SeededRandom } from '../random.ts';
import { list, oneOf, part, positive, probability, nonNegative, range, text, TIERS, withDefaults } from '../schema-kit.ts';
import { drawRequest, type Arrival, type ScriptDrawing } from './draw.ts';
import { needsSchema } from './admission.ts';

/**
 * Topics (seeds 000 and 002's mixed load): `count` topics, each at version 1, on the tenants in turn,
 * arriving at drawn times over the window; a topic receives a newer version (Q2) with
 * newVersionProbability, one to half a window later. Priorities, tiers and scripts are drawn per task.
 */
export const TOPICS_DEFAULTS = {
  count: 20,
  tenants: ['acme', 'globex', 'initech'],
  priorities: [0, 30] as [number, number],
  newVersionProbability: 0.2,
  arrivalWindowMs: 60_000,
  tiers: ['standard' as const],
};

export const topicsPart = part(
  'topics',
  withDefaults(
    {
      count: positive().meta({ description: 'Topics to create, each at version 1; default 20.' }),
      tenants: list(text(), 1).meta({ description: 'The tenants, in turn; default ["acme", "globex", "initech"].' }),
      priorities: range(0, 30).meta({ description: 'Base priorities, drawn per task from [min, max]; default [0, 30].' }),
      newVersionProbability: probability().meta({ description: 'Probability that a topic later receives a newer version (Q2); default 0.2.' }),
      arrivalWindowMs: nonNegative().meta({ description: 'Arrivals are spread uniformly over this window from the start; default 60000.' }),
      tiers: list(oneOf(TIERS), 1).meta({ description: 'Each task picks one, uniformly (repeat one to weight it); default ["standard"].' }),
      needs: needsSchema.optional(),
      criticalProbability: probability()
        .optional()
        .meta({ description: 'A2: probability that a task is critical work, drawn per task from a stream of its own (absent: none is, and nothing is drawn).' }),
    },
    TOPICS_DEFAULTS,
  ),
  'Topics spread over the tenants and over a window of arrivals, some of which get a newer version.',
);
export type TopicsPart = z.output<typeof topicsPart>;

export function drawTopics(random: SeededRandom, part: TopicsPart, scripts: ScriptDrawing): Arrival[] {
  const arrivals: Arrival[] = [];
  const drawing = { priorities: part.priorities, tiers: part.tiers, scripts };
  for (let topic = 1; topic <= part.count; topic++) {
    const tenant = part.tenants[(topic - 1) % part.tenants.length]!;
    const versions = random.chance(part.newVersionProbability) ? 2 : 1;
    let atMs = random.int(0, part.arrivalWindowMs);
    for (let version = 1; version <= versions; version++) {
      arrivals.push({ atMs, request: drawRequest(random, drawing, tenant, `topic-${topic}`, version) });
      atMs += random.int(1_000, Math.max(1_000, Math.floor(part.arrivalWindowMs / 2)));
    }
  }
  return arrivals.sort((a, b) => a.atMs - b.atMs);
}
