/**
 * W1 on PostgreSQL: the LISTEN connection's life, with a connection the test controls (the real server's
 * cases, a terminated backend included, are in src/worker/wakeups.test.ts). Waits end on states, never
 * on durations; the reconnect delays are real but short (100 ms doubling, jittered down by up to half).
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { FOLLOW_MS, PgListener, type ListenConnection } from './pg-listener.ts';

class FakeClient extends EventEmitter {
  readonly queries: string[] = [];
  failListen = false;
  /** This connection's backend pid (pg's Client.processID), and what a roster read answers (an Error: the read fails). */
  processID: number | undefined;
  roster: number[] | Error = [];
  query(config: string | { text: string; values: unknown[] }): Promise<unknown> {
    const text = typeof config === 'string' ? config : config.text;
    this.queries.push(text);
    if (this.failListen) return Promise.reject(new Error('LISTEN refused'));
    if (text.startsWith('SELECT pid FROM pg_stat_activity')) {
      return this.roster instanceof Error ? Promise.reject(this.roster) : Promise.resolve({ rows: this.roster.map((pid) => ({ pid })) });
    }
    return Promise.resolve({ rows: [] });
  }
}

function fakeServer() {
  const clients: FakeClient[] = [];
  const released: (Error | undefined)[] = [];
  let refusals = 0;
  return {
    clients,
    released,
    refuse(n: number) {
      refusals = n;
    },
    connect: async (): Promise<ListenConnection> => {
      if (refusals > 0) {
        refusals--;
        throw new Error('connect ECONNREFUSED');
      }
      const client = new FakeClient();
      clients.push(client);
      return { client: client as unknown as ListenConnection['client'], release: (broken) => void released.push(broken) };
    },
  };
}

