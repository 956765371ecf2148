import { cut, terminalStyle, wrap } from '../../../src/ops/table.ts';
import { scenarioJsonSchema } from '../../scenario-schema.ts';
import { DEFAULT_SCENARIO, listScenarios } from '../../scenarios/registry.ts';
import type { ParsedArgs } from '../args.ts';
import type { CommandContext } from '../command-context.ts';
import { EXIT_OK } from '../exit-codes.ts';

/**
 * `leasehold scenarios [--json] [--schema]`: the built-in catalogue (scenarios/*.json), one entry each:
 * name, the seed it reproduces, what it does. On a terminal (or with COLUMNS) each entry fits the
 * width: the seed column takes at most a third of what the names leave, cut with an ellipsis, and the
 * description wraps under its own column; unlimited otherwise, one line each (`--json` has every source
 * whole). `--schema` prints the scenario file format as a JSON Schema instead (scenarios/schema.json).
 */
export async function execute(args: ParsedArgs, context: CommandContext): Promise<number> {
  if (args.boolean('schema')) {
    context.out(JSON.stringify(scenarioJsonSchema(), null, 2));
    return EXIT_OK;
  }
  const catalogue = listScenarios();
  if (args.boolean('json')) {
    context.out(JSON.stringify(catalogue));
    return EXIT_OK;
  }
  const { width: columns } = terminalStyle(process.stdout, process.env);
  const seeds = catalogue.map((entry) => seedOf(entry.source));
  const width = Math.max(...catalogue.map((entry) => entry.name.length));
  const seedWidth = Math.min(Math.max(...seeds.map((seed) => seed.length)), Math.max(8, Math.floor((columns - width - 4) / 3)));
  const indent = ' '.repeat(width + 2 + seedWidth + 2);
  catalogue.forEach((entry, index) => {
    const [first = '', ...rest] = wrap(entry.description, columns, indent);
    const head = `${entry.name.padEnd(width)}  ${cut(seeds[index]!, seedWidth).padEnd(seedWidth)}  `;
    context.out([head + first.slice(indent.length), ...rest].join('\n'));
  });
  context.out(['', ...wrap(`${catalogue.length} scenario${catalogue.length === 1 ? '' : 's'} in scenarios/. Run one: leasehold run --scenario ${DEFAULT_SCENARIO} --seed 42`, columns)].join('\n'));
  return EXIT_OK;
}

/** The seed article a scenario cites, short: 'seed 002', 'seeds 000 and 002'; the whole source when it names none. */
export function seedOf(source: string): string {
  const match = /^seeds? \d+(?:(?:, | and )\d+)*/.exec(source);
  return match?.[0] ?? source;
}
