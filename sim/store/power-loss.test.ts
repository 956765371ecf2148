/**
 * Evidence for the durability default (src/store/durability.ts), and the twin's own tests. The real
 * queue runs a script of enqueue / claim / heartbeat / checkpoint / recordEffect / complete / cancel
 * over the power-loss twin; the power is cut after every commit in turn, the queue reopens on what the
 * disk kept, and every acknowledgement the script was given is looked for again.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LOSABLE_WRITES, SYNCED_WRITES, type Durability } from '../../src/store/durability.ts';
import type { ClaimedTask, WorkQueue } from '../../src/queue/types.ts';
import { VirtualClock } from '../clock.ts';
import { SeededRandom } from '../random.ts';
import { PowerLossInputError, PowerLossModelError, PowerLossTwin, PowerLostError, type PowerLossOptions, type PowerLossReport } from './power-loss.ts';

const root = mkdtempSync(join(tmpdir(), 'leasehold-power-loss-'));
let files = 0;
afterAll(() => rmSync(root, { recursive: true, force: true }));

function freshPath(): string {
  return join(root, `queue-${++files}.sqlite`);
}

const USAGE = { inputTokens: 100, outputTokens: 20, modelCalls: 1 };

/** What the script was told, ok, before the power went. */
interface Acks {
  enqueued: { taskId: number; tenant: string; topic: string }[];
  effects: { requestKey: string; result: unknown }[];
  completed: number[];
  cancelled: number[];
}

interface Run {
  queue: WorkQueue;
  clock: VirtualClock;
  acks: Acks;
  claimed: Map<string, ClaimedTask>;
}

type ScriptStep = { name: string; run(r: Run): Promise<void> };

function ok<T extends { ok: boolean }>(result: T, what: string): T & { ok: true } {
  if (!result.ok) throw new Error(`${what} failed: ${JSON.stringify(result)}`);
  return result as T & { ok: true };
}

const enqueue = (tenant: string, topic: string): ScriptStep => ({
  name: `enqueue ${tenant}/${topic}`,
  async run(r) {
    const result = ok(await r.queue.enqueue({ tenant, topic, version: 1, priority: 5, input: { topic } }), 'enqueue');
    r.acks.enqueued.push({ taskId: result.taskId, tenant, topic });
  },
});
const claim = (worker: string): ScriptStep => ({
  name: `claim ${worker}`,
  async run(r) {
    const result = await r.queue.claim(worker);
    if (!result.ok) throw new Error(`claim ${worker}: ${result.reason}`);
    r.claimed.set(worker, result.task);
  },
});
function held(r: Run, worker: string): ClaimedTask {
  const task = r.claimed.get(worker);
  if (task === undefined) throw new Error(`${worker} holds nothing`);
  return task;
}
const heartbeat = (worker: string): ScriptStep => ({
  name: `heartbeat ${worker}`,
  async run(r) {
    const task = held(r, worker);
    ok(await r.queue.heartbeat(task.id, worker, task.generation), 'heartbeat');
  },
});
const checkpoint = (worker: string, kind: 'A' | 'B', step: number): ScriptStep => ({
  name: `checkpoint ${kind} ${worker}`,
  async run(r) {
    const task = held(r, worker);
    ok(await r.queue.checkpoint(task.id, worker, task.generation, { kind, step, state: { step }, usage: USAGE, requeueSafe: true }), 'checkpoint');
  },
});
const effect = (worker: string, requestKey: string): ScriptStep => ({
  name: `recordEffect ${worker} ${requestKey}`,
  async run(r) {
    const task = held(r, worker);
    const result = ok(await r.queue.recordEffect(task.id, worker, task.generation, { requestKey, action: 'refund', result: { refund: requestKey } }), 'recordEffect');
    r.acks.effects.push({ requestKey, result: result.result });
  },
});
const complete = (worker: string): ScriptStep => ({
  name: `complete ${worker}`,
  async run(r) {
    const task = held(r, worker);
    ok(await r.queue.complete(task.id, worker, task.generation, { answer: 'resolved' }), 'complete');
    r.acks.completed.push(task.id);
    r.claimed.delete(worker);
  },
});
const cancelTopic = (topic: string): ScriptStep => ({
  name: `cancel ${topic}`,
  async run(r) {
    const task = r.acks.enqueued.find((e) => e.topic === topic);
    if (task === undefined) throw new Error(`no task for ${topic}`);
    ok(await r.queue.cancel(task.taskId), 'cancel');
    r.acks.cancelled.push(task.taskId);
  },
});

