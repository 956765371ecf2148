import type { WorldResult } from '../world.ts';
import type { ConfigProbe } from '../workloads/config-probe.ts';
import { ViolationList } from './timeline.ts';
import type { Checker } from './types.ts';

/**
 * Invalid configurations are refused (issue 35 item 1): every `config-probe` note of the history (a
 * share of the configuration swarm's seeds, sim/workloads/config-probe.ts) records an attempt to open a
 * queue with one rule of the seed's drawn configuration broken. Rules:
 *
 * - `refused`: openWorkQueue threw a ConfigError (a configuration it accepted, or another error, is a
 *   rule lost or a refusal untyped);
 * - `named`: the ConfigError names the option the broken rule is about;
 * - `nothing-created`: the database holds no table afterwards (the queue refused before it touched it).
 */
export const configRefused: Checker = {
  invariant: 'config',
  kind: 'safety',
  description: 'a configuration that breaks a rule is refused with a ConfigError naming the option, and creates nothing',
  check(world: WorldResult) {
    const out = new ViolationList('config', 'safety');
    for (const entry of world.history.entries()) {
      if (entry.type !== 'note' || entry.kind !== 'config-probe') continue;
      const probe = entry.data as unknown as ConfigProbe;
      const what = `a configuration breaking "${probe.rule}"`;
      if (probe.outcome === 'accepted') out.add('refused', `${what} was accepted: openWorkQueue opened a queue with it`, { at: [entry.index] });
      else if (probe.outcome === 'error') out.add('refused', `${what} was refused with ${String(probe.named)}, not a ConfigError: ${String(probe.message)}`, { at: [entry.index] });
      else if (probe.named !== probe.expected) out.add('named', `${what} was refused naming '${String(probe.named)}', expected '${probe.expected}': ${String(probe.message)}`, { at: [entry.index] });
      if (probe.tables !== 0) out.add('nothing-created', `${what} left ${probe.tables} table(s) in the database`, { at: [entry.index] });
    }
    return out.list;
  },
};
