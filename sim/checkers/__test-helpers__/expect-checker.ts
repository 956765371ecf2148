import { expect } from 'vitest';
import type { WorldResult } from '../../world.ts';
import type { Checker } from '../types.ts';

/** Asserts that `checker` fails `world` with a violation of its own invariant whose message matches. */
export function expectViolation(checker: Checker, world: WorldResult, message: RegExp): void {
  const violations = checker.check(world);
  expect(violations.length, `${checker.invariant} should fail this history`).toBeGreaterThan(0);
  for (const violation of violations) {
    expect(violation.invariant).toBe(checker.invariant);
    expect(violation.kind).toBe(checker.kind);
  }
  expect(violations.map((violation) => violation.message).join('\n')).toMatch(message);
}

/** Asserts that `checker` finds nothing wrong with `world`. */
export function expectClean(checker: Checker, world: WorldResult): void {
  expect(checker.check(world).map((violation) => violation.message)).toEqual([]);
}
