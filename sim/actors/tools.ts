import type { Waiter } from '../../src/ports.ts';
import { RETRYABLE_ERROR_CLASSES, type ErrorClass } from '../../src/queue/types.ts';
import { ToolFailure, type Tool, type ToolContext } from '../../src/worker/types.ts';
import type { FaultRates } from '../faults/plan.ts';
import type { SeededRandom } from '../random.ts';
import type { ExternalProvider } from './provider.ts';

export const READ_ONLY_TOOLS = ['lookup_order', 'search_kb', 'check_payment'] as const;
export const WRITE_TOOLS = ['confirm_order', 'issue_refund'] as const;

export interface ToolFaultHooks {
  /** Current rates: zero in the liveness phase (S5). */
  rates(): FaultRates;
  /** Called after the provider executed an effect, before the response travels back (S4 kill point). */
  afterEffect(): void;
}

interface ToolEnvironment {
  waiter: Waiter;
  random: SeededRandom;
  latencyMs: readonly [number, number];
  /** Weights of the classes of injected tool errors; absent: 85% a retryable class (uniform), 15% permission_denied. */
  errorClasses?: Partial<Record<ErrorClass, number>>;
  provider: ExternalProvider;
  actor: () => string;
  now: () => number;
  faults: ToolFaultHooks;
}

/**
 * Simulated tools. Latency, errors, slow and hung calls, and lost responses come from the seed. A
 * write tool acts through the external provider with the run's request key; a lost response means
 * the effect happened but the caller never hears of it.
 */
export function simulatedTools(environment: ToolEnvironment): Tool[] {
  const make = (name: string, readOnly: boolean): Tool => ({
    name,
    readOnly,
    call: (args, context) => callTool(environment, name, readOnly, args, context),
  });
  return [...READ_ONLY_TOOLS.map((name) => make(name, true)), ...WRITE_TOOLS.map((name) => make(name, false))];
}

async function callTool(environment: ToolEnvironment, name: string, readOnly: boolean, args: unknown, context: ToolContext): Promise<unknown> {
  const { waiter, random, faults } = environment;
  const rates = faults.rates();
  let latencyMs = random.int(environment.latencyMs[0], environment.latencyMs[1]);
  if (random.chance(rates.slowToolProbability)) latencyMs *= 10;
  if (random.chance(rates.hungToolProbability)) return new Promise(() => {});
  const sentIndex = readOnly
    ? undefined
    : environment.provider.noteSent({ requestKey: context.requestKey, taskId: context.taskId, generation: context.generation, actor: environment.actor() });
  await waiter.sleep(Math.ceil(latencyMs / 2));
  if (random.chance(rates.toolErrorProbability)) throw drawFailure(random, name, environment.errorClasses);
  let result: unknown = { tool: name, ok: true };
  if (!readOnly) {
    result = environment.provider.execute(
      {
        requestKey: context.requestKey,
        action: name,
        tenant: context.tenant,
        taskId: context.taskId,
        generation: context.generation,
        actor: environment.actor(),
        atMs: environment.now(),
        ...(sentIndex === undefined ? {} : { sentIndex }),
      },
      args,
    );
    faults.afterEffect();
  }
  if (random.chance(rates.lostResponseProbability)) return new Promise(() => {});
  await waiter.sleep(Math.floor(latencyMs / 2));
  return result;
}

function drawFailure(random: SeededRandom, tool: string, weights: Partial<Record<ErrorClass, number>> | undefined): ToolFailure {
  const errorClass: ErrorClass = weights === undefined ? (random.chance(0.85) ? random.pick(RETRYABLE_ERROR_CLASSES) : 'permission_denied') : pickWeighted(random, weights);
  return new ToolFailure(errorClass, `${tool}: simulated ${errorClass}`);
}

function pickWeighted(random: SeededRandom, weights: Partial<Record<ErrorClass, number>>): ErrorClass {
  const entries = (Object.entries(weights) as [ErrorClass, number][]).filter(([, weight]) => weight > 0).sort(([a], [b]) => (a < b ? -1 : 1));
  const total = entries.reduce((sum, [, weight]) => sum + weight, 0);
  let draw = random.next() * total;
  for (const [errorClass, weight] of entries) {
    draw -= weight;
    if (draw < 0) return errorClass;
  }
  return entries[entries.length - 1]![0];
}
