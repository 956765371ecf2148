import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, CanonicalJsonError } from './canonical-json.ts';

/** The same data with every object's keys inserted in reverse order. */
function reverseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reverseKeys);
  if (typeof value !== 'object' || value === null) return value;
  // Object.fromEntries defines own properties, so a "__proto__" key stays a key instead of setting the prototype.
  const entries = Object.keys(value).reverse().map((key) => [key, reverseKeys((value as Record<string, unknown>)[key])]);
  return Object.fromEntries(entries);
}

describe('canonicalJson', () => {
  it('sorts keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, 1, 2], c: null } })).toBe('{"a":{"c":null,"d":[3,1,2]},"b":1}');
  });

  it('does not depend on key insertion order', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalJson(reverseKeys(value))).toBe(canonicalJson(value));
      }),
    );
  });

  it('is a fixed point: parsing and reserialising changes nothing', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        expect(canonicalJson(JSON.parse(text))).toBe(text);
      }),
    );
  });

  it('keeps an own "__proto__" key, as JSON.parse makes one', () => {
    const value: unknown = JSON.parse('{"b":1,"__proto__":{"x":2}}');
    expect(canonicalJson(value)).toBe('{"__proto__":{"x":2},"b":1}');
    expect(canonicalJson(reverseKeys(value))).toBe(canonicalJson(value));
  });

  it('omits undefined properties, so an unset optional field does not change the hash', () => {
    expect(canonicalJson({ a: 1, taskId: undefined })).toBe(canonicalJson({ a: 1 }));
  });

  it('refuses values that JSON would silently mangle', () => {
    expect(() => canonicalJson({ a: Number.NaN })).toThrow(CanonicalJsonError);
    expect(() => canonicalJson({ a: Number.POSITIVE_INFINITY })).toThrow(CanonicalJsonError);
    expect(() => canonicalJson({ a: new Map() })).toThrow(/not a plain object \(Map\) at \$\.a/);
    expect(() => canonicalJson({ a: [1, undefined] })).toThrow(/at \$\.a\[1\]/);
    expect(() => canonicalJson({ a: 1n })).toThrow(CanonicalJsonError);
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(() => canonicalJson(circular)).toThrow(/circular/);
  });

  it('accepts a shared, non-circular subobject twice', () => {
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
  });
});
