import type { Clock } from '../src/ports.ts';
import { canonicalJson, type JsonValue } from './canonical-json.ts';
import { TraceHasher } from './trace-hash.ts';

/**
 * The history of a run (S6): every operation as an `invoke` entry and later an `ok` or `fail` entry,
 * plus `note` entries for faults and phases. Checkers (S7) are pure functions of this list and the final
 * database; the trace hash summarises it (I14).
 *
 * An invoke that never completes is meaningful, not a bug: it is an operation whose actor was killed or
 * paused mid-call, and whose effect may or may not have happened (Jepsen calls it `info`).
 */

/** Fault and phase notes (S4, S5). Open-ended so a new injector can add its kind without touching this. */
export type NoteKind =
  | 'kill' | 'pause' | 'resume' | 'revive' | 'restart' | 'clock-jump'
  | 'sqlite-busy' | 'slow-tool' | 'hung-tool' | 'lost-response' | 'duplicate-delivery'
  | 'phase'
  | (string & {});

/** Fields an operation may name; a completion inherits them from its invoke unless it overrides them. */
export interface OperationFields {
  taskId?: number;
  generation?: number;
  data?: JsonValue;
}

interface EntryBase {
  /** Position in the history, from 0. */
  index: number;
  /** The simulator's timeline instant (monotonic; clock jumps show up as notes instead). */
  timeMs: number;
  /** Who acted, with its incarnation, e.g. `worker-2#1`; `sim` for the harness itself. */
  actor: string;
  data?: JsonValue;
}

export interface InvokeEntry extends EntryBase { type: 'invoke'; op: string; taskId?: number; generation?: number }
export interface OkEntry extends EntryBase { type: 'ok'; op: string; invokeIndex: number; taskId?: number; generation?: number }
export interface FailEntry extends EntryBase {
  type: 'fail';
  op: string;
  invokeIndex: number;
  reason: string;
  taskId?: number;
  generation?: number;
}
export interface NoteEntry extends EntryBase {
  type: 'note';
  kind: NoteKind;
  /** The task (and generation) a note is about, when it is about one: it then shows in that task's timeline. */
  taskId?: number;
  generation?: number;
}
export type HistoryEntry = InvokeEntry | OkEntry | FailEntry | NoteEntry;

/** Decides how a returned value is recorded; see `History.record`. */
export type Outcome = { ok: true; fields?: OperationFields } | { ok: false; reason: string; fields?: OperationFields };

/** Bound on entries: a run that records more than this is runaway, and memory would follow. */
const entriesMaxDefault = 5_000_000;

export class History {
  private readonly list: HistoryEntry[] = [];
  private readonly lines: string[] = [];
  private readonly hasher = new TraceHasher();
  private hashedLines = 0;
  private readonly completed = new Set<number>();

  /** `clock` gives the time of each entry: pass the event loop, whose `now()` is the timeline. */
  constructor(
    private readonly clock: Clock,
    private readonly entriesMax: number = entriesMaxDefault,
  ) {}

  /** Records the start of an operation and returns its index, which the completion names. */
  // Each entry is one fresh object literal, fields in the order they always had (append keeps it).
  invoke(actor: string, op: string, fields: OperationFields = {}): number {
    return this.append({ type: 'invoke', index: this.list.length, timeMs: this.clock.now(), actor, op, ...fields });
  }

  ok(invokeIndex: number, fields: OperationFields = {}): void {
    const invoke = this.openInvoke(invokeIndex);
    this.append({ op: invoke.op, taskId: invoke.taskId, generation: invoke.generation, type: 'ok', index: this.list.length, timeMs: this.clock.now(), actor: invoke.actor, invokeIndex, ...fields });
  }

  fail(invokeIndex: number, reason: string, fields: OperationFields = {}): void {
    const invoke = this.openInvoke(invokeIndex);
    this.append({ op: invoke.op, taskId: invoke.taskId, generation: invoke.generation, type: 'fail', index: this.list.length, timeMs: this.clock.now(), actor: invoke.actor, invokeIndex, reason, ...fields });
  }

  note(kind: NoteKind, actor: string, data?: JsonValue, task?: { taskId: number; generation?: number }): void {
    // A note about a task names it as an operation does; a note about none has no such fields (its entry, and every trace hash, as before).
    this.append({ type: 'note', index: this.list.length, timeMs: this.clock.now(), actor, kind, data, ...task });
  }

  /**
   * Records `action` as one operation. A thrown error (or rejection) is a `fail` with the reason from
   * `reasonOf`, and is rethrown; a returned value goes through `outcome`, which by default reads the
   * core's result shape: `{ ok: false, error }` is a failure with that reason, anything else is ok.
   */
  async record<T>(
    actor: string,
    op: string,
    fields: OperationFields,
    action: () => T | Promise<T>,
    outcome: (result: T) => Outcome = defaultOutcome,
  ): Promise<T> {
    const invokeIndex = this.invoke(actor, op, fields);
    let result: T;
    try {
      result = await action();
    } catch (error) {
      this.fail(invokeIndex, reasonOf(error));
      throw error;
    }
    const decided = outcome(result);
    if (decided.ok) this.ok(invokeIndex, decided.fields);
    else this.fail(invokeIndex, decided.reason, decided.fields);
    return result;
  }

