import { randomUUID } from 'node:crypto';
import { type Logger, silentLogger } from '@tern/kernel';
import pg from 'pg';
import { z } from 'zod';

/**
 * What changed in the read models, heard by every api process (issue 10: reads at the speed of
 * the hardware). A writer of a read model announces the change with `pg_notify` INSIDE its
 * transaction, so Postgres delivers it at commit and never for a rolled-back change:
 *
 * - `logs`: the projector folded a batch (`email_logs` and its counters) or an erasure scrubbed
 *   entries — for these tenants (null: any tenant); `asOf` is the batch's `last_batch_at`;
 * - `analytics`: an outbox batch reached ClickHouse, for these tenants;
 * - `settings`: a tenant's settings (its retention) changed;
 * - `reset`: the read models were emptied (`npm run rebuild`).
 *
 * The api memoises answers on `ReadModelFeed.version(kind, tenant)`, a token that changes with
 * every change heard for that tenant, so a repeated read costs no query and stays exact. While the
 * feed is not listening (not yet connected, connection lost) `version` is null and nothing may be
 * memoised: a change could go unheard. Every (re)connection starts a new epoch, so nothing memoised
 * before a gap is ever served after it.
 */
export const READ_MODEL_CHANNEL = 'tern_read_model';
/** `application_name` of the feed's own connection to a Postgres server. */
export const READ_MODEL_APPLICATION_NAME = 'tern-read-model-feed';

export const READ_MODEL_KINDS = ['logs', 'analytics', 'settings'] as const;
export type ReadModelKind = (typeof READ_MODEL_KINDS)[number];

export type ReadModelChange =
  | { kind: ReadModelKind; tenants: readonly string[] | null; asOf?: string }
  | { kind: 'reset' };

const changeSchema = z.union([
  z.object({
    kind: z.enum(READ_MODEL_KINDS),
    tenants: z.array(z.string()).nullable(),
    asOf: z.string().optional(),
  }),
  z.object({ kind: z.literal('reset') }),
  // The feed's own check that notices reach it (never sent by a writer).
  z.object({ kind: z.literal('probe'), id: z.string() }),
]);

/** A NOTIFY payload must stay under 8000 bytes; a longer tenant list becomes "any tenant". */
const MAX_TENANTS_BYTES = 7_000;

/** The NOTIFY payload of a change (JSON). */
export function readModelPayload(change: ReadModelChange): string {
  if (change.kind === 'reset') return JSON.stringify(change);
  let tenants = change.tenants === null ? null : [...new Set(change.tenants)];
  if (tenants !== null && tenants.reduce((n, t) => n + Buffer.byteLength(t) + 3, 0) > MAX_TENANTS_BYTES) {
    tenants = null;
  }
  return JSON.stringify({ kind: change.kind, tenants, ...(change.asOf ? { asOf: change.asOf } : {}) });
}

/** Announces a change; run it inside the writer's transaction (delivered at commit). */
export async function notifyReadModel(
  client: pg.ClientBase | pg.Pool,
  change: ReadModelChange,
): Promise<void> {
  await client.query('SELECT pg_notify($1, $2)', [READ_MODEL_CHANNEL, readModelPayload(change)]);
}