async function until(what: string, done: () => boolean): Promise<void> {
  for (let i = 0; i < 3_000 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  if (!done()) throw new Error(`never: ${what}`);
}

describe('PgListener (W1 on PostgreSQL)', () => {
  it('refuses a channel that is not a plain identifier', () => {
    expect(() => new PgListener(fakeServer().connect, 'leasehold; DROP TABLE tasks')).toThrow(RangeError);
  });

  it('LISTENs on the first watcher, tells every watcher of a notice on its channel only, and closes with the last', async () => {
    const server = fakeServer();
    const listener = new PgListener(server.connect, 'leasehold_claimable_1');
    let heard = 0;
    const stop = listener.subscribe(() => heard++);
    await until('listening', () => listener.listening);
    expect(server.clients[0]!.queries.slice(0, 2)).toEqual([
      "SET application_name = 'leasehold:leasehold_claimable_1'; LISTEN leasehold_claimable_1",
      'SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid',
    ]);
    const afterConnect = heard;
    server.clients[0]!.emit('notification', { channel: 'leasehold_claimable_1' });
    server.clients[0]!.emit('notification', { channel: 'some_other_queue' });
    expect(heard - afterConnect).toBe(1);
    stop();
    expect(listener.listening).toBe(false);
    expect(server.released).toEqual([undefined]);
  });

  it('a connection that cannot be made is tried again with backoff, logged, and the watchers are told once it is up', async () => {
    const server = fakeServer();
    server.refuse(2);
    const logs: string[] = [];
    const listener = new PgListener(server.connect, 'leasehold_claimable_2', (line) => logs.push(line));
    let heard = 0;
    listener.subscribe(() => heard++);
    await until('listening after two refusals', () => listener.listening);
    expect(logs.filter((line) => /cannot connect \(connect ECONNREFUSED\); polling until it can/.test(line))).toHaveLength(2);
    expect(logs.at(-1)).toMatch(/connected again/);
    expect(heard).toBe(1);
    await listener.close();
  });

  it('a LISTEN the server refuses releases the connection as broken and tries again', async () => {
    const server = fakeServer();
    const original = server.connect;
    let first = true;
    const connect = async () => {
      const connection = await original();
      if (first) (connection.client as unknown as FakeClient).failListen = true;
      first = false;
      return connection;
    };
    const retried = new PgListener(connect, 'leasehold_claimable_3');
    retried.subscribe(() => {});
    await until('listening on the second connection', () => retried.listening);
    expect(server.released[0]).toBeInstanceOf(Error);
    await retried.close();
  });

  it('a connection lost while listening (an error, or its end) is released, logged and made again, and the watchers are told', async () => {
    const server = fakeServer();
    const logs: string[] = [];
    const listener = new PgListener(server.connect, 'leasehold_claimable_4', (line) => logs.push(line));
    let heard = 0;
    listener.subscribe(() => heard++);
    await until('listening', () => listener.listening);
    server.clients[0]!.emit('error', new Error('terminating connection due to administrator command'));
    expect(listener.listening).toBe(false);
    expect(logs.at(-1)).toMatch(/connection lost \(terminating connection due to administrator command\); polling until it is back/);
    await until('listening again', () => listener.listening && server.clients.length === 2);
    server.clients[1]!.emit('end');
    await until('listening a third time', () => listener.listening && server.clients.length === 3);
    expect(heard).toBe(3);
    // A stale connection's late events change nothing.
    server.clients[0]!.emit('notification', { channel: 'leasehold_claimable_4' });
    expect(heard).toBe(3);
    await listener.close();
    expect(listener.listening).toBe(false);
  });

  it('a watcher that leaves while the connection is being made, or a close, lets go of it once LISTEN answers', async () => {
    const server = fakeServer();
    const listener = new PgListener(server.connect, 'leasehold_claimable_5');
    const stop = listener.subscribe(() => {});
    stop();
    await until('the connection made meanwhile released', () => server.released.length === 1);
    expect(listener.listening).toBe(false);
    const closing = new PgListener(server.connect, 'leasehold_claimable_5');
    closing.subscribe(() => {});
    await closing.close();
    await until('released after close', () => server.released.length === 2);
    expect(closing.listening).toBe(false);
  });
});

describe('PgListener: a backoff is dropped with the last watcher', () => {
  it('a connection attempt that fails after the last watcher left schedules no retry: the next watcher connects at once', async () => {
    const server = fakeServer();
    server.refuse(1);
    let attempts = 0;
    const logs: string[] = [];
    const listener = new PgListener(async () => (attempts++, server.connect()), 'leasehold_claimable_6', (line) => logs.push(line));
    const stop = listener.subscribe(() => {});
    stop();
    await until('the attempt refused', () => logs.some((line) => /cannot connect/.test(line)));
    expect(attempts).toBe(1);
    // No backoff left behind: a new watcher starts an attempt in the same tick.
    listener.subscribe(() => {});
    expect(attempts).toBe(2);
    await until('listening', () => listener.listening);
    await listener.close();
  });

  it('the last watcher leaving during a backoff cancels it: the next watcher connects at once', async () => {
    const server = fakeServer();
    server.refuse(1);
    let attempts = 0;
    const logs: string[] = [];
    let stop = () => {};
    // The watcher leaves right after the refusal is logged, once the retry's timer is set (it is set in that tick).
    const listener = new PgListener(async () => (attempts++, server.connect()), 'leasehold_claimable_7', (line) => {
      logs.push(line);
      queueMicrotask(() => {
        const leave = stop;
        stop = () => {};
        leave();
      });
    });
    stop = listener.subscribe(() => {});
    await until('the attempt refused and the watcher gone', () => logs.some((line) => /cannot connect/.test(line)));
    await new Promise((resolve) => setImmediate(resolve));
    expect(attempts).toBe(1);
    listener.subscribe(() => {});
    expect(attempts).toBe(2);
    await until('listening', () => listener.listening);
    await listener.close();
  });

  it('a LISTEN refused with something that is not an Error releases the connection with an Error of its text, and logs it', async () => {
    const server = fakeServer();
    const logs: string[] = [];
    let first = true;
    const connect = async () => {
      const connection = await server.connect();
      if (first) (connection.client as unknown as FakeClient).query = () => Promise.reject('the server said no');
      first = false;
      return connection;
    };
    const listener = new PgListener(connect, 'leasehold_claimable_8', (line) => logs.push(line));
    listener.subscribe(() => {});
    await until('listening on the second connection', () => listener.listening);
    expect(server.released[0]).toEqual(new Error('the server said no'));
    expect(logs[0]).toBe('LISTEN leasehold_claimable_8: cannot connect (the server said no); polling until it can');
    await listener.close();
  });
});

describe('PgListener: one listener first, the rest FOLLOW_MS later', () => {
  /** A listener whose connection is backend `own`, with the channel's roster `roster`, listening; and how many wakes it gave. */
  async function listening(own: number | undefined, roster: number[] | Error) {
    const server = fakeServer();
    const original = server.connect;
    const connect = async () => {
      const connection = await original();
      const client = connection.client as unknown as FakeClient;
      client.processID = own;
      client.roster = roster;
      return connection;
    };
    const handoffs: (string | undefined)[] = [];
    const listener = new PgListener(connect, 'leasehold_claimable_9', undefined, (text) => handoffs.push(text));
    const wakes: number[] = [];
    listener.subscribe(() => wakes.push(wakes.length));
    await until('listening, the roster read', () => listener.listening && server.clients[0]!.queries.length === 2);
    // The wake every connection gives when it is up.
    await until('the first wake', () => wakes.length === 1);
    const notice = (payload?: string) => server.clients[0]!.emit('notification', { channel: 'leasehold_claimable_9', payload });
    return { listener, wakes, notice, handoffs };
  }

  it('hands what a notice carries after its id to the store when the notice names this listener, and undefined when it names another', async () => {
    const { listener, wakes, notice, handoffs } = await listening(202, [101, 202, 303]);
    notice('4 [1,"acme"]'); // backend 202: told at once, with the handoff
    expect(handoffs).toEqual(['[1,"acme"]']);
    expect(wakes).toHaveLength(2);
    notice('3 [2,"acme"]'); // backend 101 claims first: this store must not try the handoff
    notice('7'); // backend 202 again, no handoff: the queue had more than one task live
    notice('10 two\nlines'); // backend 202; a payload's text is handed on as it came
    expect(handoffs).toEqual(['[1,"acme"]', undefined, undefined, 'two\nlines']);
    await listener.close();
  });

  it('a notice whose id names this listener in the roster wakes it at once', async () => {
    const { listener, wakes, notice } = await listening(202, [101, 202, 303]);
    notice('4'); // 4 mod 3 = 1: backend 202
    expect(wakes).toHaveLength(2);
    await listener.close();
  });

  it('a notice naming another listener wakes this one FOLLOW_MS later, once for any number of notices meanwhile', async () => {
    const { listener, wakes, notice } = await listening(202, [101, 202, 303]);
    notice('3'); // backend 101
    notice('5'); // backend 303
    expect(wakes).toHaveLength(1);
    await until('the follower woken', () => wakes.length === 2);
    await new Promise((resolve) => setTimeout(resolve, 2 * FOLLOW_MS));
    expect(wakes).toHaveLength(2);
    // The next notice that names it is heard at once again.
    notice('7');
    expect(wakes).toHaveLength(3);
    await listener.close();
  });

  it('a close drops a follower\'s wake still due', async () => {
    const { listener, wakes, notice } = await listening(202, [101, 202, 303]);
    notice('3'); // backend 101: this one would wake FOLLOW_MS later
    await listener.close();
    await new Promise((resolve) => setTimeout(resolve, 3 * FOLLOW_MS));
    expect(wakes).toHaveLength(1);
  });

  it('wakes at once for a notice with no id, or with a roster that is too short, does not hold this connection, or could not be read', async () => {
    for (const [own, roster, payload] of [
      [202, [101, 202], undefined],
      [202, [101, 202], 'not a number'],
      [202, [202], '3'],
      [202, [101, 303], '3'],
      [undefined, [101, 202], '3'],
      [202, new Error('permission denied for view pg_stat_activity'), '3'],
    ] as const) {
      const { listener, wakes, notice } = await listening(own, roster as number[] | Error);
      notice(payload);
      expect(wakes, `own ${own}, roster ${String(roster)}, payload ${payload}`).toHaveLength(2);
      await listener.close();
    }
  });
});
