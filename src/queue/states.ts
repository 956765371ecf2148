import { InvariantError } from './errors.ts';
import { HOLD_NOT_OPEN_SQL } from './holds.ts';
import type { TaskState } from './types.ts';

/**
 * The task state machine, in one place: one executable table of edges. Every state change the queue
 * makes is one of these edges, carried out by the one checked function `transition()` in
 * transition.ts, which refuses any (event, from, to) that is not here and appends the event log entry
 * the edge names (Q15). Everything else about states is derived from this table: the live and
 * occupying sets, `canTransition`, and the schema's CHECK constraint (store/migrations.ts).
 *
 *   (enqueue) --> ready --claim--> running --complete--> done
 *                   |  ^              |  \--fail--> ready (retry) | failed | cancelled
 *                   |  |              |  \--expiry--> uncertain --confirmStopped / reconcile--> ready | failed | ...
 *                   |  \--interrupt---/
 *                   \--supersede | cancel | retire--> superseded | cancelled | expired | failed
 */

/** What causes an edge: the operation of the queue that carries it out. */
export type TransitionEvent =
  | 'enqueue'
  | 'supersede'
  | 'claim'
  | 'retire'
  | 'complete'
  | 'fail'
  | 'cancel'
  | 'interrupt'
  | 'expiry'
  | 'confirmStopped'
  | 'reconcile'
  | 'redrive';

export interface Edge {
  event: TransitionEvent;
  /** null: the edge creates the task (enqueue). */
  from: TaskState | null;
  to: TaskState;
  /** The event log entry the edge appends in its transaction (Q15). */
  records: string;
  /**
   * What the edge does to the task's concurrency slot (Q6): `take` one, `keep` it (Q10: an uncertain
   * task keeps its slot), or `free` it. Edges between states that hold none leave this out.
   */
  slot?: 'take' | 'keep' | 'free';
}

export const EDGES: readonly Edge[] = [
  { event: 'enqueue', from: null, to: 'ready', records: 'enqueued' },
  // Q2: a version older than one already queued arrives late and is stored superseded; it never runs.
  { event: 'supersede', from: null, to: 'superseded', records: 'superseded' },
  { event: 'supersede', from: 'ready', to: 'superseded', records: 'superseded' },
  { event: 'claim', from: 'ready', to: 'running', records: 'claimed', slot: 'take' },
  // Q14 and Q16 at claim: the chosen task is past its deadline or its retry age, so it ends instead of running.
  { event: 'retire', from: 'ready', to: 'expired', records: 'expired' },
  { event: 'retire', from: 'ready', to: 'failed', records: 'failed' },
  { event: 'cancel', from: 'ready', to: 'cancelled', records: 'cancelled' },
  // Q13: the holder saw the persisted request at a step boundary.
  { event: 'cancel', from: 'running', to: 'cancelled', records: 'cancelled', slot: 'free' },
  { event: 'complete', from: 'running', to: 'done', records: 'completed', slot: 'free' },
  // Q14 before commit: the result is not committed and the task ends expired.
  { event: 'complete', from: 'running', to: 'expired', records: 'expired', slot: 'free' },
  { event: 'fail', from: 'running', to: 'ready', records: 'retry_scheduled', slot: 'free' },
  { event: 'fail', from: 'running', to: 'failed', records: 'failed', slot: 'free' },
  { event: 'fail', from: 'running', to: 'cancelled', records: 'cancelled', slot: 'free' },
  // R8: a draining worker hands the run back; with a pending cancel it ends cancelled instead (Q13).
  { event: 'interrupt', from: 'running', to: 'ready', records: 'interrupted', slot: 'free' },
  { event: 'interrupt', from: 'running', to: 'cancelled', records: 'cancelled', slot: 'free' },
  // Q10: a lease that passed means uncertain, never ready: the worker may still be running.
  { event: 'expiry', from: 'running', to: 'uncertain', records: 'lease_expired', slot: 'keep' },
  // Q11: only the trusted execution layer frees an uncertain slot.
  { event: 'confirmStopped', from: 'uncertain', to: 'ready', records: 'stop_confirmed', slot: 'free' },
  { event: 'confirmStopped', from: 'uncertain', to: 'failed', records: 'stop_confirmed', slot: 'free' },
  { event: 'confirmStopped', from: 'uncertain', to: 'cancelled', records: 'stop_confirmed', slot: 'free' },
  { event: 'confirmStopped', from: 'uncertain', to: 'expired', records: 'stop_confirmed', slot: 'free' },
  // R5: under 'auto', a resumable uncertain run is decided by the reconciler.
  { event: 'reconcile', from: 'uncertain', to: 'ready', records: 'reconciled', slot: 'free' },
  { event: 'reconcile', from: 'uncertain', to: 'failed', records: 'reconciled', slot: 'free' },
  { event: 'reconcile', from: 'uncertain', to: 'cancelled', records: 'reconciled', slot: 'free' },
];

