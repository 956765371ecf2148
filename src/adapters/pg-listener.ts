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
 */
export class PgListener {
  private readonly board = privateNoticeBoard();
  private connection: ListenConnection | undefined;
  private connecting = false;
  private retryMs = RETRY_FIRST_MS;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

  constructor(
    private readonly connect: () => Promise<ListenConnection>,
    /** An identifier of lower-case letters, digits and underscores (PgStore makes it from the queue's lock key). */
    private readonly channel: string,
    private readonly log: (message: string) => void = () => {},
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
        if (message.channel === this.channel && this.connection === opened) this.board.publish();
      });
      opened.client.on('error', (error: Error) => this.lost(opened, error));
      opened.client.on('end', () => this.lost(opened, new Error('the LISTEN connection ended')));
      await opened.client.query(`LISTEN ${this.channel}`);
      if (this.closed || this.board.listeners === 0) {
        opened.release();
        return;
      }
      this.connection = opened;
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

  private lost(connection: ListenConnection, error: Error): void {
    if (this.connection !== connection) return;
    this.connection = undefined;
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
    connection?.release();
  }
}
