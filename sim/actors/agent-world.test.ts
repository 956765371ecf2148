import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentModuleError, UnknownExternalError, type External } from '../../src/worker/agent.ts';
import type { Tool } from '../../src/worker/types.ts';
import { ScenarioFileError } from '../check/scenario-file.ts';
import { EventLoop } from '../event-loop.ts';
import { NO_RATES } from '../faults/plan.ts';
import { History } from '../history.ts';
import { SeededRandom } from '../random.ts';
import { simulate } from '../run-scenario.ts';
import { run } from '../testing.ts';
import { teamViolations } from '../checkers/team-invariants.ts';
import type { WorldResult } from '../world.ts';
import { loadSimAgent, type SimAgent } from './agent-module.ts';
import { ExternalTwins, toolCallScope, type TwinHooks } from './external-twin.ts';
import { ExternalProvider } from './provider.ts';
import { defineTicketAgent } from '../../examples/ticket-agent/ticket-agent.ts';

const BUGGY = 'examples/ticket-agent/buggy.ts';
const CORRECT = 'examples/ticket-agent/correct.ts';
/** A seed of the example's scenario where a takeover repeats an e-mail (a kill after it was sent, before the ledger recorded it). */
const REPEATING_SEED = '5';

const scratch = mkdtempSync(join(tmpdir(), 'leasehold-agent-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function twinsWorld() {
  const loop = new EventLoop();
  const history = new History(loop);
  const provider = new ExternalProvider(history);
  const hooks: TwinHooks = { waiter: loop.waiter, random: new SeededRandom('twin-test'), latencyMs: [10, 10], rates: () => NO_RATES, afterEffect: () => {}, actor: 'w0#1', now: () => loop.now() };
  return { loop, history, provider, hooks };
}

const scope = (toolCallId: string, readOnly = false) => ({ taskId: 3, tenant: 'acme', generation: 1, toolCallId, requestKey: `3:email:${toolCallId}`, tool: 'email', readOnly, actor: 'w0#1', writes: 0 });

describe('a twin of an external system (T2)', () => {
  it('honours an idempotency key as a provider does: a repeat returns the first result and executes nothing; no key, a new execution each time', async () => {
    const { loop, provider, hooks } = twinsWorld();
    const twins = new ExternalTwins(new History(loop), provider, []);
    const mail = twins.external('mail', hooks);
    const answers: unknown[] = [];
    void (async () => {
      answers.push(await toolCallScope.run(scope('c1'), () => mail.execute('send', { to: 'a' }, { idempotencyKey: 'k1' })));
      answers.push(await toolCallScope.run(scope('c1'), () => mail.execute('send', { to: 'a' }, { idempotencyKey: 'k1' })));
      answers.push(await toolCallScope.run(scope('c2'), () => mail.execute('send', { to: 'b' })));
      answers.push(await toolCallScope.run(scope('c2'), () => mail.execute('send', { to: 'b' })));
    })();
    await loop.run({ untilMs: loop.now() + 1_000 });
    expect(answers).toEqual([{ id: 'mail-1', operation: 'send' }, { id: 'mail-1', operation: 'send' }, { id: 'mail-2', operation: 'send' }, { id: 'mail-3', operation: 'send' }]);
    expect(twins.executions.map((execution) => [execution.toolCallId, execution.executed, execution.idempotencyKey])).toEqual([
      ['c1', true, 'k1'],
      ['c1', false, 'k1'],
      ['c2', true, undefined],
      ['c2', true, undefined],
    ]);
    // Effects are judged under the tool call's request key: the keyless repeat is a second execution of 3:email:c2.
    expect(provider.executions.map((execution) => execution.requestKey)).toEqual(['3:email:c1', '3:email:c2', '3:email:c2']);
    expect(provider.requests).toHaveLength(4);
  });

  it('records a read-only tool\'s calls but never as effects, and refuses a name the module does not declare', async () => {
    const { loop, provider, hooks } = twinsWorld();
    const twins = new ExternalTwins(new History(loop), provider, ['tickets']);
    const tickets = twins.external('tickets', hooks);
    void toolCallScope.run(scope('r1', true), () => tickets.execute('get', { ticket: 't' }));
    await loop.run({ untilMs: loop.now() + 1_000 });
    expect(twins.executions.map((execution) => [execution.external, execution.effect])).toEqual([['tickets', false]]);
    expect(provider.requests).toHaveLength(0);
    expect(() => twins.external('mail', hooks)).toThrow(UnknownExternalError);
  });
});

describe('an agent module in the world (T2, the example)', () => {
  it('catches the e-mail tool that forgets its idempotency key: I8 names the task and says why, and the team invariant names the customer', async () => {
    const { report } = await simulate({ scenario: (await loadSimAgent(BUGGY)).scenario!, seed: REPEATING_SEED, agent: BUGGY });
    expect(report.verdict).toBe('safety');
    const twice = report.violations.filter((violation) => violation.invariant === 'I8');
    expect(twice.length).toBeGreaterThan(0);
    expect(twice[0]!.taskId).toBeTypeOf('number');
    expect(twice[0]!.message).toMatch(/mail\.send\) executed more than once: tool call t\d+-s1-email .* with no idempotency key/);
    const team = report.violations.filter((violation) => violation.invariant === 'one-email-per-ticket-version');
    expect(team.length).toBeGreaterThan(0);
    expect(team[0]!.message).toMatch(/got 2 e-mails for ticket/);
  });

  it('passes the correct tool on the same seed, the same faults', async () => {
    const agent = await loadSimAgent(CORRECT);
    const { report, world } = await simulate({ scenario: agent.scenario!, seed: REPEATING_SEED, agent });
    expect(report.violations).toEqual([]);
    expect(world.agent?.twins.executions.some((execution) => execution.external === 'mail' && !execution.executed)).toBe(true);
  });

  it('catches a tool that makes up its own key, and says so', async () => {
    const ownKey = (mail: External): Tool => ({ name: 'email_customer', readOnly: false, call: (args, context) => mail.execute('send', args, { idempotencyKey: `${context.toolCallId}@${context.generation}` }) });
    const loaded = await loadSimAgent(CORRECT);
    const agent: SimAgent = { ...loaded, definition: defineTicketAgent(ownKey) };
    const { report } = await simulate({ scenario: loaded.scenario!, seed: REPEATING_SEED, agent });
    const twice = report.violations.filter((violation) => violation.invariant === 'I8');
    expect(twice.length).toBeGreaterThan(0);
    expect(twice[0]!.message).toMatch(/with idempotency key t\d+-s1-email@\d+, not the request key/);
  });

  it('gives the same trace hash for the same seed, and another for another seed (S1, I14)', async () => {
    const agent = await loadSimAgent(BUGGY);
    const run = async (seed: string) => (await simulate({ scenario: agent.scenario!, seed, agent })).report.traceHash;
    const first = await run('11');
    expect(await run('11')).toBe(first);
    expect(await run('12')).not.toBe(first);
  });
});