/**
 * O1: the edges an operator takes out of an end. They are not part of a task's own life (the table
 * above, from which the terminal, live and occupying sets are derived: a failed task stays terminal
 * for everything that runs by itself), and no worker, claim or reconciler takes them: `redrive`
 * (queue.redrive, src/queue/operator.ts) sends a dead letter back to ready, by a person's decision.
 */
export const REOPENING_EDGES: readonly Edge[] = [{ event: 'redrive', from: 'failed', to: 'ready', records: 'redriven' }];

/** Every state, in the order the SPEC lists them. */
export const STATES: readonly TaskState[] = ['ready', 'running', 'uncertain', 'done', 'failed', 'superseded', 'cancelled', 'expired'];

/** Which states each state may move to (derived from EDGES). */
export const TRANSITIONS: Readonly<Record<TaskState, readonly TaskState[]>> = Object.fromEntries(
  STATES.map((state) => [state, [...new Set(EDGES.filter((edge) => edge.from === state).map((edge) => edge.to))]]),
) as unknown as Record<TaskState, readonly TaskState[]>;

/** A state with no edge out of it: the run has ended. */
export const TERMINAL_STATES: readonly TaskState[] = STATES.filter((state) => TRANSITIONS[state].length === 0);

/** States counted against capacity (Q3): every state a task can still leave. */
export const LIVE_STATES: readonly TaskState[] = STATES.filter((state) => TRANSITIONS[state].length > 0);

/**
 * States that hold a concurrency slot (Q6): those an edge that takes a slot enters, and those reached
 * from them by edges that keep it.
 */
export const OCCUPYING_STATES: readonly TaskState[] = occupyingStates();

function occupyingStates(): TaskState[] {
  const occupying = new Set(EDGES.filter((edge) => edge.slot === 'take').map((edge) => edge.to));
  for (let grew = true; grew; ) {
    grew = false;
    for (const edge of EDGES) {
      if (edge.slot === 'keep' && edge.from !== null && occupying.has(edge.from) && !occupying.has(edge.to)) {
        occupying.add(edge.to);
        grew = true;
      }
    }
  }
  return STATES.filter((state) => occupying.has(state));
}

export function isTerminal(state: TaskState): boolean {
  return TRANSITIONS[state].length === 0;
}

export function isLive(state: TaskState): boolean {
  return TRANSITIONS[state].length > 0;
}

export function canTransition(from: TaskState, to: TaskState): boolean {
  return TRANSITIONS[from]?.includes(to) ?? false;
}

/** Whether an operator's edge (REOPENING_EDGES) leads from `from` to `to`. */
export function canReopen(from: TaskState, to: TaskState): boolean {
  return REOPENING_EDGES.some((edge) => edge.from === from && edge.to === to);
}

const EDGE_INDEX = new Map([...EDGES, ...REOPENING_EDGES].map((edge) => [edgeKey(edge.event, edge.from, edge.to), edge]));