  entries(): readonly HistoryEntry[] {
    return this.list;
  }

  get length(): number {
    return this.list.length;
  }

  /** One canonical JSON entry per line, newline-terminated: exactly the bytes the trace hash covers. */
  toJsonl(): string {
    return this.lines.length === 0 ? '' : `${this.lines.join('\n')}\n`;
  }

  /** sha256 hex over `toJsonl()`. */
  traceHash(): string {
    // The lines are hashed in batches, when a hash is asked for: one update per batch instead of two
    // per entry. The bytes hashed are the same, line by line, each followed by a newline.
    if (this.hashedLines < this.lines.length) {
      this.hasher.addLines(this.lines, this.hashedLines);
      this.hashedLines = this.lines.length;
    }
    return this.hasher.digest();
  }

  private append(entry: HistoryEntry): number {
    if (this.list.length >= this.entriesMax) throw new RangeError(`history bound ${this.entriesMax} entries hit`);
    // Serialising now, and keeping a copy of the data, freezes the entry as it was: a caller mutating its
    // data object later cannot rewrite history, and unserialisable data fails at the line that recorded it.
    // Only `data` is free-form; the entry's own fields are written in canonical (sorted) order by hand,
    // which gives the same bytes as canonicalJson(entry) at a fraction of the cost on the hot path.
    // The entry is the recording method's own fresh object: only its data (the caller's) is copied.
    // The copy is parsed before the line is built: the parse flattens the serialised data in place, and
    // the line then copies one flat string instead of walking the serialiser's concatenations again.
    const dataJson = entry.data === undefined ? undefined : canonicalJson(entry.data);
    const data = dataJson === undefined ? undefined : (JSON.parse(dataJson) as JsonValue);
    const line = entryLine(entry, dataJson);
    this.lines.push(line);
    if (dataJson !== undefined) (entry as { data?: JsonValue }).data = data;
    this.list.push(entry);
    return entry.index;
  }

  private openInvoke(invokeIndex: number): InvokeEntry {
    const invoke = this.list[invokeIndex];
    if (invoke === undefined || invoke.type !== 'invoke') throw new RangeError(`entry ${invokeIndex} is not an invoke`);
    // An operation completes at most once; a second completion is a harness bug that would fool checkers.
    if (this.completed.has(invokeIndex)) throw new Error(`invoke ${invokeIndex} (${invoke.op}) already completed`);
    this.completed.add(invokeIndex);
    return invoke;
  }
}

/** Every field an entry can carry except `data`, in canonical (UTF-16 sorted) order. */
const ENTRY_FIELDS = ['actor', 'generation', 'index', 'invokeIndex', 'kind', 'op', 'reason', 'taskId', 'timeMs', 'type'] as const;
const ENTRY_FIELD_SET: ReadonlySet<string> = new Set(ENTRY_FIELDS);
/** Each field's key as it opens a member: `"actor":` first, `,"actor":` after another member. */
const FIRST_KEY = new Map<string, string>(['data', ...ENTRY_FIELDS].map((field) => [field, `{"${field}":`]));
const NEXT_KEY = new Map<string, string>(['data', ...ENTRY_FIELDS].map((field) => [field, `,"${field}":`]));

/**
 * The entry's canonical JSON line. Its pieces are joined once, which gives one flat string: the lines
 * live until the run ends and are hashed together, and a string built by `+=` is a tree of its pieces
 * that the hash (and the garbage collector, for the run's whole length) would walk piece by piece.
 */
function entryLine(entry: HistoryEntry, dataJson: string | undefined): string {
  const record = entry as unknown as Record<string, unknown>;
  const parts: string[] = [];
  for (const field of ENTRY_FIELDS) {
    // 'data' sorts between 'actor' and 'generation'.
    if (field === 'generation' && dataJson !== undefined) parts.push(parts.length === 0 ? (FIRST_KEY.get('data') as string) : (NEXT_KEY.get('data') as string), dataJson);
    const value = record[field];
    if (value === undefined) continue;
    if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError(`history field ${field} is not a finite number`);
    parts.push(parts.length === 0 ? (FIRST_KEY.get(field) as string) : (NEXT_KEY.get(field) as string), String(JSON.stringify(value)));
  }
  for (const key of Object.keys(record)) {
    if (key !== 'data' && !ENTRY_FIELD_SET.has(key)) throw new TypeError(`history entry has an unknown field ${key}`);
  }
  parts.push(parts.length === 0 ? '{}' : '}');
  return parts.join('');
}

function defaultOutcome(result: unknown): Outcome {
  if (typeof result === 'object' && result !== null && (result as { ok?: unknown }).ok === false) {
    const error = (result as { error?: unknown }).error;
    return { ok: false, reason: typeof error === 'string' ? error : 'failed' };
  }
  return { ok: true };
}

/** A stable failure reason: an error's string `code` if it has one (SQLITE_BUSY, stale_lease), else its message. */
export function reasonOf(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
