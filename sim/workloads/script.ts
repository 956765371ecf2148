import { z } from 'zod';
import type { TaskScript } from '../actors/scripted-model.ts';
import { flag, list, nonNegative, strict, text } from '../schema-kit.ts';

/**
 * What a task's model decides (actors/scripted-model.ts): at each step some tool calls and the tokens
 * it used, then a final answer. A script states its calls; token counts and the answer's status have
 * defaults (800 in, 200 out a step; 600 and 150 for the answer; needs_human).
 */
export const scriptSchema = strict(
  {
    steps: list(
      strict({
        calls: list(
          strict({
            tool: text(),
            args: z.unknown(),
            // A7: a name for the call within its step, the names it depends on, the resource it writes.
            id: text().optional(),
            dependsOn: list(text()).optional(),
            resource: text().optional(),
          }),
        ),
        inputTokens: nonNegative().default(800),
        outputTokens: nonNegative().default(200),
      }),
    ),
    answer: strict({ status: text().default('needs_human'), summary: z.string({ error: 'expected a string' }) }),
    finalTokens: strict({ inputTokens: nonNegative(), outputTokens: nonNegative() }).default(() => ({ inputTokens: 600, outputTokens: 150 })),
    poison: flag().optional(),
  },
  'What the model decides at each step: tool calls and token usage, then the final answer.',
);

export const SCRIPT_MATCHES_TYPE: z.output<typeof scriptSchema> extends TaskScript ? (TaskScript extends z.output<typeof scriptSchema> ? true : false) : false = true;
