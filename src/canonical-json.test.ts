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

  it('names what is wrong and where, in a typed error', () => {
    const refusal = (value: unknown) => {
      try {
        canonicalJson(value);
      } catch (error) {
        return error;
      }
      throw new Error('expected a refusal');
    };
    const nan = refusal({ a: [1, { b: Number.NaN }] }) as CanonicalJsonError;
    expect(nan).toBeInstanceOf(CanonicalJsonError);
    expect(nan).toBeInstanceOf(TypeError);
    expect(nan.name).toBe('CanonicalJsonError');
    expect(nan.path).toBe('$.a[1].b');
    expect(nan.message).toBe('non-finite number NaN at $.a[1].b');
    expect((refusal({ n: 10n }) as Error).message).toBe('unsupported bigint at $.n');
    expect((refusal([() => 1]) as Error).message).toBe('unsupported function at $[0]');
    class Money {
      constructor(readonly cents: number) {}
    }
    expect((refusal({ price: new Money(5) }) as Error).message).toBe('not a plain object (Money) at $.price');
    // A prototype that is neither Object.prototype nor null, and has no constructor.
    expect((refusal({ odd: Object.create(Object.create(null)) }) as Error).message).toBe('not a plain object (unknown) at $.odd');
    const loop: unknown[] = [];
    loop.push({ back: loop });
    expect((refusal(loop) as Error).message).toBe('circular reference at $[0].back');
  });

  it('accepts objects with no prototype, as JSON.parse-like builders make them', () => {
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { b: 1, a: 2 });
    expect(canonicalJson(bare)).toBe('{"a":2,"b":1}');
  });

  it('bounds nesting at 64 levels below the root, naming the path where it gave up', () => {
    const nest = (levels: number): unknown => (levels === 0 ? 1 : [nest(levels - 1)]);
    expect(canonicalJson(nest(64))).toBe(`${'['.repeat(64)}1${']'.repeat(64)}`);
    expect(() => canonicalJson(nest(65))).toThrow(new CanonicalJsonError('nested deeper than 64', `$${'[0]'.repeat(65)}`));
    const deepObject = (levels: number): unknown => (levels === 0 ? 1 : { k: deepObject(levels - 1) });
    expect(canonicalJson(deepObject(64))).toContain('"k":1');
    expect(() => canonicalJson(deepObject(65))).toThrow(/nested deeper than 64 at \$(\.k){65}$/);
  });
});