describe('a tool or model of the team that throws something other than a ToolFailure (T2)', () => {
  // Production (src/worker/worker.ts): the run ends `crashed`, with no terminal write; the worker lives
  // on and the task's lease lapses. The world runs that same path: a finding about the team's code, typed
  // by the checkers (here I11: the tasks never drain), never a crash of the harness (S9 exit 3).
  const throwing = (thrown: unknown): Tool => ({ name: 'email_customer', readOnly: false, call: async () => { throw thrown; } });

  for (const [label, thrown, error] of [['an Error', new Error('boom'), 'Error: boom'], ['a string', 'boom', 'boom']] as const) {
    it(`${label}: the run goes on, the history notes whose code threw what, and the verdict is a typed finding`, async () => {
      const loaded = await loadSimAgent(CORRECT);
      const agent: SimAgent = { ...loaded, definition: defineTicketAgent(() => throwing(thrown)) };
      const { report, world } = await simulate({ scenario: loaded.scenario!, seed: REPEATING_SEED, agent });
      expect(world.crash).toBeUndefined();
      const notes = world.history.entries().filter((entry) => entry.type === 'note' && entry.kind === 'team-code-threw');
      expect(notes.length).toBeGreaterThan(0);
      expect(notes[0]).toMatchObject({ taskId: expect.any(Number), generation: expect.any(Number), data: { where: 'tool email_customer', error } });
      expect(world.outcomes.some(({ outcome }) => outcome.kind === 'crashed' && outcome.error === error)).toBe(true);
      // No terminal write for a crashed run: the e-mail never goes out, so the tasks never finish.
      expect(report.verdict).toBe('liveness');
      expect(report.violations.some((violation) => violation.invariant === 'I11' && violation.taskId !== undefined)).toBe(true);
    });
  }

  it('the model throwing is the same: noted as the model\'s, no harness crash', async () => {
    const loaded = await loadSimAgent(CORRECT);
    const base = defineTicketAgent(() => throwing(new Error('unused')));
    const definition = { ...base, build: (env: Parameters<typeof base.build>[0]) => ({ ...base.build(env), model: { decide: () => Promise.reject(new TypeError('bad adapter')) } }) };
    const { report, world } = await simulate({ scenario: loaded.scenario!, seed: REPEATING_SEED, agent: { ...loaded, definition } });
    expect(world.crash).toBeUndefined();
    const notes = world.history.entries().filter((entry) => entry.type === 'note' && entry.kind === 'team-code-threw');
    expect(notes[0]?.data).toMatchObject({ where: 'model.decide', error: 'TypeError: bad adapter' });
    expect(report.verdict).toBe('liveness');
  });

  it('through run() the verdict is liveness with its exit code 2, not a harness crash (exit 3)', async () => {
    const path = join(scratch, 'throws.ts');
    writeFileSync(
      path,
      [
        `import { defineTicketAgent } from ${JSON.stringify(join(process.cwd(), 'examples/ticket-agent/ticket-agent.ts'))};`,
        `export { input, scenario, twins } from ${JSON.stringify(join(process.cwd(), 'examples/ticket-agent/ticket-agent.ts'))};`,
        "export default defineTicketAgent(() => ({ name: 'email_customer', readOnly: false, call: async () => { throw new Error('boom'); } }));",
      ].join('\n'),
    );
    const result = await run({ agent: path, seed: REPEATING_SEED });
    expect(result).toMatchObject({ verdict: 'liveness', exitCode: 2 });
  });
});