/** Every step is one write transaction, and every one writes: one commit with frames per step. */
const SCRIPT: readonly ScriptStep[] = [
  enqueue('acme', 't1'),
  enqueue('globex', 't2'),
  claim('w1'),
  heartbeat('w1'),
  checkpoint('w1', 'A', 0),
  effect('w1', 'run1:refund:aa'),
  checkpoint('w1', 'B', 0),
  claim('w2'),
  enqueue('acme', 't3'),
  heartbeat('w2'),
  complete('w1'),
  checkpoint('w2', 'A', 0),
  effect('w2', 'run2:refund:bb'),
  cancelTopic('t3'),
  heartbeat('w2'),
  enqueue('initech', 't4'),
  checkpoint('w2', 'B', 0),
  complete('w2'),
  claim('w1'),
  checkpoint('w1', 'A', 0),
];

interface State {
  tasks: unknown;
  events: unknown;
  effects: unknown;
  holds: unknown;
}

async function stateOf(queue: WorkQueue): Promise<State> {
  return { tasks: (await queue.snapshot()).tasks, events: await queue.allEvents(), effects: await queue.effects(), holds: await queue.holds() };
}

interface Cut {
  twin: PowerLossTwin;
  report: PowerLossReport;
  acks: Acks;
  /** The queue reopened on what the disk kept. */
  after: WorkQueue;
  /** The state after each step, [0] the state before the first. */
  states: State[];
}

/** Runs the first `steps` steps on a fresh twin, cuts the power (keeping `keep` unsynced commits) and reopens. */
async function cutAfter(steps: number, durability: Durability, options: { keep?: number; checkpointPages?: number; record?: boolean } = {}): Promise<Cut> {
  const clock = new VirtualClock();
  const twinOptions: PowerLossOptions = { path: freshPath(), at: () => clock.now(), durability };
  if (options.checkpointPages !== undefined) twinOptions.checkpointPages = options.checkpointPages;
  const twin = PowerLossTwin.open(twinOptions);
  const run: Run = { queue: twin.openQueue({ clock, random: new SeededRandom('power-loss').fork('core') }), clock, acks: { enqueued: [], effects: [], completed: [], cancelled: [] }, claimed: new Map() };
  const states: State[] = options.record === true ? [await stateOf(run.queue)] : [];
  for (const step of SCRIPT.slice(0, steps)) {
    clock.advanceBy(1_000);
    await step.run(run);
    if (options.record === true) states.push(await stateOf(run.queue));
  }
  const report = twin.powerLoss(options.keep ?? 0);
  const after = twin.openQueue({ clock, random: new SeededRandom('power-loss').fork('core-after') });
  return { twin, report, acks: run.acks, after, states };
}

/** The acknowledgements the reopened queue no longer has, named. */
async function lostAcks(cut: Cut): Promise<string[]> {
  const { after, acks } = cut;
  const lost: string[] = [];
  for (const e of acks.enqueued) {
    const task = await after.get(e.taskId);
    if (task === undefined || task.tenant !== e.tenant || task.topic !== e.topic) lost.push(`enqueue ${e.tenant}/${e.topic}`);
  }
  for (const e of acks.effects) {
    const result = await after.effectResult(e.requestKey);
    if (result === undefined) lost.push(`recordEffect ${e.requestKey}`);
    else expect(result).toEqual(e.result);
  }
  for (const id of acks.completed) if ((await after.get(id))?.state !== 'done') lost.push(`complete ${id}`);
  for (const id of acks.cancelled) if ((await after.get(id))?.state !== 'cancelled') lost.push(`cancel ${id}`);
  return lost;
}

