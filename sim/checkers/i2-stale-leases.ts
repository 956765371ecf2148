import type { TaskEvent } from '../../src/queue/types.ts';
import type { FailEntry, OkEntry } from '../history.ts';
import type { WorldResult } from '../world.ts';
import { providerCalls } from './provider-calls.ts';
import { analyse, authorOf, describeHolder, evAt, eventsBetween, rolledBack, sameHolder, stateAt, ViolationList, wallTimeAt, type Analysis } from './timeline.ts';
import type { Checker } from './types.ts';

/** The fenced writes of a lease holder (Q8): each names (taskId, workerId = the actor, generation). */
export const HOLDER_WRITES = new Set(['heartbeat', 'checkpoint', 'appendEvent', 'complete', 'fail', 'acknowledgeCancel', 'recordEffect', 'interrupt']);

/** Event types only a lease holder writes; each must carry its author (worker id and generation). */
const HOLDER_ONLY_EVENTS = new Set(['checkpoint', 'tool_result', 'task_resumed', 'effect_recorded', 'completed', 'retry_scheduled', 'interrupted']);

/**
 * I2: every write with a non-current (worker, generation) is refused and leaves no trace in tasks,
 * checkpoints, events, settlements or effects.
 *
 * Rules:
 * - events: every event carrying an author (other than the claim that makes it the holder) was written
 *   while the task was `running` under exactly that (worker, generation); holder-only event types
 *   always carry an author. Settlements are written inside those terminal events and are covered.
 * - history: every successful holder write (heartbeat, checkpoint, appendEvent, complete, fail,
 *   acknowledgeCancel, recordEffect, interrupt) was made by the current holder at its place in the
 *   commit order (its `ev` cursor), and one that writes an event left that event, authored by it;
 *   every `stale_lease` refusal left no event authored by the refused (worker, generation).
 * - lease time: every holder event and every successful heartbeat came before the lease it relied on
 *   ran out (the claim's leaseUntil, renewed to wall time + leaseMs by each successful heartbeat of that
 *   generation, placed in the commit order by its cursor), even if no sweep had marked it uncertain yet;
 *   and the mirror (Q10): a lease_expired event comes at or after the lease it ends ran out, so a live
 *   holder's valid lease is never taken from it.
 * - checkpoints: the newest checkpoint of each task was written by the generation its event names.
 * - effect ledger: each ledger row matches an `effect_recorded` event of its generation (so it too was
 *   written by the holder of the time).
 * - a holder write is answered (done or refused), never with the core's own InvariantError;
 * - stops at once (R9): each run of a (worker, generation) is refused stale_lease at most once; it
 *   stops at its first refusal (the stale-write fault's deliberate replays are left out);
 * - provider: an effect sent by a (worker, generation) that no longer held the lease is a breach
 *   unless the same request key was also requested by a current holder (a zombie that woke inside a
 *   tool call raced the takeover, and the provider's key made the two one effect). An effect only a
 *   stale generation ever asked for is an effect of a run that had lost its lease. A request is judged
 *   where it was sent, not where it landed: a request sent under a valid lease that a slow network or a
 *   clock jump delivers after the lease ran out is not a stale write (the worker checked its lease right
 *   before sending; nothing on the queue's side can recall a request in flight).
 */
export const i2StaleLeases: Checker = {
  invariant: 'I2',
  kind: 'safety',
  description: 'stale leases rejected: only the current holder writes; refused writes leave no trace',
  check(world: WorldResult) {
    const analysis = analyse(world);
    const out = new ViolationList('I2', 'safety');
    checkEventAuthors(world, analysis, out);
    checkLeaseTimes(world, analysis, out);
    const okWrites = okHolderWrites(world, analysis);
    for (const entry of world.history.entries()) {
      // A write a power loss undid left nothing to compare with (an acknowledged durable one is I11's and I8's to flag).
      if ((entry.type === 'ok' || entry.type === 'fail') && HOLDER_WRITES.has(entry.op) && !rolledBack(analysis, entry)) checkHolderWrite(analysis, entry, out, okWrites);
    }
    checkCheckpoints(world, analysis, out);
    checkLedger(world, analysis, out);
    checkProvider(world, analysis, out);
    checkStopsAtOnce(world, out);
    return out.list;
  },
};

