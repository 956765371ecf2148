import { canonicalJson, sha256Hex } from '../canonical-json.ts';

/**
 * R3: the request key of an effect is runId:action:fingerprint, the fingerprint a hash of the payload
 * in canonical form. Arrays of items that carry an `id` are a set, so they are sorted by id first:
 * the same order in another order is the same effect.
 */
export function requestKey(runId: number, action: string, payload: unknown): string {
  return `${runId}:${action}:${fingerprint(payload)}`;
}

export function fingerprint(payload: unknown): string {
  return sha256Hex(canonicalJson(sortSets(payload))).slice(0, 24);
}

function sortSets(value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = value.map(sortSets);
    if (items.length > 0 && items.every(hasId)) {
      return [...items].sort((a, b) => compareIds((a as { id: unknown }).id, (b as { id: unknown }).id));
    }
    return items;
  }
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, sortSets(item)]));
  }
  return value;
}

function hasId(item: unknown): boolean {
  if (item === null || typeof item !== 'object') return false;
  const id = (item as { id?: unknown }).id;
  return typeof id === 'string' || typeof id === 'number';
}

function compareIds(a: unknown, b: unknown): number {
  const left = String(a);
  const right = String(b);
  return left < right ? -1 : left > right ? 1 : 0;
}