export interface ReadModelFeed {
  /**
   * A token that changes whenever what `kind` holds of `tenantId` may have changed, or null while
   * changes may go unheard (then nothing may be memoised).
   */
  version(kind: ReadModelKind, tenantId: string): string | null;
  /** The newest `projection_status.last_batch_at` heard of (read once when listening began). */
  asOf(): Date | null;
  /**
   * A change this process just committed: visible here at once (its NOTIFY reaches the other
   * processes, and this one again, moments later).
   */
  changed(change: ReadModelChange): void;
  /** True while listening. */
  readonly live: boolean;
  /** Resolves true once listening, false after `timeoutMs` without. */
  ready(timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

export interface ReadModelFeedOptions {
  pool: pg.Pool;
  /**
   * `dedicated`: a connection of its own (a Postgres server), checked every `checkIntervalMs` and
   * reopened when lost. `shared`: the pool's connection(s) — PGlite, where every connection is the
   * one session, so a NOTIFY comes back on the connection that commits it, with its COMMIT.
   */
  connection: 'dedicated' | 'shared';
  /**
   * The projection's last batch time, read once on the listening connection when listening begins
   * (after its `LISTEN`): packages/read-models' `lastBatchAt`, the owner of `projection_status`
   * (packages/stores sits below it).
   */
  lastBatchAt: (client: pg.ClientBase) => Promise<Date | null>;
  logger?: Logger;
  /** Default 5000 ms: liveness check of the dedicated connection, and the wait before reconnecting. */
  checkIntervalMs?: number;
}

/** Tenants remembered per kind; past it the kind's counter moves for every tenant at once. */
const MAX_TENANTS = 50_000;

export function createReadModelFeed(opts: ReadModelFeedOptions): ReadModelFeed {
  const { pool, lastBatchAt } = opts;
  const logger = opts.logger ?? silentLogger;
  const checkIntervalMs = opts.checkIntervalMs ?? 5_000;
  let epoch = 0;
  let live = false;
  let closed = false;
  let asOf: Date | null = null;
  const everyTenant: Record<ReadModelKind, number> = { logs: 0, analytics: 0, settings: 0 };
  const perTenant: Record<ReadModelKind, Map<string, number>> = {
    logs: new Map(),
    analytics: new Map(),
    settings: new Map(),
  };
  const waiters = new Set<() => void>();

  function goLive(lastBatchAt: Date | null): void {
    epoch++;
    for (const kind of READ_MODEL_KINDS) perTenant[kind].clear();
    asOf = lastBatchAt;
    live = true;
    for (const wake of waiters) wake();
    waiters.clear();
  }

  function apply(change: ReadModelChange): void {
    if (change.kind === 'reset') {
      // A new epoch: every token changes.
      epoch++;
      for (const kind of READ_MODEL_KINDS) perTenant[kind].clear();
      return;
    }
    const counters = perTenant[change.kind];
    if (change.tenants === null || counters.size + change.tenants.length > MAX_TENANTS) {
      everyTenant[change.kind]++;
      counters.clear();
    } else {
      for (const tenant of change.tenants) counters.set(tenant, (counters.get(tenant) ?? 0) + 1);
    }
    if (change.kind === 'logs' && change.asOf !== undefined) {
      const at = new Date(change.asOf);
      if (!Number.isNaN(at.getTime()) && (asOf === null || at > asOf)) asOf = at;
    }
  }

  function hear(payload: string | undefined): void {
    let parsed: z.infer<typeof changeSchema> | null = null;
    try {
      const result = changeSchema.safeParse(JSON.parse(payload ?? ''));
      if (result.success) parsed = result.data;
    } catch {
      // not JSON: below
    }
    if (parsed?.kind === 'probe') {
      probes.get(parsed.id)?.();
      return;
    }
    // A notice this version cannot read still says something changed: forget everything.
    apply(parsed ?? { kind: 'reset' });
  }

  const probes = new Map<string, () => void>();
  /** Sends a probe notice through `via` and tells whether it was heard within `withinMs`. */
  async function probe(via: pg.ClientBase | pg.Pool, withinMs: number): Promise<boolean> {
    const id = randomUUID();
    let timer: NodeJS.Timeout | undefined;
    const heard = new Promise<boolean>((resolve) => {
      probes.set(id, () => resolve(true));
      timer = setTimeout(() => resolve(false), withinMs);
    });
    try {
      await via.query('SELECT pg_notify($1, $2)', [
        READ_MODEL_CHANNEL,
        JSON.stringify({ kind: 'probe', id }),
      ]);
      return await heard;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
      probes.delete(id);
    }
  }

  const onNotification = (msg: pg.Notification) => {
    if (msg.channel === READ_MODEL_CHANNEL) hear(msg.payload);
  };

  let stopTimers: () => Promise<void> = async () => {};

  if (opts.connection === 'dedicated') {
    let client: pg.Client | null = null;
    let connecting: Promise<void> | null = null;
    const lost = (which: pg.Client, error?: unknown) => {
      if (client !== which) return;
      client = null;
      live = false;
      if (!closed)
        logger.warn({ err: error }, 'read-model feed lost its connection; memoised reads off until back');
      which.end().catch(() => {});
    };
    const connect = async () => {
      // Named, so operators (and tests) can tell it in pg_stat_activity.
      const next = new pg.Client({ ...pool.options, application_name: READ_MODEL_APPLICATION_NAME });
      next.on('notification', onNotification);
      next.on('error', (error) => lost(next, error));
      next.on('end', () => lost(next));
      try {
        await next.connect();
        await next.query(`LISTEN ${READ_MODEL_CHANNEL}`);
        const at = await lastBatchAt(next);
        // A notice committed on another connection must arrive here. It does not through a
        // transaction-mode pooler, where LISTEN stays on whichever server connection ran it.
        if (!(await probe(pool, checkIntervalMs))) {
          throw new Error(
            'a notice sent through the pool did not arrive on the listening connection (a transaction-mode pooler in DATABASE_URL?)',
          );
        }
        if (closed) {
          await next.end();
          return;
        }
        client = next;
        goLive(at);
      } catch (error) {
        logger.warn({ err: error }, 'read-model feed could not listen; retrying');
        await next.end().catch(() => {});
      }
    };
    const tick = async () => {
      if (closed) return;
      if (client === null) {
        connecting ??= connect().finally(() => {
          connecting = null;
        });
        return;
      }
      // Still answering, still listening: it hears its own probe.
      const checked = client;
      if (!(await probe(checked, checkIntervalMs))) lost(checked, new Error('probe not heard in time'));
    };
    void tick();
    const timer = setInterval(() => void tick(), checkIntervalMs);
    timer.unref();
    stopTimers = async () => {
      clearInterval(timer);
      await connecting;
      const current = client;
      client = null;
      live = false;
      await current?.end().catch(() => {});
    };
  } else {
    // Every connection of the pool hears the notices committed on it: attach to each. The current
    // one is reached through `pool.connect()`, later ones through the pool's 'connect' event.
    const attached = new WeakSet<pg.ClientBase>();
    const attach = (client: pg.ClientBase, at: Date | null) => {
      if (attached.has(client)) return;
      attached.add(client);
      client.on('notification', onNotification);
      // A replaced connection may have missed a notice: the next one starts a new epoch.
      client.on('end', () => {
        live = false;
      });
      goLive(at);
    };
    const onConnect = (client: pg.PoolClient) => {
      if (closed) return;
      // Queued before the first query of whoever asked for this connection.
      client.query(`LISTEN ${READ_MODEL_CHANNEL}`).catch(() => {});
      attach(client, asOf);
    };
    pool.on('connect', onConnect);
    void (async () => {
      try {
        const client = await pool.connect();
        try {
          await client.query(`LISTEN ${READ_MODEL_CHANNEL}`);
          const at = await lastBatchAt(client);
          if (!closed) attach(client, at);
        } finally {
          client.release();
        }
      } catch (error) {
        logger.warn({ err: error }, 'read-model feed could not listen; memoised reads off');
      }
    })();
    stopTimers = async () => {
      pool.off('connect', onConnect);
      live = false;
    };
  }

  return {
    version(kind, tenantId) {
      if (!live) return null;
      return `${epoch}.${everyTenant[kind]}.${perTenant[kind].get(tenantId) ?? 0}`;
    },
    asOf: () => asOf,
    changed: apply,
    get live() {
      return live;
    },
    ready(timeoutMs = 10_000) {
      if (live) return Promise.resolve(true);
      return new Promise((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          resolve(true);
        };
        const timer = setTimeout(() => {
          waiters.delete(wake);
          resolve(live);
        }, timeoutMs);
        waiters.add(wake);
      });
    },
    async close() {
      closed = true;
      await stopTimers();
    },
  };
}