describe('a team invariant (T3)', () => {
  const world = (check: () => unknown) =>
    ({
      agent: { module: { invariants: [{ name: 'mine', check }] }, twins: { executions: [] } },
      final: { tasks: [] },
      enqueued: [],
      history: { entries: () => [] },
    }) as unknown as WorldResult;

  it('is reported under its own name, with the task it names', () => {
    expect(teamViolations(world(() => ['plain', { message: 'of a task', taskId: 4, at: [7] }]))).toEqual([
      { invariant: 'mine', kind: 'safety', message: 'plain' },
      { invariant: 'mine', kind: 'safety', message: 'of a task', taskId: 4, at: [7] },
    ]);
    expect(teamViolations(world(() => []))).toEqual([]);
  });

  it('that throws, or returns something else than a list, is a violation, never a pass', () => {
    expect(teamViolations(world(() => { throw new Error('boom'); }))).toEqual([{ invariant: 'mine', kind: 'safety', message: 'the invariant threw: Error: boom' }]);
    expect(teamViolations(world(() => 'nothing'))[0]?.message).toMatch(/returned string, not an array/);
  });
});

describe('a bad agent module is refused with a typed error naming it', () => {
  const agentDefault = "export default { [Symbol.for('leasehold.agent')]: true, build: () => ({ model: { decide() {} }, tools: [] }), externals: {} };";
  const module = (name: string, text: string) => {
    const path = join(scratch, name);
    writeFileSync(path, text);
    return path;
  };

  it('a missing file, a default export not made by defineAgent', async () => {
    await expect(loadSimAgent(join(scratch, 'nowhere.mjs'))).rejects.toMatchObject({ problem: 'not_found' });
    await expect(loadSimAgent(module('plain.mjs', 'export default { model: {} };'))).rejects.toMatchObject({ problem: 'not_defined_by_defineAgent' });
  });

  it('a scenario that does not validate names its field; a catalogue name it lacks is named', async () => {
    const error = await loadSimAgent(module('bad-scenario.mjs', `${agentDefault}\nexport const scenario = { name: 'x', workers: { count: 'three' } };`)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ScenarioFileError);
    expect((error as ScenarioFileError).message).toMatch(/bad-scenario\.mjs \(export scenario\)/);
    await expect(loadSimAgent(module('unknown-scenario.mjs', `${agentDefault}\nexport const scenario = 'nope';`))).rejects.toThrow(/names 'nope', which the catalogue has not/);
  });

  it('invariants, input and twins of the wrong shape', async () => {
    await expect(loadSimAgent(module('reserved.mjs', `${agentDefault}\nexport const invariants = [{ name: 'I8', check: () => [] }];`))).rejects.toThrow(/'I8' is one the harness uses/);
    await expect(loadSimAgent(module('no-check.mjs', `${agentDefault}\nexport const invariants = [{ name: 'mine' }];`))).rejects.toThrow(AgentModuleError);
    await expect(loadSimAgent(module('input.mjs', `${agentDefault}\nexport const input = 3;`))).rejects.toThrow(/export input must be a function/);
    await expect(loadSimAgent(module('twins.mjs', `${agentDefault}\nexport const twins = { mail: 3 };`))).rejects.toThrow(/twins\.mail must be a function/);
  });

  it('a build that returns the wrong shape is refused at load, before any run', async () => {
    const broken = "export default { [Symbol.for('leasehold.agent')]: true, build: () => ({ model: {}, tools: [] }), externals: {} };";
    await expect(loadSimAgent(module('broken.mjs', broken))).rejects.toMatchObject({ problem: 'invalid_model' });
  });
});
