import type { ClientBase, Notification } from 'pg';
import { privateNoticeBoard } from '../store/notices.ts';

/** A connection held for LISTEN alone, and how to give it back (a pool's client) or end it (a client of its own). */
export interface ListenConnection {
  client: ClientBase;
  release(broken?: Error): void;
}

/** How long the first reconnect waits, and the most any waits (doubling between, with jitter). */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5_000;
/** How often the roster of the channel's listeners is read again while connected. */
export const ROSTER_MS = 5_000;
/** How long a listener that a notice did not name waits before it tells its watchers. */
export const FOLLOW_MS = 25;

/**
 * W1 on PostgreSQL: one connection per store that LISTENs on the queue's channel, and tells the
 * store's watchers when a notice arrives. The notices are sent by the transactions that make a task
 * claimable, in the transaction (PgStore: NOTIFY with its COMMIT), so a worker woken by one finds the
 * task committed.
 *
 * This is a production adapter (like clock.ts and waiter.ts) because it keeps a real connection and
 * real reconnect timers; the simulator never opens one: its workers hear notices through the virtual
 * loop (sim/store/fleet.ts). A dropped connection (a server restart, a network cut) is reconnected with
 * capped, jittered backoff. While it is down nothing arrives, and the workers poll on their bounded
 * fallback interval; when it is back the watchers are told once, since anything may have become
 * claimable meanwhile. The connection is opened on the first watcher and closed with the last, so a
 * process that only enqueues holds none.
 *
 * One listener first, the rest a little later. PostgreSQL delivers a notice to every listener, and a
 * fleet whose every idle process claims at once for one new task spends the machine on claims that find
 * nothing while the one that will win is starting (on 2 cores, 4 processes waking together took about
 * a third longer to start a task than one). So each connection names itself (`application_name`), reads
 * the roster of the channel's listeners (their backend pids, in order) when it connects and every
 * ROSTER_MS, and a notice carries its transaction's id: the listener whose place in the roster is that id
 * modulo the roster's length tells its watchers at once, every other one FOLLOW_MS later (one wake for
 * any number of notices meanwhile). So a task still waits no more than FOLLOW_MS when the named process
 * is busy or gone, and a notice with no id, or a roster that cannot be read or does not hold this
 * connection, tells everyone at once as before. What a notice carries after its id (the handoff of an
 * idle queue's one task: PgStore) goes to the store before its watchers are told, from the notices
 * that tell it at once; from the others the store is told there is none.
 */
