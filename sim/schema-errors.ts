import type { z } from 'zod';
import { closestMatch } from './cli/suggest.ts';

/**
 * zod issues as people read them: a field path and a sentence with what the file had, e.g.
 * `workload[2].tasks[0].priority` and `expected an integer from 0 to 30, got 31`.
 */

export interface ScenarioProblem {
  /** `workload[1].tasks[2].priority`; empty for the whole file. */
  field: string;
  /** `expected an integer from 0 to 30, got 31`. */
  problem: string;
}

/** `plan` + `timed[0].worker`: `plan.timed[0].worker`. */
export function joinField(prefix: string[], field: string): string {
  if (prefix.length === 0) return field;
  if (field === '') return prefix.join('.');
  return `${prefix.join('.')}${field.startsWith('[') ? '' : '.'}${field}`;
}

/** What an issue expected, in the file's words, when the schema did not say it itself. */
export function defaultExpectation(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      return `expected ${article(String(issue.expected))}`;
    case 'too_small':
    case 'too_big': {
      const bound = issue.code === 'too_small' ? issue.minimum : issue.maximum;
      const word = issue.code === 'too_small' ? 'at least' : 'at most';
      if (issue.origin === 'array' || issue.origin === 'set') return `expected ${word} ${String(bound)} item${Number(bound) === 1 ? '' : 's'}`;
      if (issue.origin === 'string') return Number(bound) === 1 && issue.code === 'too_small' ? 'expected a non-empty string' : `expected ${word} ${String(bound)} characters`;
      const strictly = issue.inclusive === false ? (issue.code === 'too_small' ? '>' : '<') : issue.code === 'too_small' ? '>=' : '<=';
      return `expected a number ${strictly} ${String(bound)}`;
    }
    case 'invalid_value':
      return issue.values.length === 1 ? `expected ${JSON.stringify(issue.values[0])}` : `expected one of ${issue.values.map((value) => JSON.stringify(value)).join(', ')}`;
    case 'unrecognized_keys': {
      // A strict object from elsewhere (an expectation kind's schema): name its fields all the same.
      const shape = (issue.inst as { _zod?: { def?: { shape?: object } } } | undefined)?._zod?.def?.shape;
      if (shape === undefined) return 'unknown field';
      const known = Object.keys(shape);
      const guess = closestMatch(String(issue.keys[0]), known);
      return `unknown field${guess === undefined ? '' : ` (did you mean ${guess}?)`}; known: ${known.join(', ')}`;
    }
    case 'invalid_union': {
      const options = (issue as { options?: unknown[] }).options;
      return Array.isArray(options) ? `expected one of ${options.map((option) => JSON.stringify(option)).join(', ')}` : undefined;
    }
    default:
      return undefined;
  }
}

function article(expected: string): string {
  const words: Record<string, string> = { int: 'an integer', object: 'an object', array: 'an array', tuple: 'an array', string: 'a string', number: 'a number', boolean: 'true or false', nonoptional: 'a value' };
  return words[expected] ?? expected;
}

/** Turns zod issues into field paths and sentences, with what the file had: `expected ..., got 31`. */
export function describeIssues(issues: readonly z.core.$ZodIssue[], input: unknown, prefix: readonly PropertyKey[] = []): ScenarioProblem[] {
  return issues.flatMap((issue) => describeIssue(issue, input, [...prefix, ...issue.path]));
}

/** The lists of a scenario file whose items are told apart by `kind`, and what their kinds are called. */
const KINDS_OF: Record<string, string> = { expect: 'expectation kind', workload: 'workload part', faults: 'fault kind' };

function describeIssue(issue: z.core.$ZodIssue, input: unknown, path: readonly PropertyKey[]): ScenarioProblem[] {
  const value = valueAt(input, path);
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => ({ field: formatPath([...path, key]), problem: issue.message }));
    case 'invalid_union': {
      if (issue.errors.length === 0) {
        // A discriminated union whose discriminator matched no option: say which values it may take.
        const kind = (issue as { discriminator?: string }).discriminator;
        const list = kind === 'kind' && path.length === 3 ? KINDS_OF[String(path[0])] : undefined;
        const what = list === undefined ? '' : `unknown ${list} ${JSON.stringify(value)}; `;
        return [{ field: formatPath(path), problem: value === undefined ? `is required (${issue.message})` : list !== undefined ? `${what}${issue.message}` : `${issue.message}, got ${shown(value)}` }];
      }
      // The value matched no option: when it had the wrong type for all of them, say which types would
      // do; otherwise follow the option it came closest to (whose first problem lies deepest in it).
      if (issue.errors.every((branch) => branch[0]?.code === 'invalid_type' && branch[0].path.length === 0)) {
        const message = `expected ${issue.errors.map((branch) => branch[0]!.message.replace(/^expected /, '')).join(' or ')}`;
        return [{ field: formatPath(path), problem: value === undefined ? `is required (${message})` : `${message}, got ${shown(value)}` }];
      }
      const depth = (branch: readonly z.core.$ZodIssue[]) => (branch[0] === undefined ? 0 : branch[0].path.length + (branch[0].code === 'invalid_type' ? 0 : 0.5));
      const closest = issue.errors.reduce((best, branch) => (depth(branch) > depth(best) ? branch : best));
      return describeIssues(closest, input, path);
    }
    case 'custom':
      return [{ field: formatPath(path), problem: issue.message }];
    default: {
      if (value === undefined) return [{ field: formatPath(path), problem: `is required (${issue.message})` }];
      return [{ field: formatPath(path), problem: `${issue.message}, got ${shown(value, issue.code)}` }];
    }
  }
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** `workload[1].tasks[2].priority` */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

function shown(value: unknown, code?: string): string {
  if (Array.isArray(value) && (code === 'too_small' || code === 'too_big')) return `${value.length} item${value.length === 1 ? '' : 's'}`;
  const json = JSON.stringify(value) ?? String(value);
  return json.length > 60 ? `${json.slice(0, 57)}...` : json;
}
