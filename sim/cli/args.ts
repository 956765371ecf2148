import { COMMANDS, COMMAND_NAMES, isCommandName, type CommandName, type CommandSpec, type FlagSpec } from './command-specs.ts';
import { commandLine } from './shell-quote.ts';
import { closestMatch } from './suggest.ts';
import { UsageError } from './usage-error.ts';

/**
 * A small, dependency-free argument parser for `leasehold`. Long flags take their value as
 * `--flag value` or `--flag=value`; boolean flags take none; `--` ends the flags. Every mistake is a
 * UsageError whose one line names the problem and a command that would work (S9: exit 64).
 */

/** `--shard K/N`: the K-th of N parts, 1-based, as in a CI matrix. */
export interface Shard {
  index: number;
  count: number;
}

type FlagValue = string | number | boolean | Shard;

export type ParsedCommandLine = { kind: 'help'; command?: CommandSpec } | { kind: 'command'; args: ParsedArgs };

/** The flags and positionals of one command, read through accessors that check the declared kind. */
export class ParsedArgs {
  constructor(
    readonly spec: CommandSpec,
    private readonly values: ReadonlyMap<string, readonly FlagValue[]>,
    readonly positionals: readonly string[],
  ) {}

  get command(): CommandName {
    return this.spec.name;
  }

  has(name: string): boolean {
    this.flag(name);
    return this.values.has(name);
  }

  /** The value of a single-valued string flag, or undefined when it was not given. */
  string(name: string): string | undefined {
    this.flag(name, 'string', false);
    return this.values.get(name)?.[0] as string | undefined;
  }

  /** Every value of a string flag, in the order given (empty when not given). */
  strings(name: string): string[] {
    this.flag(name, 'string');
    return [...((this.values.get(name) ?? []) as string[])];
  }

  integer(name: string): number | undefined {
    this.flag(name, 'integer', false);
    return this.values.get(name)?.[0] as number | undefined;
  }

  boolean(name: string): boolean {
    this.flag(name, 'boolean');
    return this.values.has(name);
  }

  shard(name: string): Shard | undefined {
    this.flag(name, 'shard', false);
    return this.values.get(name)?.[0] as Shard | undefined;
  }

  /** Plain data, for tests and `--json` echoes. */
  toJSON(): { command: CommandName; flags: Record<string, FlagValue | FlagValue[]>; positionals: string[] } {
    const flags: Record<string, FlagValue | FlagValue[]> = {};
    for (const [name, list] of this.values) {
      flags[name] = this.flag(name).repeatable ? [...list] : (list[0] as FlagValue);
    }
    return { command: this.command, flags, positionals: [...this.positionals] };
  }

  /** Asking for an undeclared flag, or as the wrong kind, is a programming error in a command module. */
  private flag(name: string, kind?: FlagSpec['kind'], repeatable?: boolean): FlagSpec {
    const flag = this.spec.flags.find((candidate) => candidate.name === name);
    if (flag === undefined) throw new Error(`leasehold ${this.command} declares no flag --${name}`);
    if (kind !== undefined && flag.kind !== kind) throw new Error(`--${name} of ${this.command} is a ${flag.kind} flag, not ${kind}`);
    if (repeatable === false && flag.repeatable === true) throw new Error(`--${name} of ${this.command} is repeatable; read it with strings()`);
    return flag;
  }
}

/** Splits off the command word, notices help requests, and parses the rest with that command's flags. */
export function parseCommandLine(argv: readonly string[]): ParsedCommandLine {
  const beforeDoubleDash = argv.includes('--') ? argv.slice(0, argv.indexOf('--')) : argv;
  const wantsHelp = beforeDoubleDash.some((token) => token === '--help' || token === '-h');
  const [first, ...rest] = argv;
  if (first === 'help') return { kind: 'help', command: rest[0] === undefined ? undefined : commandSpec(rest[0]) };
  if (first === undefined || first.startsWith('-')) {
    if (wantsHelp) return { kind: 'help' };
    throw noCommand(first === undefined ? undefined : argv);
  }
  const spec = commandSpec(first);
  if (wantsHelp) return { kind: 'help', command: spec };
  return { kind: 'command', args: parseFlags(spec, rest) };
}

/** The spec of a command word, or a UsageError suggesting the nearest command. */
export function commandSpec(word: string): CommandSpec {
  if (isCommandName(word)) return COMMANDS[word];
  const guess = closestMatch(word, COMMAND_NAMES);
  const tryInstead = guess === undefined ? 'leasehold --help' : `leasehold ${COMMANDS[guess as CommandName].example}`;
  return raise(`unknown command '${word}' (commands: ${COMMAND_NAMES.join(', ')})`, tryInstead, guess);
}

export function parseFlags(spec: CommandSpec, tokens: readonly string[]): ParsedArgs {
  const values = new Map<string, FlagValue[]>();
  const positionals: string[] = [];
  let flagsEnded = false;
  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index] as string;
    if (!flagsEnded && token === '--') {
      flagsEnded = true;
    } else if (!flagsEnded && looksLikeFlag(token)) {
      const equals = token.indexOf('=');
      const name = (equals < 0 ? token : token.slice(0, equals)).replace(/^-+/, '');
      const flag = spec.flags.find((candidate) => candidate.name === name && token.startsWith('--'));
      if (flag === undefined) throw unknownFlag(spec, equals < 0 ? token : token.slice(0, equals));
      let raw = equals < 0 ? undefined : token.slice(equals + 1);
      if (flag.kind !== 'boolean' && raw === undefined) {
        const next = tokens[index + 1];
        if (next !== undefined && next !== '--' && !looksLikeFlag(next)) {
          raw = next;
          index++;
        }
      }
      const list = values.get(name) ?? [];
      if (list.length > 0 && flag.repeatable !== true) raise(`--${name} was given twice`, tryWith(spec, flag));
      list.push(convert(spec, flag, raw));
      values.set(name, list);
    } else if (spec.positional !== undefined && positionals.length < spec.positional.max) {
      positionals.push(token);
    } else {
      raise(`unexpected argument '${token}' for ${spec.name}`, `leasehold ${spec.example}`);
    }
  }
  checkRequired(spec, values, positionals, tokens);
  return new ParsedArgs(spec, values, positionals);
}

