/**
 * How a team puts its agent under the simulator in its own test suite (T1, T2): a helper runs N seeds
 * of the agent module's scenario and fails the test with each failing seed's replay line, so the CI log
 * says exactly what to run to see it again. In your project `check` is `check({ agent, seeds, seed })`
 * from 'leasehold/testing' (docs/agents-in-simulation.md); until that entry takes `agent`, the example
 * runs the same check through the runner beneath it.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSimAgent } from '../../sim/actors/agent-module.ts';
import { agentSources } from '../../sim/check/agent-source.ts';
import { runCheck } from '../../sim/check/run-check.ts';

interface Summary {
  exitCode: number;
  failures: { seed: string; violations: { invariant: string; message: string }[]; replay: string }[];
}

async function check(options: { agent: string; seeds: number; seed: string; out: string }): Promise<Summary & { verdict: string }> {
  const sources = agentSources(await loadSimAgent(options.agent));
  const request = { sources, seedsPerScenario: options.seeds, root: { seed: options.seed, source: 'flag' as const }, git: { commit: undefined, dirty: false }, threads: 2, unseedRate: 0, failuresDir: join(options.out, 'failures'), outDir: options.out, reproduce: `leasehold check --agent ${options.agent} --seeds ${options.seeds} --seed ${options.seed}`, agent: options.agent };
  const quiet = { out: () => {}, err: () => {}, progress: { tty: false as const, line: () => {} } };
  const code = await runCheck(request, quiet);
  const summary = JSON.parse(readFileSync(join(options.out, 'summary.json'), 'utf8')) as Summary;
  return { ...summary, verdict: code === 0 ? 'pass' : 'fail' };
}

const out = mkdtempSync(join(tmpdir(), 'ticket-agent-check-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

/** Runs `seeds` seeds of the agent (a fixed root seed: the same seeds every run); throws with the replay lines when any fails. */
async function expectSeedsPass(agent: string, seeds: number): Promise<void> {
  const result = await check({ agent, seeds, seed: 'ticket-agent', out: join(out, agent.replace(/\W+/g, '-')) });
  if (result.verdict === 'pass') return;
  const lines = result.failures.map((failure) => `seed ${failure.seed}: ${failure.violations.map((violation) => `${violation.invariant}: ${violation.message}`).join('; ')}\n  ${failure.replay}`);
  throw new Error(`${result.failures.length} of ${seeds} seeds failed (${result.verdict}):\n${lines.join('\n')}`);
}

describe('the ticket agent under the simulator', () => {
  it('passes 20 seeds with the e-mail tool that hands the request key to the mail service', async () => {
    await expectSeedsPass('examples/ticket-agent/correct.ts', 20);
  });

  it('fails with I8 and a replay line when the e-mail tool forgets the key', async () => {
    const failed = await expectSeedsPass('examples/ticket-agent/buggy.ts', 20).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(failed?.message).toMatch(/I8: I8 twice: request key \d+:email_customer:\w+ \(task \d+, mail\.send\) executed more than once/);
    expect(failed?.message).toMatch(/one-email-per-ticket-version: \S+ got 2 e-mails/);
    expect(failed?.message).toMatch(/\n {2}leasehold replay \S+ticket-agent-\d+\.json/);
  });
});