function checkEventAuthors(world: WorldResult, analysis: Analysis, out: ViolationList): void {
  world.events.forEach((event, position) => {
    const author = authorOf(event);
    if (author === undefined) {
      if (HOLDER_ONLY_EVENTS.has(event.type)) out.add('anonymous', `task ${event.taskId}: ${event.type} event ${event.id} carries no author`, { taskId: event.taskId });
      return;
    }
    if (event.type === 'claimed') return;
    const holder = analysis.holderBefore[position];
    if (!sameHolder(author, holder)) {
      out.add(
        'stale event',
        `task ${event.taskId}: ${event.type} event ${event.id} written by ${describeHolder(author)} while the task was ${analysis.stateBefore[position] ?? 'unknown'} under ${describeHolder(holder)}`,
        { taskId: event.taskId },
      );
    }
  });
}

/** A successful holder write's commit window: its events have ids in (before, ev]. */
interface WriteWindow {
  index: number;
  before: number;
  ev: number;
}

/**
 * The successful holder writes of each (worker, task, generation), with their windows. One holder may
 * have two calls for one task in flight at once: R8's drain hands a run back (interrupt) while the run
 * itself is inside a write (faults/drain.ts), and either may win the race.
 */
function okHolderWrites(world: WorldResult, analysis: Analysis): Map<string, WriteWindow[]> {
  const windows = new Map<string, WriteWindow[]>();
  for (const entry of world.history.entries()) {
    if (entry.type !== 'ok' || !HOLDER_WRITES.has(entry.op) || entry.taskId === undefined || entry.generation === undefined || rolledBack(analysis, entry)) continue;
    const ev = evAt(analysis, entry);
    if (ev === undefined) continue;
    const key = `${entry.actor}|${entry.taskId}|${entry.generation}`;
    let list = windows.get(key);
    if (list === undefined) windows.set(key, (list = []));
    list.push({ index: entry.index, before: analysis.cursorBefore[entry.invokeIndex] ?? 0, ev });
  }
  return windows;
}

function checkHolderWrite(analysis: Analysis, entry: OkEntry | FailEntry, out: ViolationList, okWrites: Map<string, WriteWindow[]>): void {
  const { taskId, generation } = entry;
  // A holder write is answered: done, or refused (stale_lease and the like). The core throwing its own
  // InvariantError instead means a stale caller got past a check that should have refused it; a worker
  // would crash on it, but the stale-write fault's replays swallow errors, so it is judged here.
  if (entry.type === 'fail' && entry.reason === 'invariant_violated') {
    out.add('invariant', `task ${String(taskId)}: ${entry.op} by ${entry.actor}@g${String(generation)} made the core throw InvariantError instead of answering (history ${entry.index})`, {
      at: [entry.index],
      ...(taskId === undefined ? {} : { taskId }),
    });
    return;
  }
  const ev = evAt(analysis, entry);
  if (taskId === undefined || generation === undefined || ev === undefined) return;
  const caller = { workerId: entry.actor, generation };
  const before = analysis.cursorBefore[entry.invokeIndex] ?? 0;
  // sameHolder(authorOf(event), caller), without an object per event: the caller's worker and generation are known.
  const written = eventsBetween(analysis, taskId, before, ev).filter((event) => event.workerId === caller.workerId && event.generation === caller.generation);
  if (entry.type === 'fail') {
    // An event of the same holder that a concurrent successful write of it committed (its window holds
    // the event: the drain's interrupt and the run's own write racing, R8) is that write's, not the refused one's.
    const concurrent = okWrites.get(`${entry.actor}|${taskId}|${generation}`) ?? [];
    const left = written.filter((event) => !concurrent.some((write) => write.before < event.id && event.id <= write.ev));
    if (entry.reason === 'stale_lease' && left.length > 0) {
      out.add('trace', `task ${taskId}: ${entry.op} by ${describeHolder(caller)} was refused stale_lease but left event ${left[0]!.id} (${left[0]!.type})`, { at: [entry.index], taskId });
    }
    return;
  }
  if (entry.op === 'heartbeat') {
    const now = stateAt(analysis, taskId, ev);
    if (!sameHolder(now.holder, caller)) {
      out.add('stale write', `task ${taskId}: heartbeat by ${describeHolder(caller)} succeeded while the task was ${now.state ?? 'unknown'} under ${describeHolder(now.holder)}`, { at: [entry.index], taskId });
    }
    return;
  }
  if (written.length === 0) {
    const now = stateAt(analysis, taskId, ev);
    out.add('stale write', `task ${taskId}: ${entry.op} by ${describeHolder(caller)} succeeded but no event of it is in the log (task ${now.state ?? 'unknown'} under ${describeHolder(now.holder)})`, { at: [entry.index], taskId });
  }
}