function edgeKey(event: TransitionEvent, from: TaskState | null, to: TaskState): string {
  return `${event}:${from ?? '-'}:${to}`;
}

/** The edge an operation takes, or an InvariantError: a write that would break the machine is a bug. */
export function edgeFor(taskId: number, event: TransitionEvent, from: TaskState | null, to: TaskState): Edge {
  const edge = EDGE_INDEX.get(edgeKey(event, from, to));
  if (edge === undefined) throw new InvariantError(`task ${taskId}: ${event} cannot move it ${from ?? '(new)'} -> ${to}`);
  return edge;
}

/**
 * What a stored row must look like in each state, as SQL over the tasks table. The schema's CHECK is
 * built from these (and the state list), so a half-done transition can never be stored: a running or
 * uncertain task always names its worker and a generation of at least 1 (Q7, Q8, Q10); a task that
 * ended has finished_at and a hold that is no longer held (R4: every end closes its hold in the same
 * transaction); a done task has its result (Q12). Conditions are written so that PostgreSQL reads them
 * the same way.
 */
export const ROW_RULES: Readonly<Record<TaskState, string>> = {
  ready: 'TRUE',
  running: 'worker_id IS NOT NULL AND generation >= 1 AND claimed_at IS NOT NULL',
  uncertain: 'worker_id IS NOT NULL AND generation >= 1',
  done: `${endedRule()} AND result IS NOT NULL AND outcome IS NOT NULL`,
  failed: endedRule(),
  superseded: endedRule(),
  cancelled: endedRule(),
  expired: endedRule(),
};

function endedRule(): string {
  return `finished_at IS NOT NULL AND ${HOLD_NOT_OPEN_SQL}`;
}

/** SQL: `column IN ('a', 'b')` over states, in STATES' order (the one way a set of states is written in SQL). */
export function stateInSql(states: readonly TaskState[], column = 'state'): string {
  if (states.length === 0) throw new InvariantError('a state predicate over no states');
  return `${column} IN (${STATES.filter((state) => states.includes(state)).map((state) => `'${state}'`).join(', ')})`;
}

/** SQL: the task holds a slot and a lease (Q6, Q8): OCCUPYING_STATES, for every statement and partial index that needs it. */
export const OCCUPYING_SQL = stateInSql(OCCUPYING_STATES);

/**
 * Q8, Q10: a task holds a lease exactly while it holds a slot (the occupying states). A rule of its own:
 * SQLite checks a constraint only when a column it names changes, and a heartbeat changes the lease
 * alone, so it pays for this one comparison and not for every state's rules.
 */
export const LEASE_RULE = `(lease_until IS NOT NULL) = (${stateInSql(OCCUPYING_STATES)})`;

/** The CHECK constraints the tasks table carries (store/migrations.ts, migration 5). */
export function stateCheckSql(): string {
  const cases = STATES.map((state) => `WHEN '${state}' THEN (${ROW_RULES[state]})`).join(' ');
  return `CONSTRAINT task_state_machine CHECK (CASE state ${cases} ELSE FALSE END),
        CONSTRAINT task_lease CHECK (${LEASE_RULE})`;
}

// The table is checked once, when this module loads: a mistake in it is a bug that must not ship.
for (const edge of [...EDGES, ...REOPENING_EDGES]) {
  const fromOccupies = edge.from !== null && OCCUPYING_STATES.includes(edge.from);
  const toOccupies = OCCUPYING_STATES.includes(edge.to);
  const expected = fromOccupies ? (toOccupies ? 'keep' : 'free') : toOccupies ? 'take' : undefined;
  if (edge.slot !== expected) throw new InvariantError(`edge ${edge.event} ${edge.from} -> ${edge.to}: slot ${edge.slot} should be ${expected}`);
}
if (EDGE_INDEX.size !== EDGES.length + REOPENING_EDGES.length) throw new InvariantError('the state machine lists an edge twice');
