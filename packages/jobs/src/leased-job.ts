import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { createPoller } from './poller.js';

/**
 * A durable job of rows leased by one worker at a time (the campaign fan-out, the sequence
 * scheduler): what they share around their own claim and work.
 *
 * - each instance has its `owner` id, stamped in the rows' `lease_owner` by its claims (`claimDue`);
 * - a round (`run`) claims and works until nothing is due or the job is stopping;
 * - rounds run every `pollIntervalMs` after `start()` (the first one after the same delay), never
 *   overlapping; a round that throws goes to `onError` and the schedule goes on;
 * - `stop()` ends the schedule after the unit of work in flight and hands this owner's rows back
 *   at once (`lease_owner`/`lease_until` cleared); a killed worker's lease simply lapses.
 */
export interface LeasedJobContext {
  /** This instance's lease owner. */
  owner: string;
  /** The end of a lease taken or renewed at `at`. */
  leaseUntil(at: Date): Date;
  /** True once `stop()` was called: the round returns after its current unit of work. */
  stopping(): boolean;
}

export interface LeasedJobOptions {
  /** The poller's name, and the prefix of the owner id. */
  name: string;
  pool: Pick<pg.Pool, 'query'>;
  /** The table whose rows carry `lease_owner` and `lease_until`. */
  table: string;
  leaseMs: number;
  pollIntervalMs: number;
  /** One round; resolves with the units of work done (emails handed over). */
  run(ctx: LeasedJobContext): Promise<number>;
  onError(error: unknown): void;
}

export interface LeasedJob {
  /** One round now, outside the schedule (tests, benches). */
  runOnce(): Promise<number>;
  start(): void;
  stop(): Promise<void>;
}

const identifier = /^[a-z_][a-z0-9_]{0,62}$/;

export function createLeasedJob(opts: LeasedJobOptions): LeasedJob {
  if (!identifier.test(opts.table))
    throw new Error(`leased job: invalid table ${JSON.stringify(opts.table)}`);
  let stopped = false;
  const ctx: LeasedJobContext = {
    owner: `${opts.name}-${randomBytes(8).toString('hex')}`,
    leaseUntil: (at) => new Date(at.getTime() + opts.leaseMs),
    stopping: () => stopped,
  };
  const runOnce = () => opts.run(ctx);
  const poller = createPoller({
    name: opts.name,
    intervalMs: opts.pollIntervalMs,
    firstRunMs: opts.pollIntervalMs,
    run: runOnce,
    onError: opts.onError,
  });
  return {
    runOnce,
    start() {
      stopped = false;
      poller.start();
    },
    async stop() {
      stopped = true;
      await poller.stop();
      // A graceful stop hands its rows back at once (a killed worker's lease simply lapses).
      await opts.pool
        .query(`UPDATE ${opts.table} SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = $1`, [
          ctx.owner,
        ])
        .catch(() => undefined);
    },
  };
}
