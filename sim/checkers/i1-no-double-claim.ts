import type { WorldResult } from '../world.ts';
import { analyse, authorOf, rolledBack, ViolationList } from './timeline.ts';
import type { Checker } from './types.ts';

/**
 * I1: never two live holders of one task; generations strictly increase per task.
 *
 * Rules, over the event log in commit order and the history of claims:
 * - the k-th `claimed` event of a task grants generation k (1, 2, 3, ...), and its author columns agree
 *   with its data;
 * - a claim only takes a task that was `ready` just before it: the previous holder's run had already
 *   left `running` (completed, failed, retried, or expired to uncertain and then confirmed);
 * - every successful claim in the history matches exactly one `claimed` event (same task, generation and
 *   worker) and the other way round, and no (task, generation) was handed out twice. A claim a power loss
 *   rolled back (timeline.ts `rolledBack`) left no event and its generation is handed out again: it is
 *   left out (its worker died with the host), while the log's own rules above still hold across the cut.
 */
export const i1NoDoubleClaim: Checker = {
  invariant: 'I1',
  kind: 'safety',
  description: 'no double claim: one live holder per task, generations 1, 2, 3, ... per task',
  check(world: WorldResult) {
    const analysis = analyse(world);
    const out = new ViolationList('I1', 'safety');
    const claims = new Map<string, { workerId: string | undefined; eventId: number }>();
    for (const [taskId, events] of analysis.eventsByTask) {
      let expected = 1;
      for (const event of events) {
        if (event.type !== 'claimed') continue;
        const position = analysis.positionOfEvent.get(event.id)!;
        const generation = event.data.generation;
        const author = authorOf(event);
        if (generation !== expected) {
          out.add('generation', `task ${taskId}: claim (event ${event.id}) granted generation ${String(generation)}, expected ${expected}`, { taskId });
        }
        if (author !== undefined && (author.generation !== generation || author.workerId !== event.data.workerId)) {
          out.add('author', `task ${taskId}: claim event ${event.id} was written by ${author.workerId}@g${author.generation} but names ${String(event.data.workerId)}@g${String(generation)}`, { taskId });
        }
        const before = analysis.stateBefore[position];
        if (before !== 'ready') {
          const holder = analysis.holderBefore[position];
          const who = holder === undefined ? '' : ` (held by ${holder.workerId}@g${holder.generation})`;
          out.add('two holders', `task ${taskId}: claimed by ${String(event.data.workerId)} at generation ${String(generation)} while ${before ?? 'not enqueued'}${who}`, { taskId });
        }
        claims.set(`${taskId}:${String(generation)}`, { workerId: typeof event.data.workerId === 'string' ? event.data.workerId : undefined, eventId: event.id });
        expected = (typeof generation === 'number' ? generation : expected) + 1;
      }
    }
    const granted = new Set<string>();
    for (const entry of world.history.entries()) {
      if (entry.type !== 'ok' || entry.op !== 'claim' || rolledBack(analysis, entry)) continue;
      const key = `${String(entry.taskId)}:${String(entry.generation)}`;
      if (granted.has(key)) {
        out.add('twice', `task ${String(entry.taskId)} generation ${String(entry.generation)} was handed to ${entry.actor} by a second claim`, { at: [entry.index], taskId: entry.taskId });
      }
      granted.add(key);
      const claim = claims.get(key);
      if (claim === undefined) {
        out.add('unlogged', `claim by ${entry.actor} of task ${String(entry.taskId)} generation ${String(entry.generation)} has no claimed event`, { at: [entry.index], taskId: entry.taskId });
      } else if (claim.workerId !== entry.actor) {
        out.add('holder', `claim by ${entry.actor} of task ${String(entry.taskId)} g${String(entry.generation)} but the log names ${String(claim.workerId)}`, { at: [entry.index], taskId: entry.taskId });
      }
    }
    for (const [key, claim] of claims) {
      if (!granted.has(key)) out.add('unrecorded', `claimed event ${claim.eventId} (task:generation ${key}) matches no successful claim in the history`);
    }
    return out.list;
  },
};
