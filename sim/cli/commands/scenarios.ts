import type { ParsedArgs } from '../args.ts';
import type { CommandContext } from '../command-context.ts';
import { EXIT_HARNESS, EXIT_OK } from '../exit-codes.ts';
import { loadCatalogue, type ScenarioListing } from '../scenario-names.ts';

/**
 * `leasehold scenarios [--json] [--schema]`: the built-in catalogue (scenarios/*.json), one line each:
 * name, the seed it reproduces, what it does. `--schema` prints the scenario file format as a JSON
 * Schema instead (the one in scenarios/schema.json).
 */
export async function execute(args: ParsedArgs, context: CommandContext): Promise<number> {
  if (args.boolean('schema')) {
    const schema = await context.importSimModule('scenario-schema.ts');
    if (typeof schema?.scenarioJsonSchema !== 'function') throw new Error('sim/scenario-schema.ts does not export scenarioJsonSchema()');
    context.out(JSON.stringify((schema.scenarioJsonSchema as () => unknown)(), null, 2));
    return EXIT_OK;
  }
  // The registry lists each scenario's source too (the seed article it reproduces).
  const catalogue = (await loadCatalogue(context)) as (ScenarioListing & { source?: string })[] | undefined;
  if (catalogue === undefined) {
    context.err('leasehold: the scenario catalogue (sim/scenarios/registry.ts) is not in this build yet (issue #6); nothing to list. Try: leasehold demo');
    return EXIT_HARNESS;
  }
  if (args.boolean('json')) {
    context.out(JSON.stringify(catalogue.map(({ name, description, source }) => ({ name, description, source }))));
    return EXIT_OK;
  }
  const seeds = catalogue.map((entry) => seedOf(entry.source));
  const width = Math.max(0, ...catalogue.map((entry) => entry.name.length));
  const seedWidth = Math.max(0, ...seeds.map((seed) => seed.length));
  catalogue.forEach((entry, index) => {
    const seed = seedWidth === 0 ? '' : `${seeds[index]!.padEnd(seedWidth)}  `;
    context.out(`${entry.name.padEnd(width)}  ${seed}${entry.description}`);
  });
  context.out(`\n${catalogue.length} scenario${catalogue.length === 1 ? '' : 's'} in scenarios/. Run one: leasehold run --scenario ${catalogue[0]?.name ?? 'mixed'} --seed 42`);
  return EXIT_OK;
}

/** The seed article a scenario cites, short: 'seed 002', 'seeds 000 and 002'; the whole source when it names none. */
export function seedOf(source: string | undefined): string {
  if (source === undefined) return '';
  const match = /^seeds? \d+(?:(?:, | and )\d+)*/.exec(source);
  return match?.[0] ?? source;
}