/** Cuts the power after every commit of the script in turn; what each cut lost. */
async function everyCut(durability: Durability, checkpointPages?: number) {
  const cuts: { steps: number; lostAcks: string[]; lostCommits: string[] }[] = [];
  for (let steps = 0; steps <= SCRIPT.length; steps++) {
    const cut = await cutAfter(steps, durability, checkpointPages === undefined ? {} : { checkpointPages });
    expect(cut.twin.commits.filter((c) => c.wrote)).toHaveLength(steps);
    cuts.push({ steps, lostAcks: await lostAcks(cut), lostCommits: cut.report.lost.map((c) => c.operation) });
    cut.twin.close();
  }
  return cuts;
}

describe('power loss under process_crash (synchronous NORMAL throughout)', () => {
  it('loses acknowledged enqueues and effect-ledger rows: the detector sees the loss', async () => {
    const cuts = await everyCut('process_crash');
    const lost = cuts.flatMap((c) => c.lostAcks);
    // With no checkpoint in the script, every cut returns to the database as it was opened.
    expect(cuts.at(-1)!.lostCommits).toHaveLength(SCRIPT.length);
    expect(lost).toContain('enqueue acme/t1');
    expect(lost).toContain('enqueue initech/t4');
    expect(lost).toContain('recordEffect run1:refund:aa');
    expect(lost).toContain('recordEffect run2:refund:bb');
    expect(lost).toContain(`complete 1`);
    expect(lost).toContain(`cancel 3`);
    // Every cut after the first acknowledgement lost something acknowledged.
    for (const cut of cuts.slice(1)) expect(cut.lostAcks.length).toBeGreaterThan(0);
  });

  it('keeps what a checkpoint synced: with a checkpoint after every commit nothing is lost', async () => {
    const cuts = await everyCut('process_crash', 1);
    for (const cut of cuts) expect(cut).toMatchObject({ lostAcks: [], lostCommits: [] });
  });

  it('loses exactly the commits after the last checkpoint', async () => {
    const cut = await cutAfter(SCRIPT.length, 'process_crash', { checkpointPages: 12 });
    const checkpointedAt = cut.twin.commits.filter((c) => c.wrote).length - cut.report.lost.length;
    expect(checkpointedAt).toBeGreaterThan(0);
    expect(cut.report.lost.length).toBeGreaterThan(0);
    expect(cut.report.synced).toBe(0);
    expect(cut.report.lost.map((c) => c.operation)).toEqual(SCRIPT.slice(checkpointedAt).map((s) => s.name.split(' ')[0]));
    cut.twin.close();
  });
});

describe('power loss under acknowledged (the default)', () => {
  it('loses no acknowledged enqueue, ledger row, run end or cancel at any commit boundary', async () => {
    const cuts = await everyCut('acknowledged');
    for (const cut of cuts) expect(cut.lostAcks).toEqual([]);
    // What it may lose are the writes the queue derives again: never one whose answer left the process.
    const lostCommits = cuts.flatMap((c) => c.lostCommits);
    expect(lostCommits.length).toBeGreaterThan(0);
    for (const operation of lostCommits) expect(LOSABLE_WRITES.has(operation)).toBe(true);
    for (const operation of lostCommits) expect(SYNCED_WRITES.has(operation)).toBe(false);
  });

  it('syncs the acknowledged commits only: an enqueue runs at NORMAL and the store syncs the WAL after it, the other synced writes run at FULL, the rest at NORMAL', async () => {
    const cut = await cutAfter(SCRIPT.length, 'acknowledged');
    for (const commit of cut.twin.commits) {
      const expected = commit.operation === 'enqueue' ? ['NORMAL', commit.wrote] : [SYNCED_WRITES.has(commit.operation) ? 'FULL' : 'NORMAL', false];
      expect([commit.operation, commit.synchronous, commit.syncedAfter]).toEqual([commit.operation, ...expected]);
    }
    cut.twin.close();
  });

  it('resumes after the power loss: the run is where its last synced write left it', async () => {
    // Cut right after checkpoint B of w1's run: the effect (synced) is kept, the checkpoint is not.
    const cut = await cutAfter(7, 'acknowledged');
    expect(cut.report.lost.map((c) => c.operation)).toEqual(['checkpoint']);
    const task = await cut.after.get(1);
    expect(task).toMatchObject({ state: 'running', workerId: 'w1', generation: 1 });
    expect((await cut.after.lastCheckpoint(1))?.kind).toBe('A');
    expect(await cut.after.effectResult('run1:refund:aa')).toEqual({ refund: 'run1:refund:aa' });
    cut.twin.close();
  });
});

