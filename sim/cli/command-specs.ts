/**
 * The `leasehold` commands and their flags (SPEC, CLI contract). This table is the single source for the
 * parser, the help text and the "Try:" hints, so a flag cannot be accepted without being documented.
 */

import { OPS_COMMAND_NAMES, OPS_COMMANDS } from './commands/ops-specs.ts';

export type FlagKind = 'string' | 'integer' | 'boolean' | 'shard';

export interface FlagSpec {
  /** Without the dashes: `seeds` is typed `--seeds`. */
  name: string;
  kind: FlagKind;
  /** May be given more than once; the values are kept in order. */
  repeatable?: boolean;
  /** The placeholder in usage text: `N`, `NAME|FILE`, `K/N`. */
  valueName?: string;
  /** A value that works, used in "Try:" hints. */
  example?: string;
  /** For integers: the smallest accepted value (default 1). */
  min?: number;
  /** A flag this one cannot be given with: a "Try:" hint for this one leaves it out of the example. */
  excludes?: string;
  /** Other names the flag answers to (`--fail-fast` for `--bail`), without the dashes; read under `name`. */
  aliases?: readonly string[];
  help: string;
}

export interface CommandSpec {
  name: CommandName;
  summary: string;
  /** The argument part of the usage line, after `leasehold <name>`. */
  synopsis: string;
  flags: readonly FlagSpec[];
  /** Positional arguments (only `replay FILE.json` has one). */
  /** Positional arguments: their name in the usage, how many at most, and what one is. */
  positional?: { name: string; max: number; help: string };
  /** A complete, working invocation without the leading `leasehold `. */
  example: string;
  /**
   * Flags that must be given. With `orPositional`, a positional argument may stand in for all of them
   * (`replay FILE.json`), and then none of them may be given. `optionalWith` names, per required flag,
   * another flag that stands in for it (`--agent FILE` for `--scenario`: the module's own scenario).
   */
  requires?: { flags: readonly string[]; orPositional?: boolean; optionalWith?: Readonly<Record<string, string>> };
}

export const COMMAND_NAMES = ['check', 'merge', 'replay', 'shrink', 'run', 'report', 'scenarios', 'start', 'demo', 'work', ...OPS_COMMAND_NAMES] as const;
export type CommandName = (typeof COMMAND_NAMES)[number];

/**
 * What `leasehold start` (npm start, "the main job") runs: the catalogue check with its default seeds,
 * writing its summary (and any counterexamples) under reports/latest/, with a report per scenario
 * (reports/latest/<scenario>/) built from the same seeds and a catalogue index (reports/latest/index.html).
 */
export const START_RUNS: Exclude<CommandName, 'start'> = 'check';
export const START_ARGS: readonly string[] = ['--out', 'reports/latest', '--report'];

const scenarioFlag = (repeatable: boolean): FlagSpec => ({
  name: 'scenario',
  kind: 'string',
  repeatable,
  valueName: 'NAME|FILE',
  example: 'mixed',
  help: repeatable
    ? 'a catalogue scenario name or a scenario file (default: the whole catalogue)'
    : 'a catalogue scenario name (see `leasehold scenarios`) or a scenario file',
});
const seedFlag: FlagSpec = { name: 'seed', kind: 'string', valueName: 'S', example: '42', help: 'the root seed (S2)' };
const seedsFlag: FlagSpec = { name: 'seeds', kind: 'integer', valueName: 'N', example: '100', help: 'how many seeds per scenario' };
const jsonFlag: FlagSpec = { name: 'json', kind: 'boolean', help: 'print one JSON object instead of text' };
const storeFlag: FlagSpec = {
  name: 'store',
  kind: 'string',
  valueName: 'STORE',
  example: 'pglite',
  help: "the database the worlds run on: sqlite (default) or pglite (the PostgreSQL store's own SQL, in-process on PGlite; faults beneath SQLite do not apply)",
};
const agentFlag: FlagSpec = {
  name: 'agent',
  kind: 'string',
  valueName: 'FILE',
  example: 'examples/ticket-agent/correct.ts',
  help: "your agent module (.ts, .mts or .mjs; default export defineAgent(...), as `leasehold work --agent` runs) instead of the built-in scripted model and tools, against twins of its external systems; see docs/agents-in-simulation.md",
};
const outFlag: FlagSpec = { name: 'out', kind: 'string', valueName: 'DIR', example: 'reports/latest', help: 'where to write reports' };

