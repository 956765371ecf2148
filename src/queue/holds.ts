import { InvariantError } from './errors.ts';

/**
 * R4: the hold of a task's credits is a state machine of its own, small enough to be a table. A hold
 * opens with the task at enqueue (`held`, when the task carries one) and closes exactly once, settled
 * with the usage its checkpoints recorded or released when the run never checkpointed; a closed hold
 * never changes again. The schema's CHECK on `hold_state` and every statement's open/closed predicate
 * are built from this table (the migrations' literal text is held to it by src/store/derived-predicates.test.ts), as the
 * task's own predicates are built from states.ts.
 */
export type HoldState = 'held' | 'settled' | 'released';

export interface HoldEdge {
  readonly event: 'open' | 'settle' | 'release';
  readonly from: HoldState | null;
  readonly to: HoldState;
}

export const HOLD_EDGES: readonly HoldEdge[] = [
  { event: 'open', from: null, to: 'held' },
  { event: 'settle', from: 'held', to: 'settled' },
  { event: 'release', from: 'held', to: 'released' },
];

/** Every hold state, in the order the schema's CHECK lists them. */
export const HOLD_STATES: readonly HoldState[] = ['held', 'settled', 'released'];

/** The one state a hold can leave: the hold is open. */
export const HOLD_OPEN: HoldState = onlyOpenState();

/** SQL: the hold is open. */
export const HOLD_IS_OPEN_SQL = `hold_state = '${HOLD_OPEN}'`;
/** SQL: the task carries no open hold (none at all, or one already closed). */
export const HOLD_NOT_OPEN_SQL = `(hold_state IS NULL OR hold_state <> '${HOLD_OPEN}')`;

/** SQL: the CHECK on the hold_state column. */
export function holdCheckSql(): string {
  return `hold_state IN (${HOLD_STATES.map((state) => `'${state}'`).join(', ')})`;
}

export function isHoldOpen(state: HoldState | null | undefined): boolean {
  return state === HOLD_OPEN;
}

/** The edge closing an open hold into `to`, or an InvariantError: a hold closes once, from open. */
export function holdEdgeFor<To extends HoldState>(taskId: number, from: HoldState | null, to: To): HoldEdge & { readonly to: To } {
  const edge = HOLD_EDGES.find((candidate) => candidate.from === from && candidate.to === to);
  if (edge === undefined) throw new InvariantError(`task ${taskId}: a hold cannot move ${from ?? '(new)'} -> ${to}`);
  return edge as HoldEdge & { readonly to: To };
}

function onlyOpenState(): HoldState {
  const leaving = [...new Set(HOLD_EDGES.flatMap((edge) => (edge.from === null ? [] : [edge.from])))];
  if (leaving.length !== 1) throw new InvariantError(`the hold table must have exactly one state with edges out, has ${leaving.length}`);
  return leaving[0]!;
}

// The table is checked once, when this module loads, as states.ts checks the task's.
for (const edge of HOLD_EDGES) {
  if (!HOLD_STATES.includes(edge.to) || (edge.from !== null && !HOLD_STATES.includes(edge.from))) {
    throw new InvariantError(`hold edge ${edge.event} names a state the hold table does not list`);
  }
}
if (HOLD_EDGES.filter((edge) => edge.from === null).length !== 1) throw new InvariantError('a hold opens by exactly one edge');