export class PgListener {
  private readonly board = privateNoticeBoard();
  private connection: ListenConnection | undefined;
  private connecting = false;
  private retryMs = RETRY_FIRST_MS;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
  /** The backend pids of the channel's listeners, in order, as last read; empty when unknown. */
  private roster: number[] = [];
  private rosterTimer: ReturnType<typeof setTimeout> | undefined;
  /** A wake for the notices this listener was not named for, due FOLLOW_MS after the first of them. */
  private following: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly connect: () => Promise<ListenConnection>,
    /** An identifier of lower-case letters, digits and underscores (PgStore makes it from the queue's lock key). */
    private readonly channel: string,
    private readonly log: (message: string) => void = () => {},
    /**
     * Told of every notice, before its watchers are: what it carries after its transaction's id
     * (PgStore's handoff, the one ready task of an otherwise idle queue) when it names this listener,
     * undefined otherwise (the queue changed, and another listener claims first).
     */
    private readonly handedOff: (text: string | undefined) => void = () => {},
  ) {
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) throw new RangeError(`a LISTEN channel must be a plain identifier, got ${JSON.stringify(channel)}`);
  }

  /** Whether the LISTEN connection is up now (false while it reconnects: the workers poll meanwhile). */
  get listening(): boolean {
    return this.connection !== undefined;
  }

  subscribe(listener: () => void): () => void {
    const unsubscribe = this.board.subscribe(listener);
    this.ensure();
    return () => {
      unsubscribe();
      if (this.board.listeners === 0) this.disconnect();
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.disconnect();
    // A closed listener wakes nobody: a follower's wake still due is dropped with it.
    if (this.following !== undefined) clearTimeout(this.following);
    this.following = undefined;
  }

  private ensure(): void {
    if (this.closed || this.connection !== undefined || this.connecting || this.timer !== undefined || this.board.listeners === 0) return;
    this.connecting = true;
    void this.open().finally(() => {
      this.connecting = false;
    });
  }

  private async open(): Promise<void> {
    let connection: ListenConnection | undefined;
    try {
      connection = await this.connect();
      const opened = connection;
      opened.client.on('notification', (message: Notification) => {
        if (message.channel === this.channel && this.connection === opened) this.heard(opened, message.payload);
      });
      opened.client.on('error', (error: Error) => this.lost(opened, error));
      opened.client.on('end', () => this.lost(opened, new Error('the LISTEN connection ended')));
      await opened.client.query(`SET application_name = '${this.applicationName}'; LISTEN ${this.channel}`);
      if (this.closed || this.board.listeners === 0) {
        opened.release();
        return;
      }
      this.connection = opened;
      void this.readRoster(opened);
      if (this.retryMs > RETRY_FIRST_MS) this.log(`LISTEN ${this.channel}: connected again`);
      this.retryMs = RETRY_FIRST_MS;
      // Whatever became claimable while nobody listened was announced to no one: look once now.
      this.board.publish();
    } catch (error) {
      connection?.release(error instanceof Error ? error : new Error(String(error)));
      this.log(`LISTEN ${this.channel}: cannot connect (${error instanceof Error ? error.message : String(error)}); polling until it can`);
      this.retry();
    }
  }

  /** What this listener's connection calls itself, so that the others find it in their roster. */
  private get applicationName(): string {
    return `leasehold:${this.channel}`;
  }

  /** A notice on the channel: its watchers are told now if it names this listener, else a little later. */
  private heard(connection: ListenConnection, payload: string | undefined): void {
    const own = (connection.client as { processID?: unknown }).processID;
    const n = this.roster.length;
    const notice = payload === undefined ? null : /^(\d{1,15})(?: ([^]+))?$/.exec(payload);
    const id = notice === null ? undefined : Number(notice[1]);
    if (id === undefined || n < 2 || typeof own !== 'number' || !this.roster.includes(own) || this.roster[id % n] === own) {
      this.handedOff(notice?.[2]);
      this.board.publish();
      return;
    }
    this.handedOff(undefined);
    if (this.following !== undefined) return;
    this.following = setTimeout(() => {
      // allow-ambient: production adapter, the wake of a listener a notice did not name
      this.following = undefined;
      this.board.publish();
    }, FOLLOW_MS);
    this.following.unref?.();
  }

  /** Reads the channel's listeners into the roster, now and every ROSTER_MS while this connection lasts. */
  private async readRoster(connection: ListenConnection): Promise<void> {
    try {
      const answer = (await connection.client.query({
        text: 'SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid',
        values: [this.applicationName],
      })) as { rows?: { pid: unknown }[] } | undefined;
      if (this.connection !== connection) return;
      this.roster = (answer?.rows ?? []).map((row) => Number(row.pid)).filter((pid) => Number.isSafeInteger(pid));
    } catch {
      // Unread: everyone is told at once (an empty roster), and the next read may do better.
      if (this.connection !== connection) return;
      this.roster = [];
    }
    this.rosterTimer = setTimeout(() => {
      // allow-ambient: production adapter, the roster's refresh
      this.rosterTimer = undefined;
      if (this.connection === connection) void this.readRoster(connection);
    }, ROSTER_MS);
    this.rosterTimer.unref?.();
  }

  private lost(connection: ListenConnection, error: Error): void {
    if (this.connection !== connection) return;
    this.connection = undefined;
    this.forget();
    connection.release(error);
    this.log(`LISTEN ${this.channel}: connection lost (${error.message}); polling until it is back`);
    this.retry();
  }

  private retry(): void {
    if (this.closed || this.board.listeners === 0 || this.timer !== undefined) return;
    // Jitter spreads the reconnects of a fleet that lost the server at the same moment.
    const delayMs = Math.round(this.retryMs * (0.5 + Math.random() / 2)); // allow-ambient: production adapter, reconnect jitter
    this.retryMs = Math.min(RETRY_MAX_MS, this.retryMs * 2);
    this.timer = setTimeout(() => {
      // allow-ambient: production adapter, reconnect timer
      this.timer = undefined;
      this.ensure();
    }, delayMs);
    this.timer.unref?.();
  }

  private disconnect(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const connection = this.connection;
    this.connection = undefined;
    this.forget();
    connection?.release();
  }

  /** Drops the roster and its refresh with the connection they belong to; a wake already due still comes. */
  private forget(): void {
    if (this.rosterTimer !== undefined) clearTimeout(this.rosterTimer);
    this.rosterTimer = undefined;
    this.roster = [];
  }
}
