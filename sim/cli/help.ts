import { COMMANDS, COMMAND_NAMES, type CommandSpec, type FlagSpec } from './command-specs.ts';
import { EXIT_COVERAGE, EXIT_HARNESS, EXIT_LIVENESS, EXIT_OK, EXIT_SAFETY, EXIT_USAGE } from './exit-codes.ts';

/** Usage text, rendered from the same table the parser reads, so the two cannot drift apart. */

const EXIT_CODE_LINES = [
  `  ${EXIT_OK}   all invariants hold`,
  `  ${EXIT_SAFETY}   a safety invariant failed`,
  `  ${EXIT_LIVENESS}   a liveness invariant failed`,
  `  ${EXIT_HARNESS}   nondeterminism or a harness crash`,
  `  ${EXIT_COVERAGE}   a required coverage mark was never reached`,
  `  ${EXIT_USAGE}  bad usage or a bad scenario file`,
];

export function globalHelp(): string {
  const width = Math.max(...COMMAND_NAMES.map((name) => name.length));
  return [
    'Usage: leasehold <command> [flags]',
    '',
    'Leasehold: a durable work queue for AI-agent tasks (SQLite on one host, PostgreSQL for a fleet), and the deterministic simulation that tests it.',
    '',
    'Commands:',
    ...COMMAND_NAMES.map((name) => `  ${name.padEnd(width)}  ${COMMANDS[name].summary}`),
    '',
    'Exit codes:',
    ...EXIT_CODE_LINES,
    '',
    'Run `leasehold <command> --help` for the flags of one command; `leasehold --version` prints the versions.',
  ].join('\n');
}

export function commandHelp(spec: CommandSpec): string {
  const lines = [`Usage: leasehold ${spec.name}${spec.synopsis === '' ? '' : ` ${spec.synopsis}`}`, '', `${capitalise(spec.summary)}.`, ''];
  const rows = [...spec.flags.map((flag) => [flagLabel(flag), flagHelp(flag)] as const), ['-h, --help', 'show this help'] as const];
  if (spec.positional !== undefined) rows.unshift([spec.positional.name, spec.positional.help]);
  const width = Math.max(...rows.map(([label]) => label.length));
  lines.push('Flags:', ...rows.map(([label, help]) => `  ${label.padEnd(width)}  ${help}`), '');
  lines.push(`Example: leasehold ${spec.example}`);
  return lines.join('\n');
}

function flagLabel(flag: FlagSpec): string {
  const names = [flag.name, ...(flag.aliases ?? [])].map((name) => `--${name}`).join(', ');
  return flag.kind === 'boolean' ? names : `${names} ${flag.valueName ?? 'VALUE'}`;
}

function flagHelp(flag: FlagSpec): string {
  const extras = [flag.repeatable === true ? 'repeatable' : '', flag.kind === 'integer' ? `at least ${flag.min ?? 1}` : ''].filter(Boolean);
  return extras.length === 0 ? flag.help : `${flag.help}; ${extras.join('; ')}`;
}

function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
