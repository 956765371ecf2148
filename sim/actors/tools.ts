import type { Waiter } from '../../src/ports.ts';
import type { ErrorClass } from '../../src/queue/types.ts';
import type { Tool, ToolContext } from '../../src/worker/types.ts';
import { toolHangs } from '../faults/hung-tool.ts';
import { responseLost } from '../faults/lost-response.ts';
import type { FaultRates } from '../faults/plan.ts';
import { slowToolLatency } from '../faults/slow-tool.ts';
import { toolFailure } from '../faults/tool-error.ts';
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
 * Simulated tools. Latency, errors, slow and hung calls, and lost responses come from the seed (each
 * fault kind's file decides its own, in sim/faults/, from this tool's stream, in the order below). A
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
  environment.provider.noteCall({ taskId: context.taskId, generation: context.generation, actor: environment.actor(), tool: name, toolCallId: context.toolCallId, atMs: environment.now() });
  const rates = faults.rates();
  const latencyMs = slowToolLatency(random, rates, random.int(environment.latencyMs[0], environment.latencyMs[1]));
  if (toolHangs(random, rates)) return new Promise(() => {});
  const sentIndex = readOnly
    ? undefined
    : environment.provider.noteSent({ requestKey: context.requestKey, taskId: context.taskId, generation: context.generation, actor: environment.actor() });
  await waiter.sleep(Math.ceil(latencyMs / 2));
  const failure = toolFailure(random, rates, name, environment.errorClasses);
  if (failure !== undefined) throw failure;
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
        toolCallId: context.toolCallId,
      },
      args,
    );
    faults.afterEffect();
  }
  if (responseLost(random, rates)) return new Promise(() => {});
  await waiter.sleep(Math.floor(latencyMs / 2));
  return result;
}
