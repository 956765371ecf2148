import type { ProviderOperation } from '../actors/provider.ts';
import type { WorldResult } from '../world.ts';

/** One request that reached the external provider, placed in the history. */
export interface ProviderCall extends ProviderOperation {
  /** History index of the provider's note for this request. */
  index: number;
  /** True if the provider acted; false if it returned the first result of an earlier request. */
  executed: boolean;
}

const memo = new WeakMap<WorldResult, ProviderCall[]>();

/**
 * The provider's own record (every request in order) joined with its history notes (one
 * `provider-execute` or `provider-repeat` per request, in the same order), so each request gets a
 * place in the commit order. If the two disagree in length the harness is broken: the calls that can
 * be placed are returned and `providerRecordMismatch` says so.
 */
export function providerCalls(world: WorldResult): ProviderCall[] {
  const cached = memo.get(world);
  if (cached !== undefined) return cached;
  const notes = world.history.entries().filter((entry) => entry.type === 'note' && (entry.kind === 'provider-execute' || entry.kind === 'provider-repeat'));
  const calls: ProviderCall[] = [];
  const count = Math.min(notes.length, world.provider.requests.length);
  for (let i = 0; i < count; i++) {
    const note = notes[i]!;
    const request = world.provider.requests[i]!;
    calls.push({ ...request, index: note.index, executed: note.type === 'note' && note.kind === 'provider-execute' });
  }
  memo.set(world, calls);
  return calls;
}

export function providerRecordMismatch(world: WorldResult): string | undefined {
  const notes = world.history.entries().filter((entry) => entry.type === 'note' && (entry.kind === 'provider-execute' || entry.kind === 'provider-repeat'));
  const executeNotes = notes.filter((entry) => entry.type === 'note' && entry.kind === 'provider-execute').length;
  if (notes.length !== world.provider.requests.length || executeNotes !== world.provider.executions.length) {
    return `the provider recorded ${world.provider.requests.length} requests and ${world.provider.executions.length} executions, the history ${notes.length} and ${executeNotes}`;
  }
  return undefined;
}
