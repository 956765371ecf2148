import { scenarioJsonSchema } from '../../scenario-schema.ts';
import { DEFAULT_SCENARIO, listScenarios } from '../../scenarios/registry.ts';
import type { ParsedArgs } from '../args.ts';
import type { CommandContext } from '../command-context.ts';
import { EXIT_OK } from '../exit-codes.ts';

/**
 * `leasehold scenarios [--json] [--schema]`: the built-in catalogue (scenarios/*.json), one line each:
 * name, the seed it reproduces, what it does. `--schema` prints the scenario file format as a JSON
 * Schema instead (the one in scenarios/schema.json).
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
  const seeds = catalogue.map((entry) => seedOf(entry.source));
  const width = Math.max(...catalogue.map((entry) => entry.name.length));
  const seedWidth = Math.max(...seeds.map((seed) => seed.length));
  catalogue.forEach((entry, index) => context.out(`${entry.name.padEnd(width)}  ${seeds[index]!.padEnd(seedWidth)}  ${entry.description}`));
  context.out(`\n${catalogue.length} scenario${catalogue.length === 1 ? '' : 's'} in scenarios/. Run one: leasehold run --scenario ${DEFAULT_SCENARIO} --seed 42`);
  return EXIT_OK;
}

/** The seed article a scenario cites, short: 'seed 002', 'seeds 000 and 002'; the whole source when it names none. */
export function seedOf(source: string): string {
  const match = /^seeds? \d+(?:(?:, | and )\d+)*/.exec(source);
  return match?.[0] ?? source;
}
