import { createHash } from 'node:crypto';

/**
 * JSON with object keys sorted at every depth, so that two values that mean the same serialise to the
 * same text whatever order their keys were built in. Used for the enqueue idempotency hash (Q1) and
 * the effect fingerprints (R3). Throws TypeError on values JSON cannot carry faithfully.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(normalise(value, new Set()));
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function normalise(value: unknown, seen: Set<object>): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`non-finite number ${value}`);
    return value;
  }
  if (typeof value !== 'object') throw new TypeError(`a ${typeof value} is not JSON`);
  if (seen.has(value)) throw new TypeError('a circular reference is not JSON');
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((item) => (item === undefined ? null : normalise(item, seen)));
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) {
      throw new TypeError(`an instance of ${value.constructor?.name ?? 'a class'} is not plain JSON`);
    }
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const item = (value as Record<string, unknown>)[key];
      if (item !== undefined) out[key] = normalise(item, seen);
    }
    return out;
  } finally {
    seen.delete(value);
  }
}
