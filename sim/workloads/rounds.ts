import type { z } from 'zod';
import type { TaskScript } from '../actors/scripted-model.ts';
import type { SeededRandom } from '../random.ts';
import { list, nonNegative, oneOf, part, positive, probability, range, strict, text, TIERS, withDefaults } from '../schema-kit.ts';
import { drawRequest, type Arrival, type ScriptDrawing } from './draw.ts';
import { needsSchema } from './admission.ts';
import { TOPICS_DEFAULTS } from './topics.ts';

/**
 * Rounds (seed 002's load): tasksPerRound tasks arrive together at the start of each round, everyMs
 * apart, each on its own topic, the tenants in turn; exactly poisonTasks of them, chosen per seed, are
 * poison (R6). Per-round faults (faults/rounds.ts) hit one worker each round.
 */
export interface RoundsSpec {
  count: number;
  everyMs: number;
  tasksPerRound: number;
}

const roundsFields = {
  count: positive().meta({ description: 'How many rounds.' }),
  everyMs: positive().meta({ description: 'A round starts every everyMs, the first at 0.' }),
  tasksPerRound: positive().meta({ description: 'Tasks that arrive together at the start of each round; default 3.' }),
};

/** The explicit form's `workload.rounds`, before parts (workloads/legacy.ts). */
export const roundsSchema = strict(roundsFields, 'Tasks arrive in rounds: tasksPerRound tasks together every everyMs.');

export const roundsPart = part(
  'rounds',
  withDefaults(
    {
      ...roundsFields,
      tenants: list(text(), 1).meta({ description: 'The tenants, in turn; default ["acme", "globex", "initech"].' }),
      priorities: range(0, 30).meta({ description: 'Base priorities, drawn per task from [min, max]; default [0, 30].' }),
      tiers: list(oneOf(TIERS), 1).meta({ description: 'Each task picks one, uniformly; default ["standard"].' }),
      poisonTasks: nonNegative().meta({ description: 'Exactly this many tasks of the whole run, chosen per seed, are poison: they kill their worker every time (R6); default 0.' }),
      needs: needsSchema.optional(),
      criticalProbability: probability()
        .optional()
        .meta({ description: 'A2: probability that a task is critical work, drawn per task from a stream of its own (absent: none is, and nothing is drawn).' }),
    },
    { tasksPerRound: 3, tenants: TOPICS_DEFAULTS.tenants, priorities: TOPICS_DEFAULTS.priorities, tiers: TOPICS_DEFAULTS.tiers, poisonTasks: 0 },
  ),
  'Rounds of tasks submitted together (seed 002), each task on its own topic.',
).superRefine((rounds, context) => {
  const total = rounds.count * rounds.tasksPerRound;
  if (rounds.poisonTasks > total) context.addIssue({ code: 'custom', path: ['poisonTasks'], message: `exceeds the ${total} tasks of the rounds` });
});
export type RoundsPart = z.output<typeof roundsPart>;

/** The poison tasks, if any, are chosen from the whole run before anything else is drawn. */
export function drawRounds(random: SeededRandom, rounds: RoundsPart, scripts: ScriptDrawing): Arrival[] {
  const total = rounds.count * rounds.tasksPerRound;
  const poisonCount = rounds.poisonTasks;
  const drawing = { priorities: rounds.priorities, tiers: rounds.tiers, scripts };
  if (poisonCount > total) throw new RangeError(`poisonTasks ${poisonCount} exceeds the ${total} tasks of the rounds`);
  const poison = new Set(random.shuffle([...Array(total).keys()]).slice(0, poisonCount));
  const arrivals: Arrival[] = [];
  for (let round = 0; round < rounds.count; round++) {
    for (let index = 0; index < rounds.tasksPerRound; index++) {
      const number = round * rounds.tasksPerRound + index;
      const tenant = rounds.tenants[number % rounds.tenants.length]!;
      const request = drawRequest(random, drawing, tenant, `round-${round + 1}-task-${index + 1}`, 1);
      if (poison.has(number)) (request.input as { script: TaskScript }).script.poison = true;
      arrivals.push({ atMs: round * rounds.everyMs, request });
    }
  }
  return arrivals;
}
