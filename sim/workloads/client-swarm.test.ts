import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../random.ts';
import { parseScenarioFile } from '../scenario-schema.ts';
import { drawArrivals, type Arrival } from '../workload.ts';
import { CLIENT_SWARM_DEFAULTS } from './client-swarm.ts';
import { clientSwarmOf } from './index.ts';

function spec(workload: unknown[]) {
  const parsed = parseScenarioFile({ name: 'swarm-test', description: 'd', source: 'seed 000', workload });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed.spec;
}

const key = (arrival: Arrival) => `${arrival.request.tenant}/${arrival.request.topic}/v${arrival.request.version}`;
const withoutCancel = ({ cancelAtMs: _cancel, ...rest }: Arrival) => rest;

describe('the client-swarm workload part', () => {
  it('takes its defaults, and refuses a second client-swarm part', () => {
    expect(clientSwarmOf(spec([{ kind: 'topics' }, { kind: 'client-swarm' }]).workload)).toEqual(CLIENT_SWARM_DEFAULTS);
    expect(clientSwarmOf(spec([{ kind: 'topics' }, { kind: 'client-swarm', cancelProbability: 1 }]).workload)?.cancelProbability).toBe(1);
    const twice = parseScenarioFile({ name: 'x', description: 'd', source: 'seed 000', workload: [{ kind: 'topics' }, { kind: 'client-swarm' }, { kind: 'client-swarm' }] });
    expect(twice.ok ? [] : twice.problems).toEqual([{ field: 'workload[2].kind', problem: 'a scenario has at most one client-swarm part, and workload[1] is one' }]);
  });

  it('leaves every other draw of a seed as it was: the other parts\' arrivals are all there, unchanged but for cancels', () => {
    for (const seed of ['1', '2', '3']) {
      const base = drawArrivals(new SeededRandom(seed).fork('workload'), spec([{ kind: 'topics' }]).workload);
      const swarmed = drawArrivals(new SeededRandom(seed).fork('workload'), spec([{ kind: 'topics' }, { kind: 'client-swarm' }]).workload);
      expect(swarmed.length).toBeGreaterThan(base.length);
      const remaining = swarmed.map(withoutCancel);
      for (const arrival of base) {
        const at = remaining.findIndex((other) => JSON.stringify(other) === JSON.stringify(arrival));
        expect(at, `${key(arrival)} at ${arrival.atMs}`).toBeGreaterThanOrEqual(0);
        remaining.splice(at, 1);
      }
      expect(swarmed.map((arrival) => arrival.atMs)).toEqual([...swarmed.map((arrival) => arrival.atMs)].sort((a, b) => a - b));
    }
  });

  it('draws resends, conflicting resends, cancels, out-of-order versions and bursts', () => {
    const workload = spec([{ kind: 'topics' }, { kind: 'client-swarm', resendProbability: 1, conflictProbability: 1, cancelProbability: 1, earlyVersionProbability: 1, lateVersionProbability: 1, bursts: [1, 1], burstSize: [6, 6] }]).workload;
    const arrivals = drawArrivals(new SeededRandom('7').fork('workload'), workload);
    const byKey = new Map<string, Arrival[]>();
    for (const arrival of arrivals) byKey.set(key(arrival), [...(byKey.get(key(arrival)) ?? []), arrival]);
    const v1 = byKey.get('acme/topic-1/v1')!;
    // The first arrival, its resends (same request) and one conflicting resend (other input).
    expect(v1.length).toBeGreaterThanOrEqual(3);
    const inputs = new Set(v1.map((arrival) => JSON.stringify(arrival.request.input)));
    expect(inputs.size).toBe(2);
    expect(v1.filter((arrival) => arrival.cancelAtMs !== undefined)).toHaveLength(1);
    // Out of order: a version above v1 arrives before it, and of the two after, the newer comes first.
    const versions = arrivals.filter((arrival) => arrival.request.topic === 'topic-1' && arrival.request.tenant === 'acme');
    const firstOf = (version: number) => versions.find((arrival) => arrival.request.version === version)!.atMs;
    const top = Math.max(...versions.map((arrival) => arrival.request.version));
    expect(firstOf(top)).toBeLessThanOrEqual(firstOf(top - 1));
    expect(versions.some((arrival) => arrival.request.version > 1 && arrival.atMs < firstOf(1))).toBe(true);
    // A burst: six arrivals at one instant.
    const counts = new Map<number, number>();
    for (const arrival of arrivals) counts.set(arrival.atMs, (counts.get(arrival.atMs) ?? 0) + 1);
    expect(Math.max(...counts.values())).toBeGreaterThanOrEqual(6);
  });
});
