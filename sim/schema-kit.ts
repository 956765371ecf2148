import { z } from 'zod';

/**
 * The building blocks of the scenario file format (sim/scenario-schema.ts) and of its parts (one file
 * per workload part in sim/workloads/, one per fault kind in sim/faults/). Every block carries the
 * words of what it expects, so an error reads `workload[2].tasks[0].priority: expected an integer
 * from 0 to 30, got 31`.
 */

/** An integer in [min, max] (max optional), with one message for every way it can be wrong. */
export function int(min: number, max?: number) {
  const expected = max === undefined ? (min === Number.MIN_SAFE_INTEGER ? 'expected an integer' : `expected an integer >= ${min}`) : `expected an integer from ${min} to ${max}`;
  const base = z.number({ error: expected }).int({ error: expected }).min(min, { error: expected });
  return max === undefined ? base : base.max(max, { error: expected });
}

export const positive = () => int(1);
export const nonNegative = () => int(0);
export const priority = () => int(0, 30);

export const probability = () => z.number({ error: 'expected a probability from 0 to 1' }).min(0, { error: 'expected a probability from 0 to 1' }).max(1, { error: 'expected a probability from 0 to 1' });

export const text = () => z.string({ error: 'expected a non-empty string' }).min(1, { error: 'expected a non-empty string' });

export const flag = () => z.boolean({ error: 'expected true or false' });

/** A [min, max] pair of integers, as the workload draws them: both inclusive, min <= max. */
export function range(min: number, max?: number) {
  const bounds = max === undefined ? `>= ${min}` : `from ${min} to ${max}`;
  return z
    .tuple([int(min, max), int(min, max)], { error: `expected [min, max], two integers ${bounds}` })
    .superRefine(([low, high], context) => {
      if (low > high) context.addIssue({ code: 'custom', message: `min ${low} is above max ${high}` });
    })
    .meta({ description: `[min, max], integers ${bounds}, min <= max` });
}

/** A strict object: an unknown field is refused (the message names the known ones and the closest). */
export function strict<Shape extends z.ZodRawShape>(shape: Shape, description?: string) {
  const schema = z.strictObject(shape);
  return description === undefined ? schema : schema.meta({ description });
}

export function list<T extends z.ZodType>(item: T, minLength = 0, what = 'an array') {
  const expected = minLength === 0 ? `expected ${what}` : `expected ${what} of at least ${minLength} item${minLength === 1 ? '' : 's'}`;
  return z.array(item, { error: expected }).min(minLength, { error: expected });
}

export function oneOf<const T extends readonly [string, ...string[]]>(values: T, what?: string) {
  const expected = `expected ${what === undefined ? '' : `${what}, `}one of ${values.map((value) => JSON.stringify(value)).join(', ')}`;
  return z.enum(values, { error: expected });
}

export const TIERS = ['standard', 'long'] as const;

/** A part of a scenario file: `{ "kind": "...", ...its options }`. */
export function part<const Kind extends string, Shape extends z.ZodRawShape>(kind: Kind, shape: Shape, description: string) {
  return strict({ kind: z.literal(kind), ...shape }, description);
}

type Defaulted<Shape extends z.ZodRawShape, Defaults> = {
  [K in keyof Shape]: K extends keyof Defaults ? z.ZodDefault<Shape[K]> : Shape[K];
};

/**
 * The same fields, each of `defaults` optional with that default (a fresh copy each time, so no two
 * scenarios share an array). The parts form states only what differs from these; the explicit form
 * (every field stated) uses the fields as they are.
 */
export function withDefaults<Shape extends z.ZodRawShape, const Defaults extends { [K in keyof Shape]?: z.output<Shape[K]> }>(shape: Shape, defaults: Defaults): Defaulted<Shape, Defaults> {
  const out: Record<string, z.ZodType> = {};
  for (const [key, schema] of Object.entries(shape)) {
    const value = (defaults as Record<string, unknown>)[key];
    out[key] = value === undefined ? (schema as z.ZodType) : (schema as z.ZodType).default(() => structuredClone(value) as never);
  }
  return out as Defaulted<Shape, Defaults>;
}
