import { describe, expect, it } from 'vitest';
import { commandSpec, parseCommandLine, parseFlags, type ParsedArgs } from './args.ts';
import { COMMANDS } from './command-specs.ts';
import { commandHelp } from './help.ts';
import { closestMatch, editDistance } from './suggest.ts';
import { UsageError } from './usage-error.ts';

function parse(...argv: string[]): ParsedArgs {
  const parsed = parseCommandLine(argv);
  if (parsed.kind !== 'command') throw new Error(`expected a command, got help`);
  return parsed.args;
}

function usageLine(...argv: string[]): string {
  try {
    parseCommandLine(argv);
  } catch (error) {
    if (error instanceof UsageError) return error.line();
    throw error;
  }
  throw new Error(`expected a usage error for ${argv.join(' ')}`);
}

describe('leasehold argument parser (node:util parseArgs, typed by command-specs.ts)', () => {
  it('reads --flag value and --flag=value alike', () => {
    expect(parse('run', '--scenario', 'mixed', '--seed', '42').toJSON()).toEqual(parse('run', '--scenario=mixed', '--seed=42').toJSON());
    expect(parse('run', '--scenario=mixed', '--seed', '42').string('seed')).toBe('42');
  });

  it('keeps a value that contains = after the first one', () => {
    expect(parse('run', '--scenario=a=b.json', '--seed', 's').string('scenario')).toBe('a=b.json');
  });

  it('collects a repeatable --scenario in order', () => {
    const args = parse('check', '--scenario', 'mixed', '--scenario=queue-full', '--seeds', '10');
    expect(args.strings('scenario')).toEqual(['mixed', 'queue-full']);
    expect(args.integer('seeds')).toBe(10);
  });

  it('accepts --flag=true for a boolean', () => {
    expect(parse('run', '--scenario', 'x', '--seed', '1', '--json=true').boolean('json')).toBe(true);
  });

  it('reads booleans, integers with underscores, and K/N shards', () => {
    const args = parse('check', '--seeds', '10_000', '--jobs=2', '--shard', '3/4');
    expect(args.integer('seeds')).toBe(10_000);
    expect(args.integer('jobs')).toBe(2);
    expect(args.shard('shard')).toEqual({ index: 3, count: 4 });
    expect(parse('run', '--scenario', 'x', '--seed', '1', '--json').boolean('json')).toBe(true);
    expect(parse('run', '--scenario', 'x', '--seed', '1').boolean('json')).toBe(false);
  });

  it('takes a negative-looking seed as a value and ends flags at --', () => {
    expect(parse('run', '--scenario', 'x', '--seed', '-7').string('seed')).toBe('-7');
    expect(parse('replay', '--', '--odd-name.json').positionals).toEqual(['--odd-name.json']);
  });

  it('accepts replay FILE.json or --scenario with --seed, not both and not neither', () => {
    expect(parse('replay', 'reports/failures/x.json').positionals).toEqual(['reports/failures/x.json']);
    expect(parse('replay', '--scenario', 'mixed', '--seed', '1').positionals).toEqual([]);
    expect(usageLine('replay', 'x.json', '--seed', '1')).toMatch(/either FILE\.json or --scenario and --seed, not both/);
    expect(usageLine('replay')).toMatch(/replay needs --scenario and --seed, or a FILE\.json/);
  });

  it('recognises help anywhere, globally and per command', () => {
    expect(parseCommandLine(['--help'])).toEqual({ kind: 'help' });
    expect(parseCommandLine(['-h'])).toEqual({ kind: 'help' });
    expect(parseCommandLine(['run', '--seed', '1', '-h'])).toEqual({ kind: 'help', command: COMMANDS.run });
    expect(parseCommandLine(['help', 'check'])).toEqual({ kind: 'help', command: COMMANDS.check });
    expect(parseCommandLine(['check', '--bogus', '--help'])).toEqual({ kind: 'help', command: COMMANDS.check });
    // A flag that takes a value does not swallow --help.
    expect(parseCommandLine(['run', '--seed', '--help'])).toEqual({ kind: 'help', command: COMMANDS.run });
    expect(parseCommandLine(['replay', '--', '--help'])).toMatchObject({ kind: 'command' });
  });

  it("describes each command's positional argument as what it is: merge's a shard's directory, replay's a counterexample file", () => {
    const row = (name: 'merge' | 'replay', label: string) => commandHelp(COMMANDS[name]).split('\n').find((line) => line.trimStart().startsWith(`${label} `));
    expect(row('merge', 'DIR')).toMatch(/check --shard K\/N --out DIR/);
    expect(row('replay', 'FILE.json')).toMatch(/counterexample file/);
  });

  it('refuses to read a flag the command does not declare, or as the wrong kind', () => {
    const args = parse('run', '--scenario', 'x', '--seed', '1');
    expect(() => args.string('seeds')).toThrow(/declares no flag --seeds/);
    expect(() => args.integer('seed')).toThrow(/string flag/);
    expect(() => parse('check').string('scenario')).toThrow(/repeatable/);
  });
});