/** `-x`, `--name`; but not `-` (stdin by convention) or a negative number given as a value. */
function looksLikeFlag(token: string): boolean {
  return token.startsWith('-') && token.length > 1 && !/^-\d/.test(token);
}

function convert(spec: CommandSpec, flag: FlagSpec, raw: string | undefined): FlagValue {
  const shown = `--${flag.name}`;
  if (flag.kind === 'boolean') {
    if (raw === undefined || raw === 'true') return true;
    return raise(`${shown} takes no value (got '${raw}')`, tryWith(spec, flag));
  }
  if (raw === undefined || raw === '') return raise(`${shown} needs a value (${flag.valueName ?? 'VALUE'})`, tryWith(spec, flag));
  if (flag.kind === 'string') return raw;
  if (flag.kind === 'integer') {
    const min = flag.min ?? 1;
    const value = /^\d+(_\d+)*$/.test(raw) ? Number(raw.replaceAll('_', '')) : Number.NaN;
    if (!Number.isSafeInteger(value) || value < min) {
      return raise(`${shown} expects a whole number >= ${min}, got '${raw}'`, tryWith(spec, flag));
    }
    return value;
  }
  const match = /^(\d+)\/(\d+)$/.exec(raw);
  const shard = match === null ? undefined : { index: Number(match[1]), count: Number(match[2]) };
  if (shard === undefined || shard.count < 1 || shard.index < 1 || shard.index > shard.count) {
    return raise(`${shown} expects K/N with 1 <= K <= N (the K-th of N parts), got '${raw}'`, tryWith(spec, flag));
  }
  return shard;
}

function checkRequired(spec: CommandSpec, values: ReadonlyMap<string, unknown>, positionals: readonly string[], tokens: readonly string[]): void {
  const requires = spec.requires;
  if (requires === undefined) return;
  const given = requires.flags.filter((name) => values.has(name));
  if (requires.orPositional === true && positionals.length > 0) {
    if (given.length > 0) {
      raise(`${spec.name} takes either ${spec.positional?.name} or ${flagList(requires.flags)}, not both`, `leasehold ${spec.name} ${positionals[0]}`);
    }
    return;
  }
  const missing = requires.flags.filter((name) => !values.has(name));
  if (missing.length === 0) return;
  const alternative = requires.orPositional === true ? `, or a ${spec.positional?.name}` : '';
  const completion = missing.flatMap((name) => [`--${name}`, spec.flags.find((flag) => flag.name === name)?.example ?? 'VALUE']);
  raise(`${spec.name} needs ${flagList(missing)}${alternative}`, `leasehold ${commandLine([spec.name, ...tokens, ...completion])}`);
}

function unknownFlag(spec: CommandSpec, typed: string): UsageError {
  const bare = typed.replace(/^-+/, '');
  const guess = closestMatch(bare, spec.flags.map((flag) => flag.name));
  if (guess !== undefined) {
    const flag = spec.flags.find((candidate) => candidate.name === guess) as FlagSpec;
    return new UsageError(`unknown flag ${typed} for ${spec.name}`, tryWith(spec, flag), `--${guess}`);
  }
  const owners = COMMAND_NAMES.filter((name) => COMMANDS[name].flags.some((flag) => flag.name === bare));
  const known = spec.flags.length === 0 ? 'it takes no flags' : `it takes ${flagList(spec.flags.map((flag) => flag.name))}`;
  const elsewhere = owners.length === 0 ? '' : `; ${typed} belongs to ${owners.join(', ')}`;
  return new UsageError(`unknown flag ${typed} for ${spec.name} (${known}${elsewhere})`, `leasehold ${spec.example}`);
}

function noCommand(argv: readonly string[] | undefined): UsageError {
  if (argv === undefined) return new UsageError('no command given', 'leasehold start (or leasehold --help for every command)');
  const bare = (argv[0] as string).replace(/^-+/, '').split('=')[0] as string;
  const owner = COMMAND_NAMES.find((name) => COMMANDS[name].flags.some((flag) => flag.name === bare));
  const tryInstead = owner === undefined ? 'leasehold --help' : `leasehold ${commandLine([owner, ...argv])}`;
  return new UsageError(`'${argv[0]}' is not a command; the command comes first`, tryInstead);
}

/** A working command line that uses `flag`: the command's example, with the flag added if it lacks it. */
export function tryWith(spec: CommandSpec, flag: FlagSpec): string {
  const example = `leasehold ${spec.example}`;
  if (example.split(' ').includes(`--${flag.name}`)) return example;
  return flag.kind === 'boolean' ? `${example} --${flag.name}` : `${example} --${flag.name} ${flag.example ?? flag.valueName ?? 'VALUE'}`;
}

function flagList(names: readonly string[]): string {
  const flags = names.map((name) => `--${name}`);
  return flags.length <= 1 ? flags.join('') : `${flags.slice(0, -1).join(', ')} and ${flags.at(-1)}`;
}

function raise(problem: string, tryInstead: string, didYouMean?: string): never {
  throw new UsageError(problem, tryInstead, didYouMean);
}
