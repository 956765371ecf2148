import { parseArgs } from 'node:util';
import { COMMANDS, COMMAND_NAMES, isCommandName, type CommandName, type CommandSpec, type FlagSpec } from './command-specs.ts';
import { commandLine } from './shell-quote.ts';
import { closestMatch } from './suggest.ts';
import { UsageError } from './usage-error.ts';

/**
 * The `leasehold` command line. node:util's parseArgs splits the words (`--flag value`, `--flag=value`,
 * `--`, positionals); this file checks each flag against the command's spec in command-specs.ts and
 * types its value, so that every mistake is a UsageError whose one line names the flag, what was wrong
 * and a command that would work (S9: exit 64).
 *
 * parseArgs runs with `strict: false` and its tokens are checked here instead. Strict mode would refuse
 * `--seed -7` (a value that starts with a dash), and its errors name the flag only inside their English
 * message, with nothing to hang a "did you mean" or a "Try:" on.
 */

/** `--shard K/N`: the K-th of N parts, 1-based, as in a CI matrix. */
export interface Shard {
  index: number;
  count: number;
}

type FlagValue = string | number | boolean | Shard;

export type ParsedCommandLine = { kind: 'help'; command?: CommandSpec } | { kind: 'version' } | { kind: 'command'; args: ParsedArgs };

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
  const [first, ...rest] = argv;
  if (first === 'help') return { kind: 'help', command: rest[0] === undefined ? undefined : commandSpec(rest[0]) };
  const wantsHelp = asksForHelp(argv);
  if (first === undefined || first.startsWith('-')) {
    if (wantsHelp) return { kind: 'help' };
    if ((first === '--version' || first === '-V') && rest.length === 0) return { kind: 'version' };
    throw noCommand(first === undefined ? undefined : argv);
  }
  const spec = commandSpec(first);
  if (wantsHelp) return { kind: 'help', command: spec };
  return { kind: 'command', args: parseFlags(spec, rest) };
}

/**
 * `--help` or `-h` anywhere before `--`, whatever else the line gets wrong: asking for help beats a usage
 * error. Only help is declared here, so no other flag can take it as its value.
 */
function asksForHelp(argv: readonly string[]): boolean {
  return parseArgs({ args: [...argv], options: { help: { type: 'boolean', short: 'h' } }, strict: false, allowPositionals: true }).values.help === true;
}

/** The spec of a command word, or a UsageError suggesting the nearest command. */
export function commandSpec(word: string): CommandSpec {
  if (isCommandName(word)) return COMMANDS[word];
  const guess = closestMatch(word, COMMAND_NAMES);
  const tryInstead = guess === undefined ? 'leasehold --help' : `leasehold ${COMMANDS[guess as CommandName].example}`;
  return raise(`unknown command '${word}' (commands: ${COMMAND_NAMES.join(', ')})`, tryInstead, guess);
}

export function parseFlags(spec: CommandSpec, words: readonly string[]): ParsedArgs {
  const options = Object.fromEntries(spec.flags.flatMap((flag) => [flag.name, ...(flag.aliases ?? [])].map((name) => [name, { type: flag.kind === 'boolean' ? 'boolean' : 'string' } as const])));
  const { tokens } = parseArgs({ args: [...words], options, strict: false, allowPositionals: true, tokens: true });
  const values = new Map<string, FlagValue[]>();
  const positionals: string[] = [];
  for (const token of tokens) {
    if (token.kind === 'positional') {
      if (positionals.length >= (spec.positional?.max ?? 0)) raise(`unexpected argument '${token.value}' for ${spec.name}`, `leasehold ${spec.example}`);
      positionals.push(token.value);
    } else if (token.kind === 'option') {
      const flag = spec.flags.find((candidate) => `--${candidate.name}` === token.rawName || (candidate.aliases ?? []).some((alias) => `--${alias}` === token.rawName));
      // The word as typed (`-seeds` reaches here as the short flags -s -e -e -d -s), up to its `=`.
      if (flag === undefined) throw unknownFlag(spec, (words[token.index] as string).split('=')[0] as string);
      const given = values.get(flag.name) ?? [];
      if (given.length > 0 && flag.repeatable !== true) raise(`--${flag.name} was given twice`, tryWith(spec, flag));
      values.set(flag.name, [...given, convert(spec, flag, token)]);
    }
  }
  checkRequired(spec, values, positionals, words);
  return new ParsedArgs(spec, values, positionals);
}

/** `-x`, `--name`; but not `-` (stdin by convention) or a negative number given as a value. */
function looksLikeFlag(word: string): boolean {
  return word.startsWith('-') && word.length > 1 && !/^-\d/.test(word);
}

/** Types the value of one flag token from parseArgs (`inlineValue`: it came after an `=`). */
function convert(spec: CommandSpec, flag: FlagSpec, token: { value?: string | undefined; inlineValue?: boolean | undefined }): FlagValue {
  const shown = `--${flag.name}`;
  const raw = token.value;
  if (flag.kind === 'boolean') {
    if (raw === undefined || raw === 'true') return true;
    return raise(`${shown} takes no value (got '${raw}')`, tryWith(spec, flag));
  }
  // parseArgs gives a flag the next word even when that is another flag (`--seeds --jobs 2`).
  if (raw === undefined || raw === '' || (token.inlineValue !== true && looksLikeFlag(raw))) {
    return raise(`${shown} needs a value (${flag.valueName ?? 'VALUE'})`, tryWith(spec, flag));
  }
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
  const standIn = (name: string) => requires.optionalWith?.[name] !== undefined && values.has(requires.optionalWith[name] as string);
  const missing = requires.flags.filter((name) => !values.has(name) && !standIn(name));
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
  const words = `leasehold ${spec.example}`.split(' ');
  // Leave out of the example a flag that cannot go with this one (check's --seeds and --budget).
  const excluded = flag.excludes === undefined ? -1 : words.indexOf(`--${flag.excludes}`);
  if (excluded >= 0) words.splice(excluded, 2);
  const example = words.join(' ');
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