describe('usage errors say what was wrong and what to type instead', () => {
  it.each([
    [['chek', '--seeds', '100'], "unknown command 'chek'", 'Did you mean check? Try: leasehold check --seeds 100'],
    [['check', '--seeds-count', '100'], 'unknown flag --seeds-count for check', 'Did you mean --seeds? Try: leasehold check --seeds 100'],
    [['check', '--sed', '1'], 'unknown flag --sed for check', 'Did you mean --seed? Try: leasehold check --seeds 100 --seed 42'],
    [['check', '--seeds'], '--seeds needs a value (N)', 'Try: leasehold check --seeds 100'],
    [['check', '--seeds', '--jobs', '2'], '--seeds needs a value (N)', 'Try: leasehold check --seeds 100'],
    [['check', '--seeds', '--'], '--seeds needs a value (N)', 'Try: leasehold check --seeds 100'],
    [['check', '--jobs='], '--jobs needs a value (J)', 'Try: leasehold check --seeds 100 --jobs 2'],
    [['check', '-seeds', '100'], 'unknown flag -seeds for check', 'Did you mean --seeds? Try: leasehold check --seeds 100'],
    [['check', '--seeds', 'ten'], "--seeds expects a whole number >= 1, got 'ten'", 'Try: leasehold check --seeds 100'],
    [['check', '--seeds', '0'], "--seeds expects a whole number >= 1, got '0'", 'Try: leasehold check --seeds 100'],
    // --budget and --seeds do not go together: the hint for one leaves the other out.
    [['check', '--budget', '0'], "--budget expects a whole number >= 1, got '0'", 'Try: leasehold check --budget 100'],
    [['check', '--jobs', '1.5'], "--jobs expects a whole number >= 1, got '1.5'", 'Try: leasehold check --seeds 100 --jobs 2'],
    [['check', '--shard', '5/4'], "--shard expects K/N with 1 <= K <= N (the K-th of N parts), got '5/4'", 'Try: leasehold check --seeds 100 --shard 1/4'],
    [['check', '--shard', '0/4'], "got '0/4'", 'Try: leasehold check --seeds 100 --shard 1/4'],
    [['check', '--shard=2'], "got '2'", 'Try: leasehold check --seeds 100 --shard 1/4'],
    [['check', '--seed', '1', '--seed', '2'], '--seed was given twice', 'Try: leasehold check --seeds 100 --seed 42'],
    [['run', '--seed', '7'], 'run needs --scenario', 'Try: leasehold run --seed 7 --scenario mixed'],
    [['run'], 'run needs --scenario and --seed', 'Try: leasehold run --scenario mixed --seed 42'],
    [['run', '--scenario', 'x', '--seed', '1', '--json=yes'], "--json takes no value (got 'yes')", 'Try: leasehold run --scenario mixed --seed 42 --json'],
    [['run', '--seeds', '5'], 'unknown flag --seeds for run', 'Did you mean --seed? Try: leasehold run --scenario mixed --seed 42'],
    [['run', '--junit', 'x.xml'], '--junit belongs to check', 'Try: leasehold run --scenario mixed --seed 42'],
    [['start', '--seeds', '5'], 'unknown flag --seeds for start (it takes no flags; --seeds belongs to check, report)', 'Try: leasehold start'],
    [['replay', 'a.json', 'b.json'], "unexpected argument 'b.json' for replay", 'Try: leasehold replay --scenario mixed --seed 42'],
    [['scenarios', 'extra'], "unexpected argument 'extra' for scenarios", 'Try: leasehold scenarios'],
    [['--seeds', '100'], "'--seeds' is not a command; the command comes first", 'Try: leasehold check --seeds 100'],
    [[], 'no command given', 'Try: leasehold start'],
    [['help', 'nope'], "unknown command 'nope'", 'Try: leasehold --help'],
  ])('%j', (argv, problem, fix) => {
    const line = usageLine(...argv);
    expect(line.startsWith('leasehold: ')).toBe(true);
    expect(line).toContain(problem);
    expect(line).toContain(fix);
    expect(line).not.toContain('\n');
  });
});

describe('did-you-mean', () => {
  it('prefers a shared prefix, then a small edit distance, and gives up on far words', () => {
    expect(closestMatch('seeds-count', ['scenario', 'seeds', 'seed'])).toBe('seeds');
    expect(closestMatch('scenaro', ['scenario', 'seeds'])).toBe('scenario');
    expect(closestMatch('zzz', ['check', 'run'])).toBeUndefined();
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });

  it('finds the command for a typo, and start needs no flags', () => {
    expect(() => commandSpec('repaly')).toThrow(UsageError);
    expect(parseFlags(COMMANDS.start, []).toJSON()).toEqual({ command: 'start', flags: {}, positionals: [] });
  });
});