function checkCheckpoints(world: WorldResult, analysis: Analysis, out: ViolationList): void {
  for (const [taskId, checkpoint] of world.checkpoints) {
    if (checkpoint === undefined) continue;
    const event = (analysis.eventsByTask.get(taskId) ?? []).find((candidate) => candidate.seq === checkpoint.eventSeq);
    const author = event === undefined ? undefined : authorOf(event);
    if (event === undefined || event.type !== 'checkpoint' || author?.generation !== checkpoint.generation || event.data.checkpointSeq !== checkpoint.seq) {
      out.add(
        'checkpoint',
        `task ${taskId}: checkpoint ${checkpoint.seq} of generation ${checkpoint.generation} has no matching checkpoint event at seq ${checkpoint.eventSeq} (found ${event?.type ?? 'none'} by ${describeHolder(author)})`,
        { taskId },
      );
    }
  }
}

function checkLedger(world: WorldResult, analysis: Analysis, out: ViolationList): void {
  for (const effect of world.effects ?? []) {
    const recorded = (analysis.eventsByTask.get(effect.taskId) ?? []).find(
      (event: TaskEvent) => event.type === 'effect_recorded' && event.data.requestKey === effect.requestKey && event.data.repeated === false,
    );
    if (recorded === undefined || authorOf(recorded)?.generation !== effect.generation) {
      out.add('ledger', `task ${effect.taskId}: ledger row ${effect.requestKey} of generation ${effect.generation} has no effect_recorded event of that generation`, { taskId: effect.taskId });
    }
  }
}

function checkProvider(world: WorldResult, analysis: Analysis, out: ViolationList): void {
  const calls = providerCalls(world);
  // A claim a power loss rolled back was the lease of its time: its holder's sends before the cut are judged as a holder's.
  const undoneClaims = new Set<string>();
  for (const entry of world.history.entries()) {
    if (entry.type === 'ok' && entry.op === 'claim' && rolledBack(analysis, entry)) undoneClaims.add(`${entry.actor}|${String(entry.taskId)}|${String(entry.generation)}`);
  }
  const currentKeys = new Set<string>();
  const staleExecutions: typeof calls = [];
  for (const call of calls) {
    const sentAt = call.sentIndex ?? call.index;
    const now = stateAt(analysis, call.taskId, analysis.cursorBefore[sentAt] ?? 0);
    const current = sameHolder(now.holder, { workerId: call.actor, generation: call.generation }) || undoneClaims.has(`${call.actor}|${call.taskId}|${call.generation}`);
    if (current) currentKeys.add(call.requestKey);
    else {
      if (call.executed) staleExecutions.push(call);
      if (call.sentIndex !== undefined) {
        out.add(
          'stale send',
          `task ${call.taskId}: ${call.action} (${call.requestKey}) sent by ${call.actor}@g${call.generation} while the task was ${now.state ?? 'unknown'} under ${describeHolder(now.holder)}: an effect request from a run that no longer held the lease`,
          { at: [sentAt], taskId: call.taskId },
        );
      }
    }
  }
  for (const call of staleExecutions) {
    if (currentKeys.has(call.requestKey)) continue;
    out.add(
      'stale effect',
      `task ${call.taskId}: ${call.action} (${call.requestKey}) executed by ${call.actor}@g${call.generation}, sent after it lost the lease, and no current holder ever asked for it`,
      { at: [call.index], taskId: call.taskId },
    );
  }
}

/**
 * R9: a run that gets `stale_lease` on any write stops at once, so each run of a (worker, generation)
 * meets at most one refusal. A drain's interrupt (R8) is the worker's call, not the run's: its refusal
 * (the run had just ended, or lost its lease) is not counted. A worker runs a (task, generation) once per delivery: its claim, plus each
 * duplicate delivery of that claim (S4). More refusals than deliveries means some run kept writing after
 * it was told it had lost the lease. The stale-write fault's replays use old credentials on purpose and
 * are left out.
 */