export const COMMANDS: Readonly<Record<CommandName, CommandSpec>> = {
  check: {
    name: 'check',
    summary: 'check every invariant over many seeds of the catalogue (the CI gate)',
    synopsis: '[--scenario NAME|FILE]... [--agent FILE] [--seeds N | --budget N] [--seed S] [--jobs J] [--shard K/N] [--junit FILE] [--out DIR] [--bail] [--explore FRACTION] [--store STORE]',
    flags: [
      scenarioFlag(true),
      { ...agentFlag, help: `${agentFlag.help}; without --scenario, the module's own scenario export (else mixed)` },
      { ...seedsFlag, excludes: 'budget', help: 'how many seeds per scenario, the same for each (default: --budget 100)' },
      {
        name: 'budget',
        kind: 'integer',
        excludes: 'seeds',
        valueName: 'N',
        example: '100',
        help: 'the thread time of N seeds of every scenario, split across scenarios by what each one finds per second (scenarios/calibration/yield.json, npm run calibrate); at least N/2 seeds each (default 100)',
      },
      storeFlag,
      { ...seedFlag, help: 'the root seed the run seeds derive from' },
      { name: 'jobs', kind: 'integer', valueName: 'J', example: '2', help: 'parallel workers (default: the number of cores)' },
      { name: 'shard', kind: 'shard', valueName: 'K/N', example: '1/4', help: 'run only the K-th of N equal parts (1 <= K <= N), for a CI matrix' },
      { name: 'junit', kind: 'string', valueName: 'FILE', example: 'reports/junit.xml', help: 'also write a JUnit XML report' },
      { ...outFlag, help: 'write summary.json and the counterexample files (DIR/failures) there' },
      {
        name: 'report',
        kind: 'boolean',
        help: 'also write a report per scenario (DIR/<scenario>/index.html, report.md, report.json) from the seeds run, and a catalogue index DIR/index.html; needs --out',
      },
      {
        name: 'bail',
        kind: 'boolean',
        aliases: ['fail-fast'],
        help: 'stop after the first failing seed (a violation, a failed expectation, nondeterminism): no further seed is started, the seeds already running finish, and the summary says how many seeds were not run; coverage is not judged on a check that stopped; the exit code is that of the failure',
      },
      {
        name: 'unseed-rate',
        kind: 'string',
        valueName: 'RATE',
        example: '5%',
        help: 'share of seeds run twice to compare trace hashes (S6), as 5% or 0.05; 0 turns it off (default 5%, at least one seed)',
      },
      {
        name: 'explore',
        kind: 'string',
        valueName: 'FRACTION',
        example: '50%',
        help: 'guided search: spend this share of each scenario\'s seeds (as 50% or 0.5) on children of the plain seeds whose runs reached the rarest marks and (mark, fault) pairs; deterministic, picks in the summary',
      },
    ],
    example: 'check --seeds 100',
  },
  merge: {
    name: 'merge',
    summary: 'combine the summaries of `check --shard K/N --out DIR` runs into one verdict, summary, JUnit report and catalogue index',
    synopsis: 'DIR... [--out DIR] [--junit FILE]',
    flags: [
      { ...outFlag, example: 'reports/merged', help: 'where to write the merged summary.json, index.md and index.html (default reports/merged)' },
      { name: 'junit', kind: 'string', valueName: 'FILE', example: 'reports/junit.xml', help: 'also write one JUnit XML report over every shard\'s seeds' },
    ],
    positional: { name: 'DIR', max: 1_000, help: 'a directory one `check --shard K/N --out DIR` run wrote (every shard of one run, each once)' },
    example: 'merge shard-1 shard-2 shard-3 shard-4',
  },
  replay: {
    name: 'replay',
    summary: 'replay one seed (or a counterexample file) and show the timeline around the first violation',
    synopsis: '(--scenario NAME|FILE --seed S | FILE.json) [--trace FILE.jsonl] [--store STORE] [--agent FILE]',
    flags: [
      scenarioFlag(false),
      seedFlag,
      storeFlag,
      { ...agentFlag, help: `${agentFlag.help} (with --seed, and --scenario or the module's own scenario; a counterexample file records its own)` },
      { name: 'trace', kind: 'string', valueName: 'FILE.jsonl', example: 'trace.jsonl', help: 'also write the full history as JSON lines' },
    ],
    positional: { name: 'FILE.json', max: 1, help: 'a counterexample file written by a failing check' },
    example: 'replay --scenario mixed --seed 42',
    requires: { flags: ['scenario', 'seed'], orPositional: true, optionalWith: { scenario: 'agent' } },
  },
  shrink: {
    name: 'shrink',
    summary: 'shrink a counterexample to a smaller workload and fault plan that still fails the same invariant, written as a counterexample that replays',
    synopsis: 'FILE.json [--out FILE.json] [--invariant ID] [--max-runs N] [--max-ms MS] [--store STORE] [--json]',
    flags: [
      { name: 'out', kind: 'string', valueName: 'FILE.json', example: 'shrunk.json', help: 'where to write the shrunk counterexample (default: FILE.shrunk.json beside FILE.json)' },
      { name: 'invariant', kind: 'string', valueName: 'ID', example: 'I8', help: "the invariant the shrunk case must still violate (default: the file's first violation's; harness for a crash)" },
      { name: 'max-runs', kind: 'integer', valueName: 'N', example: '100', help: 'candidate runs at most (default 100)' },
      { name: 'max-ms', kind: 'integer', valueName: 'MS', example: '120000', help: 'wall time at most, in milliseconds (default 120000); what is left when the budget runs out is written as it is' },
      { ...storeFlag, help: 'the database the counterexample ran on: sqlite (default) or pglite' },
      { ...jsonFlag, help: 'print one JSON object (what shrink() of leasehold/testing resolves to) instead of text' },
    ],
    positional: { name: 'FILE.json', max: 1, help: 'a counterexample file written by a failing check (or by run({ out }) or shrink)' },
    example: 'shrink reports/failures/mixed-42.json',
  },
  run: {
    name: 'run',
    summary: 'run one scenario with one seed and print its verdict, marks and metrics',
    synopsis: '--scenario NAME|FILE --seed S [--json] [--store STORE] [--agent FILE]',
    flags: [scenarioFlag(false), seedFlag, jsonFlag, storeFlag, { ...agentFlag, help: `${agentFlag.help}; without --scenario, the module's own scenario export (else mixed)` }],
    example: 'run --scenario mixed --seed 42',
    requires: { flags: ['scenario', 'seed'], optionalWith: { scenario: 'agent' } },
  },
  report: {
    name: 'report',
    summary: 'write a readable report (Markdown, JSON, HTML timeline) for one scenario',
    synopsis: '--scenario NAME|FILE [--seeds N] [--seed S] [--out DIR]',
    flags: [
      scenarioFlag(false),
      { ...seedsFlag, help: 'how many seeds to run (default 20)' },
      { ...seedFlag, help: 'the root seed the run seeds derive from, as in check (default: the git commit)' },
      { ...outFlag, example: 'reports/mixed', help: 'where to write report.md, report.json and index.html (default reports/<scenario>)' },
    ],
    example: 'report --scenario mixed --seeds 20',
    requires: { flags: ['scenario'] },
  },
  scenarios: {
    name: 'scenarios',
    summary: 'list the built-in scenario catalogue (scenarios/*.json), or print the scenario file format',
    synopsis: '[--json] [--schema]',
    flags: [jsonFlag, { name: 'schema', kind: 'boolean', help: 'print the scenario file format as a JSON Schema (scenarios/schema.json)' }],
    example: 'scenarios',
  },
  start: {
    name: 'start',
    summary: `the main job behind \`npm start\`: \`leasehold ${START_RUNS} ${START_ARGS.join(' ')}\``,
    synopsis: '',
    flags: [],
    example: 'start',
  },
  demo: {
    name: 'demo',
    summary: "seed 000's four-topic example on the real queue: group meal first, one incident candidate, supersede",
    synopsis: '[--json]',
    flags: [jsonFlag],
    example: 'demo',
  },
  work: {
    name: 'work',
    summary: 'run a supervised fleet of worker processes on a real queue with your agent module (W3); SIGTERM or Ctrl-C drains it',
    synopsis: '--db FILE|URL --agent MODULE [--processes N] [--slots N] [--drain-ms MS] [--schema NAME] [--config FILE]',
    flags: [
      { name: 'db', kind: 'string', valueName: 'FILE|URL', example: 'queue.sqlite', help: 'the queue: a SQLite file (created if missing) or a postgres:// URL' },
      {
        name: 'agent',
        kind: 'string',
        valueName: 'MODULE',
        example: 'agent.mjs',
        help: 'the agent module: default-exports defineAgent(...) (.mjs or .js; .ts and .mts when tsx is installed); see docs/workers.md',
      },
      { name: 'processes', kind: 'integer', valueName: 'N', example: '4', help: 'worker processes to keep running (default 2)' },
      { name: 'slots', kind: 'integer', valueName: 'N', example: '2', help: 'runs each process holds at once (default 1)' },
      { name: 'drain-ms', kind: 'integer', min: 0, valueName: 'MS', example: '30000', help: 'on SIGTERM, how long each process lets its runs finish before handing them back interrupted (R8; default 30000)' },
      { name: 'schema', kind: 'string', valueName: 'NAME', example: 'leasehold', help: 'PostgreSQL only: the schema the queue lives in' },
      {
        name: 'config',
        kind: 'string',
        valueName: 'FILE',
        example: 'queue-config.json',
        help: 'the queue configuration as a JSON object (leaseMs, maxAttempts, quotas, budgets...; default: the defaults); give the operator commands the same file',
      },
    ],
    example: 'work --db queue.sqlite --agent agent.mjs --processes 4',
    requires: { flags: ['db', 'agent'] },
  },
  // O1, O2: the operator's commands over a live queue (commands/ops-specs.ts).
  ...OPS_COMMANDS,
};

export function isCommandName(word: string): word is CommandName {
  return (COMMAND_NAMES as readonly string[]).includes(word);
}
