import { Duplex } from 'node:stream';
import type { PGlite } from '@electric-sql/pglite';

/** Protocol version 3.0 in a startup message (no type byte; length, then the version). */
const PROTOCOL_3 = 196608;
/** SSLRequest and CancelRequest codes: answered locally (no TLS; cancel is not supported). */
const SSL_REQUEST = 80877103;
const CANCEL_REQUEST = 80877102;
/** The wire that started last on each PGlite: the one whose session state an ending wire must not touch. */
const sessionOwner = new WeakMap<PGlite, PgliteWire>();

/**
 * One in-process "connection" to PGlite for `pg`: a Duplex that takes the Postgres wire
 * protocol written by `pg.Client` and hands each complete message to `db.execProtocolRawStream`,
 * pushing PGlite's answer back as if it came from a socket. Nothing listens on TCP or a Unix
 * socket, so no other process can reach the database (issue 9, item 2). Pass
 * `{ stream: () => new PgliteWire(db) }` to `pg.Pool`.
 *
 * PGlite has one session: messages of every wire are run one at a time (`runExclusive`); a
 * wire that ends inside a transaction rolls it back, as a dropped server connection would.
 *
 * Every wire starts from a reset session (issue 24, item 1): pg-pool drops a client whose query
 * failed and builds a new one, whose statement cache is empty while the one session still holds
 * the dropped client's named prepared statements — each of them would then fail with 42P05
 * ("already exists") for every caller until a restart. Right after the startup message, in the
 * same exclusive run, an open transaction is rolled back and `DEALLOCATE ALL` drops the named
 * statements; a wire that ends does the same unless a newer wire has started since. LISTEN registrations and settings are kept (the
 * shared read-model feed listens on this session); no setting is changed per client.
 */
export class PgliteWire extends Duplex {
  private buffer: Buffer = Buffer.alloc(0);
  private chain: Promise<void> = Promise.resolve();
  private started = false;

  constructor(private readonly db: PGlite) {
    super();
  }

  // The net.Socket surface pg's Connection calls.
  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
  connect(): this {
    setImmediate(() => this.emit('connect'));
    return this;
  }

  override _read(): void {}

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const messages: Uint8Array[] = [];
    for (;;) {
      const length = this.nextMessageLength();
      if (length === 0 || this.buffer.length < length) break;
      const message = this.buffer.subarray(0, length);
      this.buffer = this.buffer.subarray(length);
      if (!this.started && message.length === 8 && message.readInt32BE(4) === SSL_REQUEST) {
        this.push(Buffer.from('N'));
        continue;
      }
      if (!this.started && message.length === 16 && message.readInt32BE(4) === CANCEL_REQUEST) continue;
      this.started = true;
      messages.push(new Uint8Array(message));
    }
    if (messages.length === 0) {
      callback();
      return;
    }
    this.chain = this.chain.then(() => this.run(messages));
    this.chain.then(
      () => callback(),
      (error: unknown) => callback(error instanceof Error ? error : new Error(String(error))),
    );
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.chain
      .then(() => this.rollbackIfOpen())
      .finally(() => {
        this.push(null);
        callback();
      });
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.chain.then(() => this.rollbackIfOpen()).finally(() => callback(error));
  }

  /** Length of the next complete-or-partial message, 0 when its header is not in yet. */
  private nextMessageLength(): number {
    const b = this.buffer;
    if (!this.started) {
      if (b.length < 8) return 0;
      const version = b.readInt32BE(4);
      if (version === PROTOCOL_3 || version === SSL_REQUEST || version === CANCEL_REQUEST)
        return b.readInt32BE(0);
    }
    if (b.length < 5) return 0;
    return 1 + b.readInt32BE(1);
  }

  private async run(messages: readonly Uint8Array[]): Promise<void> {
    await this.db.runExclusive(async () => {
      for (const message of messages) {
        if (message[0] === 0x58 /* 'X' Terminate */ && this.started && message.length === 5) continue;
        await this.db.execProtocolRawStream(message, {
          onRawData: (data: Uint8Array) => {
            if (data.length > 0) this.push(Buffer.from(data));
          },
        });
        // The startup message (no type byte: its second int is the protocol version).
        if (
          message.length >= 8 &&
          new DataView(message.buffer, message.byteOffset).getInt32(4) === PROTOCOL_3
        ) {
          await this.resetSession();
          sessionOwner.set(this.db, this);
        }
      }
    });
  }

  /** Rolls back what a dropped wire left open and drops every named prepared statement. Call under the lock. */
  private async resetSession(): Promise<void> {
    if (this.db.isInTransaction()) await this.simpleQuery('ROLLBACK');
    await this.simpleQuery('DEALLOCATE ALL');
  }

  /** A simple-protocol query whose answer nobody reads (the wire's client never sees it). */
  private async simpleQuery(sql: string): Promise<void> {
    const text = Buffer.from(`${sql}\0`, 'utf8');
    const message = Buffer.alloc(5 + text.length);
    message.write('Q', 0, 'latin1');
    message.writeInt32BE(4 + text.length, 1);
    text.copy(message, 5);
    await this.db.execProtocolRawStream(new Uint8Array(message), { onRawData: () => {} });
  }

  private async rollbackIfOpen(): Promise<void> {
    try {
      if (this.db.closed) return;
      // Only while no newer wire has started: its transaction and statements are not ours.
      await this.db.runExclusive(async () => {
        if (sessionOwner.get(this.db) === this) await this.resetSession();
      });
    } catch {
      // The database is closing: nothing to roll back into.
    }
  }
}