function checkStopsAtOnce(world: WorldResult, out: ViolationList): void {
  const key = (actor: string, taskId: number, generation: number) => `${actor}|${taskId}|${generation}`;
  const deliveries = new Map<string, number>();
  const refusals = new Map<string, number[]>();
  const replayed = new Set<string>();
  for (const entry of world.history.entries()) {
    if (entry.type === 'ok' && entry.op === 'claim' && entry.taskId !== undefined && entry.generation !== undefined) {
      const k = key(entry.actor, entry.taskId, entry.generation);
      deliveries.set(k, (deliveries.get(k) ?? 0) + 1);
    } else if (entry.type === 'note' && (entry.kind === 'duplicate-delivery' || entry.kind === 'stale-write')) {
      const data = entry.data as { taskId?: unknown; generation?: unknown; workerId?: unknown } | undefined;
      if (typeof data?.taskId !== 'number' || typeof data.generation !== 'number') continue;
      if (entry.kind === 'stale-write') {
        if (typeof data.workerId === 'string') replayed.add(key(data.workerId, data.taskId, data.generation));
        continue;
      }
      const k = key(entry.actor, data.taskId, data.generation);
      deliveries.set(k, (deliveries.get(k) ?? 0) + 1);
    } else if (entry.type === 'fail' && entry.reason === 'stale_lease' && HOLDER_WRITES.has(entry.op) && entry.op !== 'interrupt' && entry.taskId !== undefined && entry.generation !== undefined) {
      const k = key(entry.actor, entry.taskId, entry.generation);
      let list = refusals.get(k);
      if (list === undefined) refusals.set(k, (list = []));
      list.push(entry.index);
    }
  }
  for (const [k, indexes] of refusals) {
    const runs = deliveries.get(k) ?? 0;
    if (replayed.has(k) || runs === 0 || indexes.length <= runs) continue;
    const [actor, taskId, generation] = k.split('|');
    out.add(
      'kept writing',
      `task ${taskId}: ${actor}@g${generation} was refused stale_lease ${indexes.length} times over ${runs} run(s) (history ${indexes.slice(0, 4).join(', ')}${indexes.length > 4 ? ', ...' : ''}): a run that loses its lease stops at its first refusal (R9)`,
      { at: indexes.slice(0, 4), taskId: Number(taskId) },
    );
  }
}

interface Renewal {
  ev: number;
  generation: number;
  at: number;
  index: number;
}

/** Q8: "and its lease has not expired". Replays each task's lease: claims set it, heartbeats renew it. */
function checkLeaseTimes(world: WorldResult, analysis: Analysis, out: ViolationList): void {
  const renewals = new Map<number, Renewal[]>();
  for (const entry of world.history.entries()) {
    if (entry.type !== 'ok' || entry.op !== 'heartbeat' || entry.taskId === undefined || entry.generation === undefined || rolledBack(analysis, entry)) continue;
    const ev = evAt(analysis, entry);
    if (ev === undefined) continue;
    let list = renewals.get(entry.taskId);
    if (list === undefined) renewals.set(entry.taskId, (list = []));
    list.push({ ev, generation: entry.generation, at: wallTimeAt(analysis, entry), index: entry.index });
  }
  const { leaseMs } = analysis.config;
  for (const [taskId, events] of analysis.eventsByTask) {
    const list = renewals.get(taskId) ?? [];
    let next = 0;
    let lease: { generation: number; until: number } | undefined;
    const renewUpTo = (cursor: number) => {
      for (; next < list.length && list[next]!.ev < cursor; next++) {
        const renewal = list[next]!;
        if (lease === undefined || renewal.generation !== lease.generation) continue;
        if (renewal.at >= lease.until) {
          out.add('expired lease', `task ${taskId}: heartbeat of generation ${renewal.generation} succeeded at ${renewal.at}, after its lease ran out at ${lease.until}`, { at: [renewal.index], taskId });
        }
        lease.until = renewal.at + leaseMs;
      }
    };
    for (const event of events) {
      renewUpTo(event.id);
      if (event.type === 'claimed') {
        const until = event.data.leaseUntil;
        lease = typeof event.data.generation === 'number' && typeof until === 'number' ? { generation: event.data.generation, until } : undefined;
        continue;
      }
      // Q10: only a lease that ran out expires. A sweep that judges by claim time, or by a lease the
      // heartbeats did not really renew, takes the task from a live holder (a stalled-job sweep).
      if (event.type === 'lease_expired' && lease !== undefined && event.data.generation === lease.generation && event.at < lease.until) {
        out.add(
          'early expiry',
          `task ${taskId}: lease_expired event ${event.id} expired generation ${lease.generation} at ${event.at}, before its lease ran out at ${lease.until} (claim and heartbeats)`,
          { taskId },
        );
      }
      const author = authorOf(event);
      if (author !== undefined && lease !== undefined && author.generation === lease.generation && event.at >= lease.until) {
        out.add('expired lease', `task ${taskId}: ${event.type} event ${event.id} by ${describeHolder(author)} at ${event.at}, after its lease ran out at ${lease.until}`, { taskId });
      }
    }
    renewUpTo(Number.MAX_SAFE_INTEGER);
  }
}
