import { randomUUID } from 'node:crypto';
import type { Logger } from '@tern/kernel';
import type pg from 'pg';

/**
 * The table log's `LISTEN` connection: one pooled connection held while consumers run, each
 * `NOTIFY` on the table's channel (every append sends one at commit) calling `wake`.
 */
export interface TableListener {
  /** Listens, unless it does or is not `wanted` (again after a lost connection); never throws. */
  start(): Promise<void>;
  stop(): Promise<void>;
  /**
   * Listening, and its own probe notice, sent through the pool (another connection) after the
   * `LISTEN`, came back: the notices of appends do too. Not so behind a transaction-mode pooler,
   * where `LISTEN` stays on whichever server connection ran it; the consumers keep their short poll.
   */
  hears(): boolean;
}

interface Held {
  client: pg.PoolClient;
  /** Releases once, whichever of stop and connection error comes first. */
  release(error?: Error): void;
  heard: boolean;
}

export function createTableListener(opts: {
  pool: pg.Pool;
  table: string;
  logger?: Logger | undefined;
  wake: () => void;
  /** Whether a listener is wanted now (`listen` on, not closed, consumers running). */
  wanted: () => boolean;
}): TableListener {
  const { pool, table, logger } = opts;
  let listener: Held | null = null;
  let starting = false;

  async function stop(): Promise<void> {
    const current = listener;
    listener = null;
    if (!current) return;
    try {
      await current.client.query(`UNLISTEN "${table}"`);
      current.release();
    } catch (error) {
      current.release(error as Error);
    }
  }

  return {
    async start() {
      if (listener || starting || !opts.wanted()) return;
      starting = true;
      let current: Held | undefined;
      try {
        const client = await pool.connect();
        let released = false;
        const probe = `probe ${randomUUID()}`;
        current = {
          client,
          release(error) {
            if (released) return;
            released = true;
            client.release(error);
          },
          heard: false,
        };
        const self = current;
        client.on('notification', (msg) => {
          if (msg.channel !== table) return;
          if (msg.payload === probe) self.heard = true;
          opts.wake();
        });
        client.on('error', (error) => {
          logger?.warn({ err: error }, 'event log listener lost; polling until it is back');
          if (listener === self) listener = null;
          self.release(error);
        });
        await client.query(`LISTEN "${table}"`);
        listener = current;
        // The last consumer may have stopped while this connected.
        if (!opts.wanted()) await stop();
        // Not sent (the pool busy or down): not heard, the short poll stays.
        else await pool.query('SELECT pg_notify($1, $2)', [table, probe]).catch(() => undefined);
      } catch (error) {
        logger?.warn({ err: error }, 'event log listener failed; polling');
        current?.release(error as Error);
      } finally {
        starting = false;
      }
    },
    stop,
    hears: () => listener?.heard === true,
  };
}
