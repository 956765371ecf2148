/**
 * The store contract, what a body reads first (store.ts ReadsFirst) and what a store answers ahead: a
 * store may send a body's first reads with the round trip that takes its lock and answer the body's
 * reads from them, and PostgreSQL does (pg-statements.ts readsFirst, answeredFirst; `ahead`, reads
 * answered with the one before them). Whatever it does, a body must get the answers it would get
 * without, and a read after a write must see the write. Each case runs the queue's own order of
 * statements for an enqueue, a holder's call and a claim, with and without ReadsFirst, on every store
 * kind (__test-helpers__/harness.ts); the data they read is committed first (what is read first is read
 * before the body writes anything), under names of each case's own.
 */
import { describe, expect, it } from 'vitest';
import type { ReadsFirst, StoreTx } from '../store.ts';
import { AT, STORE_KINDS, claim, contractStore, endByHolder, makeUncertain, newTask, readyTask, type Body } from './__test-helpers__/harness.ts';

function withReads<T>(body: (tx: StoreTx, at: number) => Generator<unknown, T, unknown>, readsFirst: ReadsFirst): Body<T> {
  return Object.assign((tx: StoreTx, at: number) => body(tx, at), { readsFirst });
}

describe.each(STORE_KINDS)('reads first, and reads answered ahead, on %s', (kind) => {
  const db = contractStore(kind);

  it("an enqueue's body answers the same with ReadsFirst.enqueue, its insert included (a free key and a taken one)", async () => {
    const tenant = 'rf-enqueue';
    await db.commit(function* (tx) {
      yield* readyTask(tx, { tenant, topic: 'chat', version: 1, inputHash: 'h1' });
      const started = yield* readyTask(tx, { tenant, topic: 'chat', version: 2, inputHash: 'h2' });
      yield* claim(tx, started);
      yield* readyTask(tx, { tenant, topic: 'chat', version: 4, inputHash: 'h4' });
      yield* tx.tenantPause('rf-enqueue-paused', 'manual', AT);
    });
    const enqueue = (version: number) =>
      function* (tx: StoreTx) {
        const latest = yield* tx.taskLatestVersion(tenant, 'chat');
        const older = yield* tx.taskOlderUnstarted(tenant, 'chat', version);
        const paused = (yield* tx.tenantPauseList()).filter((row) => row.tenant.startsWith('rf-enqueue'));
        const live = yield* tx.counterLive();
        const id = yield* tx.taskCreate(newTask({ tenant, topic: 'chat', version, inputHash: `h${version}` }));
        yield* tx.counterLiveAdjust(1);
        yield* tx.eventAppend(id ?? 0, 1, 'enqueued', AT, '{}', null, null);
        return { latest, older, paused, live, id, liveAfter: yield* tx.counterLive(), rows: (yield* tx.taskListForTenant(tenant)).map((row) => [row.id, row.version, row.state]), events: yield* tx.eventListForTask(id ?? 0) };
      };
    for (const version of [3, 4]) {
      const plain = await db.scratch(enqueue(version));
      const ahead = await db.scratch(withReads(enqueue(version), { enqueue: { tenant, topic: 'chat', version } }));
      expect(ahead).toEqual(plain);
      expect(plain.latest).toBe(4);
      expect(plain.id === undefined).toBe(version === 4);
      expect(plain.paused).toEqual([{ tenant: 'rf-enqueue-paused', reason: 'manual', at: AT }]);
      expect(plain.liveAfter).toBe(plain.live + 1);
    }
  });

  it("a holder's body answers the same with ReadsFirst.holderRow, and its fenced write lands", async () => {
    const tenant = 'rf-holder';
    const id = await db.commit(function* (tx) {
      const id = yield* readyTask(tx, { tenant, topic: 'job', version: 1, inputHash: 'h1' });
      yield* claim(tx, id, { workerId: 'rf-w', leaseUntil: AT + 60_000 });
      yield* tx.checkpointInsert({ id, generation: 1, kind: 'A', step: 1, state: '{}', usage: '{"tokens":5}', now: AT, eventSeq: 3, requeueSafe: 0 });
      yield* readyTask(tx, { tenant, topic: 'job', version: 2, inputHash: 'h2' });
      return id;
    });
    const complete = function* (tx: StoreTx, at: number) {
      const row = yield* tx.holderRow(id);
      const newer = yield* tx.taskNewerVersionExists(tenant, 'job', row!.version);
      const usage = yield* tx.checkpointLastUsage(id);
      const seq = yield* endByHolder(tx, { id, workerId: 'rf-w', generation: 1, now: at }, 'done', { eventSeq: row!.event_seq + 1, hold: { state: 'settled', charged: 5, usage: usage ?? null, reason: 'checkpointed' } });
      return { row, newer, usage, seq, after: yield* tx.taskById(id) };
    };
    const plain = await db.scratch(complete);
    const ahead = await db.scratch(withReads(complete, { holderRow: id }));
    expect(ahead).toEqual(plain);
    expect(plain).toMatchObject({ newer: true, usage: '{"tokens":5}', seq: 3, after: { state: 'done', hold_state: 'settled', hold_usage: '{"tokens":5}' } });
  });

  it("a claim's body answers the same with ReadsFirst.claim", async () => {
    await db.commit(function* (tx) {
      const a = yield* readyTask(tx, { tenant: 'rf-claim-a', topic: 's', version: 1, inputHash: 'a1', priority: 3 });
      yield* readyTask(tx, { tenant: 'rf-claim-a', topic: 's', version: 2, inputHash: 'a2', priority: 9 });
      yield* readyTask(tx, { tenant: 'rf-claim-b', topic: 't', version: 1, inputHash: 'b1', priority: 5, now: AT - 120_000 });
      yield* readyTask(tx, { tenant: 'rf-claim-c', topic: 'u', version: 1, inputHash: 'c1', now: AT + 1_000 });
      yield* claim(tx, a, { workerId: 'rf-w' });
      yield* tx.tenantPause('rf-claim-paused', 'manual', AT);
    });
    const claimBody = function* (tx: StoreTx, at: number) {
      const holding = (yield* tx.claimHolding()).filter((row) => row.tenant.startsWith('rf-claim')).map((row) => row.id);
      const paused = (yield* tx.tenantPauseList()).filter((row) => row.tenant.startsWith('rf-claim'));
      const heads = (yield* tx.claimReadyHeads(at)).filter((row) => row.tenant.startsWith('rf-claim'));
      const candidates = [];
      for (const { head } of heads) {
        if (head === null) continue;
        const candidate = yield* tx.claimCandidate(head.id);
        candidates.push({ candidate, busy: yield* tx.sessionBusy(candidate!.tenant, candidate!.topic, candidate!.id) });
      }
      return { holding, paused, heads, candidates };
    };
    const plain = await db.scratch(claimBody);
    const ahead = await db.scratch(withReads(claimBody, { claim: { agingCap: 30, agingPeriodMs: 60_000, perTenantLimit: 2, tenantLimits: {} } }));
    expect(ahead).toEqual(plain);
    expect(plain.heads.map((row) => [row.tenant, row.head?.priority ?? null])).toEqual([
      ['rf-claim-a', 9],
      ['rf-claim-b', 5],
      ['rf-claim-c', null],
    ]);
    expect(plain.candidates.map((row) => [row.candidate?.tenant, row.busy])).toEqual([
      ['rf-claim-a', true],
      ['rf-claim-b', false],
    ]);
  });

  // Other cases of this file commit rows: this one reads only its own tenant's.
  it('a read answered ahead is not answered again after a write that changes it', async () => {
    const answer = await db.scratch(function* (tx, at) {
      const a = yield* readyTask(tx, { tenant: 'rw', topic: 's', version: 1 });
      const b = yield* readyTask(tx, { tenant: 'rw', topic: 's', version: 2 });
      // claimHolding() reads the paused tenants and the ready heads ahead (PostgreSQL); a pause and a claim follow.
      yield* tx.claimHolding();
      yield* tx.tenantPause('rw', 'manual', at);
      const paused = (yield* tx.tenantPauseList()).map((row) => row.tenant).filter((tenant) => tenant === 'rw');
      // claimCandidate(b) reads sessionBusy of its session ahead; then a of the same session is claimed.
      yield* tx.claimCandidate(b);
      yield* claim(tx, a);
      const busy = yield* tx.sessionBusy('rw', 's', b);
      // holderRow(a) reads taskNewerVersionExists and checkpointLastUsage of a ahead; then both change.
      yield* tx.holderRow(a);
      yield* readyTask(tx, { tenant: 'rw', topic: 's', version: 3 });
      yield* tx.checkpointInsert({ id: a, generation: 1, kind: 'A', step: 1, state: '{}', usage: '{"tokens":2}', now: at, eventSeq: 3, requeueSafe: 0 });
      const newer = yield* tx.taskNewerVersionExists('rw', 's', 2);
      const usage = yield* tx.checkpointLastUsage(a);
      // claimHolding() again, then a's move to uncertain: the heads and holders read after it see it.
      yield* tx.claimHolding();
      yield* makeUncertain(tx, a);
      const holders = (yield* tx.claimHolding()).filter((row) => row.tenant === 'rw').map((row) => [row.id - a, row.state]);
      return { paused, busy, newer, usage, holders };
    });
    expect(answer).toEqual({ paused: ['rw'], busy: true, newer: true, usage: '{"tokens":2}', holders: [[0, 'uncertain']] });
  });
});
