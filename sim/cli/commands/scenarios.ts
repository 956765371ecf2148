import type { ParsedArgs } from '../args.ts';
import type { CommandContext } from '../command-context.ts';
import { EXIT_HARNESS, EXIT_OK } from '../exit-codes.ts';
import { loadCatalogue } from '../scenario-names.ts';

/** `leasehold scenarios [--json]`: the built-in catalogue, one line each. */
export async function execute(args: ParsedArgs, context: CommandContext): Promise<number> {
  const catalogue = await loadCatalogue(context);
  if (catalogue === undefined) {
    context.err('leasehold: the scenario catalogue (sim/scenarios/registry.ts) is not in this build yet (issue #6); nothing to list. Try: leasehold demo');
    return EXIT_HARNESS;
  }
  if (args.boolean('json')) {
    context.out(JSON.stringify(catalogue.map(({ name, description }) => ({ name, description }))));
    return EXIT_OK;
  }
  const width = Math.max(0, ...catalogue.map((entry) => entry.name.length));
  for (const entry of catalogue) context.out(`${entry.name.padEnd(width)}  ${entry.description}`);
  context.out(`\n${catalogue.length} scenario${catalogue.length === 1 ? '' : 's'}. Run one: leasehold run --scenario ${catalogue[0]?.name ?? 'mixed'} --seed 42`);
  return EXIT_OK;
}
