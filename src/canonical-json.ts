import { createHash } from 'node:crypto';

/**
 * Canonical JSON: the one serialisation hashed for enqueue idempotency (Q1), effect fingerprints (R3)
 * and the simulator's trace hash (S6). Two values that are equal as data serialise to the same text
 * whatever order their keys were inserted in, so a hash over it changes only when the data does.
 *
 * It is stricter than `JSON.stringify` on purpose: values that JSON would silently mangle (NaN becomes
 * null, a Map becomes {}, a bigint throws late) are refused here, because a trace that quietly lost
 * information could hide a nondeterminism instead of reporting it.
 */

/** Plain JSON data: what inputs, results and history entries may carry. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue | undefined };

/** Thrown when a value has no faithful canonical JSON form. */
export class CanonicalJsonError extends TypeError {
  override readonly name = 'CanonicalJsonError';
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(`${message} at ${path}`);
  }
}

/** Depth bound: data nested this deep is a bug, and the bound keeps recursion finite. */
const depthMax = 64;

/**
 * Serialises `value` with object keys in code-unit order, no whitespace, and object properties whose
 * value is `undefined` omitted (as `JSON.stringify` omits them), so optional fields left unset do not
 * change the hash.
 */
export function canonicalJson(value: unknown): string {
  return write(value, '$', 0, new Set());
}

function write(value: unknown, path: string, depth: number, ancestors: Set<object>): string {
  if (depth > depthMax) throw new CanonicalJsonError(`nested deeper than ${depthMax}`, path);
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new CanonicalJsonError(`non-finite number ${value}`, path);
      // -0 and 0 are the same datum; JSON already prints both as 0.
      return JSON.stringify(value);
    case 'object':
      if (value === null) return 'null';
      return writeObject(value, path, depth, ancestors);
    default:
      throw new CanonicalJsonError(`unsupported ${typeof value}`, path);
  }
}

function writeObject(value: object, path: string, depth: number, ancestors: Set<object>): string {
  if (ancestors.has(value)) throw new CanonicalJsonError('circular reference', path);
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      const items = value.map((item: unknown, index) =>
        // An undefined array slot has no omission rule to fall back on: refuse it rather than guess.
        write(item, `${path}[${index}]`, depth + 1, ancestors),
      );
      return `[${items.join(',')}]`;
    }
    const prototype: unknown = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) {
      throw new CanonicalJsonError(`not a plain object (${value.constructor?.name ?? 'unknown'})`, path);
    }
    const record = value as Record<string, unknown>;
    // Default sort compares UTF-16 code units: locale-independent, so every machine agrees.
    const keys = Object.keys(record).sort();
    const members: string[] = [];
    for (const key of keys) {
      const member = record[key];
      if (member === undefined) continue;
      members.push(`${JSON.stringify(key)}:${write(member, `${path}.${key}`, depth + 1, ancestors)}`);
    }
    return `{${members.join(',')}}`;
  } finally {
    ancestors.delete(value);
  }
}

/** Hex sha256 of a text: the enqueue idempotency hash (Q1) and effect fingerprints (R3) use it. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
