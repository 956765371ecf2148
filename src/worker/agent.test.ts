/**
 * Agent modules (SPEC T2, W3): defineAgent's two forms, the loader's typed errors for each way a module
 * can be wrong, and the production env, whose external(name) is the module's own client, made once.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentModuleError, buildAgent, defineAgent, loadAgentModule, productionAgentEnv, UnknownExternalError, type AgentEnv, type External } from './agent.ts';
import type { Tool } from './types.ts';

const scratch = mkdtempSync(join(tmpdir(), 'leasehold-agent-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const AGENT_TS = join(import.meta.dirname, 'agent.ts');

function moduleFile(name: string, source: string): string {
  const path = join(scratch, name);
  writeFileSync(path, source.replaceAll('AGENT_TS', JSON.stringify(AGENT_TS)));
  return path;
}

const model = { decide: async () => ({ toolCalls: [], final: 'ok', usage: { inputTokens: 1, outputTokens: 1 } }) };
const tool = (name: string): Tool => ({ name, readOnly: true, call: async () => name });
const env: AgentEnv = { clock: { now: () => 0 }, random: { next: () => 0.5 }, external: () => ({ execute: async () => 'twin' }) };

async function refusal(promise: Promise<unknown> | (() => unknown)): Promise<AgentModuleError> {
  try {
    await (typeof promise === 'function' ? promise() : promise);
  } catch (error) {
    expect(error).toBeInstanceOf(AgentModuleError);
    return error as AgentModuleError;
  }
  throw new Error('expected an AgentModuleError');
}

describe('agent modules (T2)', () => {
  it('loads a module whose default export is defineAgent(...) and builds it with the env given (the simulator passes twins)', async () => {
    const path = moduleFile('ok.mjs', `import { defineAgent } from AGENT_TS;
      export default defineAgent((env) => ({ model: { decide: async () => ({ toolCalls: [], usage: { inputTokens: 0, outputTokens: 0 } }) },
        tools: [{ name: 'pay', readOnly: false, call: (args, ctx) => env.external('payments').execute('charge', args, { idempotencyKey: ctx.requestKey }) }] }));`);
    const definition = await loadAgentModule(path);
    const parts = buildAgent(definition, env);
    expect(parts.tools.map((t) => t.name)).toEqual(['pay']);
    expect(await parts.tools[0]!.call({}, { requestKey: 'k' } as never)).toBe('twin');
  });

  it.each([
    ['nope.mjs', undefined, 'not_found', /no such file/],
    ['agent.json', '{}', 'unsupported_extension', /expected one of \.mjs, \.js/],
    ['broken.mjs', 'export default (', 'import_failed', /importing it failed: \w*Error/],
    ['named.mjs', 'export const agent = 1;', 'no_default_export', /no default export \(it exports agent\)/],
    ['plain.mjs', 'export default { model: {}, tools: [] };', 'not_defined_by_defineAgent', /not made by defineAgent/],
    ['fn.mjs', 'export default (env) => ({});', 'not_defined_by_defineAgent', /default export is a function, not made by defineAgent/],
  ])('refuses %s with %s', async (name, source, problem, message) => {
    const path = source === undefined ? join(scratch, name) : moduleFile(name, source);
    const error = await refusal(loadAgentModule(path));
    expect(error.problem).toBe(problem);
    expect(error.code).toBe('invalid_agent_module');
    expect(error.message).toMatch(message);
    expect(error.message).toContain(name);
  });

  it.each([
    ['a build that throws', () => { throw new Error('no key'); }, 'build_failed', /build\(env\) threw: Error: no key/],
    ['a build that returns a promise', async () => ({ model, tools: [] }), 'build_failed', /returned a promise/],
    ['no model.decide', () => ({ model: {}, tools: [] }), 'invalid_model', /model must have a decide/],
    ['tools not an array', () => ({ model, tools: {} }), 'invalid_tools', /tools must be an array/],
    ['a tool without call', () => ({ model, tools: [{ name: 'x', readOnly: true }] }), 'invalid_tools', /tool 'x': call must be a function/],
    ['a tool without readOnly', () => ({ model, tools: [{ name: 'x', call: async () => 1 }] }), 'invalid_tools', /tool 'x': readOnly must be true or false/],
    ['a tool without a name', () => ({ model, tools: [{ readOnly: true, call: async () => 1 }] }), 'invalid_tools', /tools\[0\]\.name must be a non-empty string/],
    ['two tools of one name', () => ({ model, tools: [tool('lookup'), tool('lookup')] }), 'duplicate_tool', /two tools are named 'lookup'/],
  ])('refuses %s', async (_, build, problem, message) => {
    const error = await refusal(() => buildAgent(defineAgent(build as never), env, 'my-agent.mjs'));
    expect(error.problem).toBe(problem);
    expect(error.message).toMatch(message);
    expect(error.message).toContain('my-agent.mjs');
  });

  it('refuses a malformed definition at defineAgent', async () => {
    expect((await refusal(() => defineAgent(undefined as never))).problem).toBe('invalid_definition');
    expect((await refusal(() => defineAgent({ build: 1 } as never))).message).toMatch(/build must be a function/);
    expect((await refusal(() => defineAgent({ build: () => ({ model, tools: [] }), externals: { payments: {} } } as never))).message).toMatch(/externals\.payments must be a function/);
  });

  it('in production, external(name) is the module\'s own client, made once per process; another name is a typed error naming those that exist', () => {
    let made = 0;
    const client: External = { execute: async () => 'real' };
    const definition = defineAgent({
      externals: { payments: () => (made++, client), tickets: () => ({ execute: async () => 't' }) },
      build: (e) => ({ model, tools: [tool('x')], e }) as never,
    });
    const production = productionAgentEnv(definition);
    expect(production.external('payments')).toBe(client);
    expect(production.external('payments')).toBe(client);
    expect(made).toBe(1);
    expect(() => production.external('crm')).toThrow(UnknownExternalError);
    expect(() => production.external('crm')).toThrow("no external system 'crm': the agent module defines 'payments', 'tickets'");
    expect(() => productionAgentEnv(defineAgent(() => ({ model, tools: [] }))).external('payments')).toThrow(/defines no externals/);
    const bad = productionAgentEnv(defineAgent({ externals: { payments: () => ({}) as External }, build: () => ({ model, tools: [] }) }));
    expect(() => bad.external('payments')).toThrow(/externals\.payments\(\) must return \{ execute/);
    expect(typeof production.clock.now()).toBe('number');
    expect(production.random.next()).toBeLessThan(1);
  });
});

describe('agent definitions: what is refused, and how it is described', () => {
  const env = { clock: { now: () => 0 }, random: { next: () => 0.5 }, external: () => ({ execute: async () => undefined }) } as unknown as AgentEnv;
  const model = { decide: async () => ({ toolCalls: [], final: 'ok', usage: { inputTokens: 1, outputTokens: 1 } }) };
  const problemOf = (act: () => unknown): string | undefined => {
    try {
      act();
    } catch (error) {
      return error instanceof AgentModuleError ? `${error.problem}: ${error.message}` : `not an AgentModuleError: ${String(error)}`;
    }
    return undefined;
  };

  it('refuses externals that are not an object of factories', () => {
    expect(problemOf(() => defineAgent({ build: () => ({ model, tools: [] }), externals: 5 as never }))).toMatch(/^invalid_definition: .*externals must be an object of factories by name, got /);
    expect(problemOf(() => defineAgent({ build: () => ({ model, tools: [] }), externals: [] as never }))).toMatch(/got an array/);
  });

  it('refuses what defineAgent did not make, describing it', () => {
    expect(problemOf(() => buildAgent(null as never, env))).toMatch(/^not_defined_by_defineAgent: .*got null/);
    expect(problemOf(() => buildAgent([] as never, env))).toMatch(/got an array/);
    expect(problemOf(() => buildAgent('x'.repeat(50) as never, env))).toMatch(/got the string "x{40}\.\.\."/);
  });

  it('refuses a build that returns nothing usable or throws, passing a LeaseholdError through as it is', () => {
    expect(problemOf(() => buildAgent(defineAgent(() => null as never), env))).toMatch(/^build_failed: .*must return \{ model, tools \}, got null/);
    expect(problemOf(() => buildAgent(defineAgent(() => ({ model, tools: [null] }) as never), env))).toMatch(/^invalid_tools: .*tools\[0\] must be a tool/);
    expect(problemOf(() => buildAgent(defineAgent(() => { throw 'a string'; }), env))).toMatch(/^build_failed: .*build\(env\) threw: a string$/);
    const own = new AgentModuleError('inner', 'invalid_model', 'from inside');
    expect(() => buildAgent(defineAgent(() => { throw own; }), env)).toThrow(own);
  });
});

describe('agent modules: the less common shapes', () => {
  it('refuses a file with no extension, saying so', async () => {
    const error = await refusal(loadAgentModule(moduleFile('agent', 'export default 1;')));
    expect(error.problem).toBe('unsupported_extension');
    expect(error.message).toMatch(/got '\(none\)'$/);
  });

  it('refuses a module with no exports at all without listing any', async () => {
    const error = await refusal(loadAgentModule(moduleFile('empty.mjs', 'export {};')));
    expect(error.problem).toBe('no_default_export');
    expect(error.message).toMatch(/it has no default export; write `export default defineAgent/);
  });

  it('reports a TypeScript module that does not parse as an import failure, not as missing tsx (tsx is there)', async () => {
    const error = await refusal(loadAgentModule(moduleFile('broken.mts', 'export default (;')));
    expect(error.problem).toBe('import_failed');
    expect(error.message).toMatch(/broken\.mts: importing it failed: /);
  });

  it('the object form without externals defines none: external(name) says so', () => {
    const definition = defineAgent({ build: () => ({ model, tools: [] }) });
    expect(definition.externals).toEqual({});
    expect(Object.isFrozen(definition.externals)).toBe(true);
    expect(() => productionAgentEnv(definition).external('payments')).toThrow(/no external system 'payments': the agent module defines no externals/);
  });

  it('describes a short string as it is', async () => {
    expect((await refusal(() => defineAgent({ build: 'build' } as never))).message).toBe('agent module defineAgent: build must be a function (env) => ({ model, tools }), got the string "build"');
  });
});