describe('power loss under every_commit (synchronous FULL throughout)', () => {
  it('loses no commit at all', async () => {
    const cuts = await everyCut('every_commit');
    for (const cut of cuts) expect(cut).toMatchObject({ lostAcks: [], lostCommits: [] });
  });
});

describe('the power-loss twin', () => {
  it('restores the synced state plus exactly the unsynced prefix asked for, through WAL recovery', async () => {
    const probe = await cutAfter(SCRIPT.length, 'acknowledged', { record: true });
    probe.twin.close();
    // The last synced commit of the script, and how many after it were not synced.
    const synced = probe.report.synced;
    const unsynced = probe.report.lost.length;
    expect(unsynced).toBeGreaterThan(1);
    for (let keep = 0; keep <= unsynced; keep++) {
      const cut = await cutAfter(SCRIPT.length, 'acknowledged', { keep, record: true });
      expect(cut.report).toMatchObject({ synced, kept: keep });
      expect(cut.report.lost).toHaveLength(unsynced - keep);
      expect(await stateOf(cut.after)).toEqual(cut.states[synced + keep]);
      cut.twin.close();
    }
  });

  it('returns to the last synced state under NORMAL: the state the queue had when it opened', async () => {
    const cut = await cutAfter(SCRIPT.length, 'process_crash', { record: true });
    expect(await stateOf(cut.after)).toEqual(cut.states[0]);
    cut.twin.close();
  });

  it('draws the surviving prefix from a seeded Random, the same for the same seed', async () => {
    const draws: number[] = [];
    for (const seed of ['a', 'a', 'b', 'c', 'd']) {
      const clock = new VirtualClock();
      const twin = PowerLossTwin.open({ path: freshPath(), at: () => clock.now(), durability: 'process_crash' });
      const queue = twin.openQueue({ clock });
      for (let i = 0; i < 6; i++) await queue.enqueue({ tenant: 'a', topic: `t${i}`, version: 1, priority: 0, input: {} });
      const report = twin.powerLoss(new SeededRandom(seed));
      expect(report.kept + report.lost.length).toBe(6);
      const reopened = twin.openQueue({ clock });
      expect((await reopened.snapshot()).tasks.map((t) => t.topic)).toEqual(Array.from({ length: report.kept }, (_, i) => `t${i}`));
      draws.push(report.kept);
      twin.close();
    }
    expect(draws[0]).toBe(draws[1]);
  });

  it('records commits that wrote nothing as syncing nothing', async () => {
    const clock = new VirtualClock();
    const twin = PowerLossTwin.open({ path: freshPath(), at: () => clock.now(), durability: 'process_crash' });
    const queue = twin.openQueue({ clock });
    await queue.enqueue({ tenant: 'a', topic: 't', version: 1, priority: 0, input: {} });
    expect(await queue.heartbeat(1, 'nobody', 1)).toMatchObject({ ok: false, error: 'stale_lease' });
    expect(twin.commits.map((c) => [c.operation, c.wrote])).toEqual([['enqueue', true], ['heartbeat', false]]);
    expect(twin.unsynced).toBe(1);
    expect(twin.powerLoss().lost.map((c) => c.operation)).toEqual(['enqueue']);
    twin.close();
  });

  it('models OFF as never synced: even a checkpoint keeps nothing', async () => {
    const clock = new VirtualClock();
    const twin = PowerLossTwin.open({ path: freshPath(), at: () => clock.now(), durability: 'process_crash', checkpointPages: 1 });
    // A connection someone turned to OFF behind the store's back.
    twin.store.db.pragma('synchronous = OFF');
    const queue = twin.openQueue({ clock });
    await queue.enqueue({ tenant: 'a', topic: 't', version: 1, priority: 0, input: {} });
    expect(twin.commits.at(-1)).toMatchObject({ operation: 'enqueue', synchronous: 'OFF', wrote: true });
    expect(() => twin.powerLoss(1)).toThrow(PowerLossInputError);
    const report = twin.powerLoss();
    expect(report.lost.map((c) => c.operation)).toEqual(['enqueue']);
    expect((await twin.openQueue({ clock }).snapshot()).tasks).toEqual([]);
    twin.close();
  });

  it('fails the calls of the queue that was running when the power went', async () => {
    const clock = new VirtualClock();
    const twin = PowerLossTwin.open({ path: freshPath(), at: () => clock.now() });
    const queue = twin.openQueue({ clock });
    twin.powerLoss();
    await expect(queue.enqueue({ tenant: 'a', topic: 't', version: 1, priority: 0, input: {} })).rejects.toThrow(PowerLostError);
    await expect(queue.get(1)).rejects.toThrow(PowerLostError);
    await queue.close();
    twin.close();
    expect(() => twin.powerLoss()).toThrow(PowerLossInputError);
  });

  it('uses the production default durability when none is given', async () => {
    const clock = new VirtualClock();
    const twin = PowerLossTwin.open({ path: freshPath(), at: () => clock.now() });
    const queue = twin.openQueue({ clock });
    await queue.enqueue({ tenant: 'a', topic: 't', version: 1, priority: 0, input: {} });
    await queue.claim('w');
    expect(twin.commits.map((c) => [c.operation, c.synchronous, c.syncedAfter])).toEqual([
      ['enqueue', 'NORMAL', true],
      ['claim', 'NORMAL', false],
    ]);
    expect(twin.powerLoss().lost.map((c) => c.operation)).toEqual(['claim']);
    twin.close();
  });

  it('refuses bad arguments with a typed error', () => {
    const at = () => 0;
    expect(() => PowerLossTwin.open({ path: ':memory:', at })).toThrow(PowerLossInputError);
    expect(() => PowerLossTwin.open({ path: '', at })).toThrow(PowerLossInputError);
    expect(() => PowerLossTwin.open({ path: freshPath(), at, checkpointPages: 0 })).toThrow(PowerLossInputError);
    expect(() => PowerLossTwin.open({ path: freshPath(), at: 5 as never })).toThrow(PowerLossInputError);
    expect(() => PowerLossTwin.open(null as never)).toThrow(PowerLossInputError);
    const twin = PowerLossTwin.open({ path: freshPath(), at });
    expect(() => twin.powerLoss(-1)).toThrow(PowerLossInputError);
    expect(() => twin.powerLoss(1)).toThrow(PowerLossInputError);
    expect(() => twin.powerLoss('all' as never)).toThrow(PowerLossInputError);
    twin.close();
  });

  it('refuses a WAL that another connection checkpointed behind its back', async () => {
    const clock = new VirtualClock();
    const twin = PowerLossTwin.open({ path: freshPath(), at: () => clock.now(), durability: 'process_crash' });
    const queue = twin.openQueue({ clock });
    await queue.enqueue({ tenant: 'a', topic: 't1', version: 1, priority: 0, input: {} });
    twin.store.db.pragma('wal_checkpoint(TRUNCATE)');
    await expect(queue.enqueue({ tenant: 'a', topic: 't2', version: 1, priority: 0, input: {} })).rejects.toThrow(PowerLossModelError);
    twin.close();
  });
});
