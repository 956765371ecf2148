import { z } from 'zod';
import { incarnationStates, wasPausedBefore } from '../checkers/timeline.ts';
import type { ExpectationKind } from './types.ts';
import { oneTaskOf } from './tasks.ts';

interface StaleWrite {
  kind: 'stale-write';
  /** The task's label. */
  task: string;
  /** Only writes made under this generation (the lease the writer believed it held). */
  generation?: number;
  /** Only writes by a worker that had been paused before: a zombie (S4). */
  zombie?: boolean;
  /** At least this many such refusals; default 1. */
  atLeast?: number;
}

/**
 * Q8 / I2 seen from the writer: a write to a named task (heartbeat, checkpoint, complete, fail, event
 * append, ...) was refused `stale_lease`, e.g. the zombie of seed 000's table ("the old generation comes
 * back: its write is refused"). I2 checks that a refused write left no trace; this checks that the
 * scenario really produced one.
 */
export const staleWrite: ExpectationKind<StaleWrite> = {
  kind: 'stale-write',
  class: 'liveness',
  description: 'a write to a named task (of a given generation, by a zombie) was refused stale_lease at least so many times',
  schema: z.strictObject({
    kind: z.literal('stale-write'),
    task: z.string().min(1),
    generation: z.number().int().min(1).optional(),
    zombie: z.boolean().optional(),
    atLeast: z.number().int().min(1).optional(),
  }),
  check(spec, run) {
    const id = oneTaskOf(run, spec.task);
    if (typeof id === 'string') return [id];
    const lives = spec.zombie === true ? incarnationStates(run) : undefined;
    let count = 0;
    for (const entry of run.history.entries()) {
      if (entry.type !== 'fail' || entry.reason !== 'stale_lease' || entry.taskId !== id) continue;
      if (spec.generation !== undefined && entry.generation !== spec.generation) continue;
      if (lives !== undefined && !wasPausedBefore(lives, entry.actor, entry.index)) continue;
      count++;
    }
    const atLeast = spec.atLeast ?? 1;
    if (count >= atLeast) return [];
    const which = [spec.generation === undefined ? '' : ` of generation ${spec.generation}`, spec.zombie === true ? ' by a zombie' : ''].join('');
    return [`${count} write(s)${which} to task ${id} ('${spec.task}') were refused stale_lease, expected at least ${atLeast}`];
  },
};
