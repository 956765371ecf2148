import { runGroupMealDemo } from '../../demo/group-meal.ts';
import { runSupersedeDemo } from '../../demo/supersede.ts';
import type { ParsedArgs } from '../args.ts';
import type { CommandContext } from '../command-context.ts';
import { EXIT_OK, EXIT_SAFETY } from '../exit-codes.ts';

/**
 * `leasehold demo [--json]`: seed 000's four-topic example and its corrections, on the real queue.
 * Exits 1 when one of the article's claims does not hold, because then the core misbehaves.
 */
export async function execute(args: ParsedArgs, context: CommandContext): Promise<number> {
  const json = args.boolean('json');
  const log = json ? () => {} : (line: string) => context.out(line);
  const groupMeal = await runGroupMealDemo(log);
  if (!json) log('');
  const supersede = await runSupersedeDemo(log);
  const failed = [...groupMeal.checks, ...supersede.checks].filter((check) => !check.holds);
  if (json) context.out(JSON.stringify({ groupMeal, supersede }));
  for (const check of failed) context.err(`leasehold: demo check failed: ${check.claim}`);
  return failed.length === 0 ? EXIT_OK : EXIT_SAFETY;
}
