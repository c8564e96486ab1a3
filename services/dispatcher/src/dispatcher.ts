import type { DeliveryEvent } from '@tern/contracts';
import type { EmailState } from '@tern/domain';
import type { EventLogConsumer, EventStream } from '@tern/event-log';
import { claimDue, claimDueSql, createPoller } from '@tern/jobs';
import { type SecretBox, webhookHeaders } from '@tern/webhooks';
import type pg from 'pg';
import { type PostResult, postWebhook } from './http-post.js';
import { buildPayload } from './payload.js';

/**
 * The dispatcher (SPEC §17): reads the event log in its own consumer group and turns each event
 * into one delivery per enabled endpoint of the tenant whose filter matches (rows in
 * `webhook_deliveries`, written before the log position is committed: nothing is lost, a re-read
 * makes nothing new). Workers claim due deliveries with `FOR UPDATE SKIP LOCKED`, pushing
 * `next_attempt_at` one lease ahead; the attempt's result is written in one transaction. A
 * dispatcher killed mid-attempt leaves the delivery due again when the lease ends: another (or
 * the restarted) dispatcher repeats it with the same `webhook-id` — at-least-once.
 */

export interface DispatcherLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface DispatcherOptions {
  pool: pg.Pool;
  log: EventStream;
  /** Consumer group of the live deliveries; replays use `<group>.replay.<id>`. */
  group: string;
  secretBox: SecretBox;
  /** WEBHOOK_ALLOW_PRIVATE: loopback/private targets and http:// allowed. */
  allowPrivate: boolean;
  now?: () => Date;
  logger?: DispatcherLogger;
  /** Waits after each failed attempt (SPEC §17); after the last one the delivery is failed. */
  retryScheduleMs?: readonly number[];
  /** Whole-attempt timeout. Default 10 s. */
  timeoutMs?: number;
  /** How long a claimed delivery is kept from other workers; must exceed `timeoutMs`. Default timeout + 5 s. */
  leaseMs?: number;
  /** An endpoint whose attempts have all failed for this long is disabled. Default 5 days. */
  disableAfterMs?: number;
  /** Attempts in flight per dispatcher. Default 16. */
  concurrency?: number;
  /** How often the workers look for due deliveries when nothing woke them. Default 250 ms. */
  pollIntervalMs?: number;
  /** How often pending replays are looked for. Default 1 s. */
  replayPollMs?: number;
  /** An event whose email is not projected yet waits for it this long before going out without it. Default 30 s. */
  projectionGraceMs?: number;
  /** Finished deliveries (and their attempts) and finished replays are deleted after this long. Default 30 days. */
  recordRetentionMs?: number;
  /** How often that sweep runs. Default 10 min. */
  sweepIntervalMs?: number;
  /** Log batches (tests and benches shorten them). */
  maxBatchSize?: number;
  maxWaitMs?: number;
  onAttempt?: (attempt: AttemptRecord) => void;
}

export interface AttemptRecord {
  deliveryId: string;
  endpointId: string;
  eventId: string;
  result: PostResult;
  outcome: 'delivered' | 'retry' | 'failed';
}

export interface Dispatcher {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Deletes finished records older than the retention, in batches; resolves with how many deliveries went. */
  sweep(): Promise<number>;
  /** Turns consumed events into deliveries (what the consumer does with a batch). */
  enqueue(events: readonly DeliveryEvent[]): Promise<number>;
  /** Claims and attempts the due deliveries once; resolves with how many were attempted. */
  runDue(): Promise<number>;
  lag(): Promise<number>;
}

/** SPEC §17: about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h — each after the previous failure. */
export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000,
];
export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_DISABLE_AFTER_MS = 5 * 86_400_000;
export const DISPATCHER_GROUP = 'tern-dispatcher';

const silent: DispatcherLogger = { info() {}, warn() {}, error() {} };

interface EndpointFilter {
  tenant_id: string;
  id: string;
  event_types: string[] | null;
}

const matches = (endpoint: Pick<EndpointFilter, 'event_types'>, type: string) =>
  endpoint.event_types === null || endpoint.event_types.includes(type);

interface NewDelivery {
  tenantId: string;
  endpointId: string;
  event: DeliveryEvent;
  replayId: string;
}

/** Inserts deliveries; the unique (endpoint, event, replay) key makes a re-read a no-op. */
async function insertDeliveries(db: Pick<pg.Pool, 'query'>, rows: readonly NewDelivery[], now: Date) {
  if (rows.length === 0) return 0;
  const result = await db.query(
    `INSERT INTO webhook_deliveries
       (tenant_id, endpoint_id, event_id, event_type, email_id, replay_id, event, next_attempt_at, created_at, updated_at)
     SELECT t, e, ev, ty, em, r, j::jsonb, $8, $8, $8
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
       AS u(t, e, ev, ty, em, r, j)
     ON CONFLICT (endpoint_id, event_id, replay_id) DO NOTHING`,
    [
      rows.map((r) => r.tenantId),
      rows.map((r) => r.endpointId),
      rows.map((r) => r.event.id),
      rows.map((r) => r.event.type),
      rows.map((r) => r.event.emailId),
      rows.map((r) => r.replayId),
      rows.map((r) => JSON.stringify(r.event)),
      now,
    ],
  );
  return result.rowCount ?? 0;
}

interface ClaimedDelivery {
  id: string;
  tenant_id: string;
  endpoint_id: string;
  event_id: string;
  event: DeliveryEvent;
  request_body: string | null;
  attempts: number;
  created_at: Date;
  url: string | null;
  enabled: boolean | null;
  secret_enc: string | null;
  previous_secret_enc: string | null;
  previous_secret_expires_at: Date | null;
  /** The email's projected fold state (`email_logs`), read along with the claim. */
  email_state: EmailState | null;
  email_version: number | null;
}

export function createDispatcher(opts: DispatcherOptions): Dispatcher {
  const { pool, log, secretBox } = opts;
  const now = opts.now ?? (() => new Date());
  const logger = opts.logger ?? silent;
  const schedule = opts.retryScheduleMs ?? DEFAULT_RETRY_SCHEDULE_MS;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const leaseMs = opts.leaseMs ?? timeoutMs + 5_000;
  if (leaseMs <= timeoutMs) throw new Error('leaseMs must exceed timeoutMs');
  const disableAfterMs = opts.disableAfterMs ?? DEFAULT_DISABLE_AFTER_MS;
  const concurrency = opts.concurrency ?? 16;
  const pollIntervalMs = opts.pollIntervalMs ?? 250;
  const replayPollMs = opts.replayPollMs ?? 1_000;
  const graceMs = opts.projectionGraceMs ?? 30_000;
  const retentionMs = opts.recordRetentionMs ?? 30 * 86_400_000;
  const sweepIntervalMs = opts.sweepIntervalMs ?? 600_000;

  let consumer: EventLogConsumer | null = null;
  let running = false;
  const inFlight = new Set<Promise<void>>();

  const wakeWorkers = () => workers.wake();

  /** Deliveries of the events for the tenant's endpoints (or one endpoint, for a replay). */
  async function deliveriesFor(
    events: readonly DeliveryEvent[],
    only?: { endpointId: string; replayId: string; since: Date; until: Date; tenantId: string },
  ): Promise<NewDelivery[]> {
    const wanted = only
      ? events.filter((e) => {
          const at = Date.parse(e.occurredAt);
          return e.tenantId === only.tenantId && at >= only.since.getTime() && at < only.until.getTime();
        })
      : events;
    if (wanted.length === 0) return [];
    const tenants = [...new Set(wanted.map((e) => e.tenantId))];
    const { rows } = only
      ? await pool.query<EndpointFilter>(
          'SELECT tenant_id, id, event_types FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2 AND enabled',
          [only.tenantId, only.endpointId],
        )
      : await pool.query<EndpointFilter>(
          'SELECT tenant_id, id, event_types FROM webhook_endpoints WHERE tenant_id = ANY($1) AND enabled',
          [tenants],
        );
    const byTenant = new Map<string, EndpointFilter[]>();
    for (const r of rows) byTenant.set(r.tenant_id, [...(byTenant.get(r.tenant_id) ?? []), r]);
    const out: NewDelivery[] = [];
    for (const event of wanted) {
      for (const endpoint of byTenant.get(event.tenantId) ?? []) {
        if (matches(endpoint, event.type)) {
          out.push({
            tenantId: event.tenantId,
            endpointId: endpoint.id,
            event,
            replayId: only?.replayId ?? '',
          });
        }
      }
    }
    return out;
  }

  async function enqueue(events: readonly DeliveryEvent[]): Promise<number> {
    const made = await insertDeliveries(pool, await deliveriesFor(events), now());
    if (made > 0) wakeWorkers();
    return made;
  }

  async function claim(limit: number): Promise<ClaimedDelivery[]> {
    const at = now();
    const { rows } = await pool.query<ClaimedDelivery>(
      `WITH claimed AS (${claimDueSql({
        table: 'webhook_deliveries',
        alias: 'd',
        due: `status = 'pending' AND next_attempt_at <= $1`,
        orderBy: 'next_attempt_at',
        limit: '$3',
        set: 'next_attempt_at = $2',
        returning: `d.id, d.tenant_id, d.endpoint_id, d.event_id, d.email_id, d.event, d.request_body, d.attempts,
                    d.created_at`,
      })})
       SELECT c.*, e.url, e.enabled, e.secret_enc, e.previous_secret_enc, e.previous_secret_expires_at,
              l.state AS email_state, l.version AS email_version
       FROM claimed c
       LEFT JOIN webhook_endpoints e ON e.tenant_id = c.tenant_id AND e.id = c.endpoint_id
       LEFT JOIN email_logs l ON c.request_body IS NULL AND l.tenant_id = c.tenant_id AND l.id = c.email_id`,
      [at, new Date(at.getTime() + leaseMs), limit],
    );
    return rows;
  }

  /** Ends a delivery without an HTTP attempt (endpoint gone or disabled). */
  async function abandon(d: ClaimedDelivery, reason: string) {
    await pool.query(
      `UPDATE webhook_deliveries SET status = 'failed', last_error = $2, updated_at = $3 WHERE id = $1`,
      [d.id, reason, now()],
    );
  }

  /**
   * Fixes the body of every claimed delivery that has none yet, in one statement, before any is
   * sent: every retry (and a repeat after a crash) sends the same bytes. A delivery whose email
   * the projector has not folded yet (no recipient known) waits a moment, up to `graceMs`.
   */
  async function fixBodies(claimed: ClaimedDelivery[]): Promise<ClaimedDelivery[]> {
    const ready: ClaimedDelivery[] = [];
    const waiting: string[] = [];
    const fixed: { id: string; body: string; recipient: string | null }[] = [];
    const at = now();
    for (const d of claimed) {
      if (d.request_body !== null || d.url === null || !d.enabled) {
        ready.push(d);
        continue;
      }
      const projected = d.email_state !== null && (d.email_version ?? 0) > 0 ? d.email_state : null;
      if (
        (projected?.queued ?? null) === null &&
        d.event.type !== 'email.queued' &&
        at.getTime() - d.created_at.getTime() < graceMs
      ) {
        waiting.push(d.id);
        continue;
      }
      const payload = buildPayload(d.event, projected);
      const body = JSON.stringify(payload);
      fixed.push({ id: d.id, body, recipient: payload.data.to });
      ready.push({ ...d, request_body: body });
    }
    if (waiting.length > 0) {
      await pool.query('UPDATE webhook_deliveries SET next_attempt_at = $2 WHERE id = ANY($1::bigint[])', [
        waiting,
        new Date(at.getTime() + 500),
      ]);
    }
    if (fixed.length > 0) {
      await pool.query(
        `UPDATE webhook_deliveries d SET request_body = u.body, recipient = u.recipient
         FROM unnest($1::bigint[], $2::text[], $3::text[]) AS u(id, body, recipient) WHERE d.id = u.id`,
        [fixed.map((f) => f.id), fixed.map((f) => f.body), fixed.map((f) => f.recipient)],
      );
    }
    return ready;
  }

  async function attempt(d: ClaimedDelivery): Promise<void> {
    if (d.url === null || d.secret_enc === null) return abandon(d, 'endpoint deleted');
    if (!d.enabled) return abandon(d, 'endpoint disabled');
    const body = d.request_body;
    if (body === null) throw new Error('delivery without a body');
    const startedAt = now();
    const secrets: string[] = [];
    try {
      secrets.push(secretBox.decrypt(d.secret_enc));
      if (
        d.previous_secret_enc !== null &&
        d.previous_secret_expires_at !== null &&
        d.previous_secret_expires_at.getTime() > startedAt.getTime()
      ) {
        secrets.push(secretBox.decrypt(d.previous_secret_enc));
      }
    } catch {
      // Sealed under another WEBHOOK_SECRETS_KEY: retrying cannot help; rotating the secret does.
      logger.error(
        { webhookId: d.endpoint_id },
        'webhook secret cannot be unsealed with this WEBHOOK_SECRETS_KEY',
      );
      return abandon(d, 'signing secret unreadable (server key changed): rotate the secret');
    }
    const headers = webhookHeaders(secrets, d.event_id, Math.floor(startedAt.getTime() / 1000), body);
    const result = await postWebhook(d.url, headers, body, { timeoutMs, allowPrivate: opts.allowPrivate });
    const attemptNo = d.attempts + 1;
    const ok = result.error === null;
    const outcome: AttemptRecord['outcome'] = ok
      ? 'delivered'
      : attemptNo > schedule.length
        ? 'failed'
        : 'retry';
    const finished = now();
    const next =
      outcome === 'retry' ? new Date(finished.getTime() + (schedule[attemptNo - 1] ?? 0)) : finished;
    // One statement (atomic on its own): the attempt, the delivery's new state, and the endpoint's
    // failure run — touched on a failure, or on a success that ends a run, so a healthy endpoint's
    // row is not rewritten (and locked) by every delivery.
    const { rows } = await pool.query<{ disabled: boolean | null }>(
      `WITH attempt AS (
         INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, response_excerpt)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING
       ), delivery AS (
         UPDATE webhook_deliveries SET status = $8, attempts = $2, next_attempt_at = $9,
           last_status_code = $5, last_error = $6, updated_at = $10
         WHERE id = $1
       ), endpoint AS (
         UPDATE webhook_endpoints SET
           failing_since = CASE WHEN $11 THEN NULL ELSE COALESCE(failing_since, $3) END,
           enabled = CASE WHEN NOT $11 AND COALESCE(failing_since, $3) <= $14 THEN false ELSE enabled END,
           disabled_reason = CASE WHEN NOT $11 AND COALESCE(failing_since, $3) <= $14 AND enabled
                                  THEN 'every attempt failed for 5 days' ELSE disabled_reason END,
           updated_at = CASE WHEN NOT $11 AND COALESCE(failing_since, $3) <= $14 AND enabled THEN $10 ELSE updated_at END
         WHERE tenant_id = $12 AND id = $13 AND (NOT $11 OR failing_since IS NOT NULL)
         RETURNING enabled
       )
       SELECT NOT enabled AS disabled FROM endpoint`,
      [
        d.id,
        attemptNo,
        startedAt,
        result.durationMs,
        result.statusCode,
        result.error,
        result.responseExcerpt,
        outcome === 'retry' ? 'pending' : outcome,
        next,
        finished,
        ok,
        d.tenant_id,
        d.endpoint_id,
        new Date(startedAt.getTime() - disableAfterMs),
      ],
    );
    if (rows[0]?.disabled)
      logger.warn({ webhookId: d.endpoint_id }, 'webhook endpoint disabled after failing');
    opts.onAttempt?.({ deliveryId: d.id, endpointId: d.endpoint_id, eventId: d.event_id, result, outcome });
  }

  async function runDue(): Promise<number> {
    const free = concurrency - inFlight.size;
    if (free <= 0) return 0;
    const claimed = await claim(free);
    const ready = claimed.length > 0 ? await fixBodies(claimed) : [];
    for (const d of ready) {
      const p: Promise<void> = attempt(d)
        .catch((error: unknown) => {
          // The lease ends and the delivery is attempted again; never logs the URL or secret.
          logger.error(
            { err: error instanceof Error ? error.message : String(error), deliveryId: d.id },
            'webhook attempt failed to record',
          );
        })
        .finally(() => {
          inFlight.delete(p);
          wakeWorkers();
        });
      inFlight.add(p);
    }
    return claimed.length;
  }

  /** Claims until nothing is due or every slot is taken; then the poller waits (or is woken). */
  async function runWorkers(): Promise<void> {
    while (running) {
      const claimed = await runDue();
      if (claimed === 0 || inFlight.size >= concurrency) return;
    }
  }

  const workers = createPoller({
    name: 'webhook-workers',
    intervalMs: pollIntervalMs,
    run: runWorkers,
    onError: (error) =>
      logger.warn(
        { err: error instanceof Error ? error.message : String(error) },
        'webhook claim failed; retrying',
      ),
  });

  interface ReplayRow {
    id: string;
    tenant_id: string;
    endpoint_id: string;
    since: Date;
    until: Date;
  }

  async function claimReplay(): Promise<ReplayRow | null> {
    const at = now();
    const rows = await claimDue<ReplayRow>(
      pool,
      {
        table: 'webhook_replays',
        alias: 'r',
        due: `status <> 'done' AND (claimed_until IS NULL OR claimed_until < $1)`,
        orderBy: 'created_at',
        limit: 1,
        set: `status = 'running', claimed_until = $2`,
        returning: 'r.id, r.tenant_id, r.endpoint_id, r.since, r.until',
      },
      [at, new Date(at.getTime() + 60_000)],
    );
    return rows[0] ?? null;
  }

  /** Reads the whole log in a group of its own and enqueues the replay's deliveries. */
  async function runReplay(replay: ReplayRow): Promise<void> {
    const group = `${opts.group}.replay.${replay.id}`;
    let enqueued = 0;
    const only = {
      endpointId: replay.endpoint_id,
      replayId: replay.id,
      since: replay.since,
      until: replay.until,
      tenantId: replay.tenant_id,
    };
    const replayConsumer = await log.consume({
      group,
      fromBeginning: true,
      maxBatchSize: 1000,
      maxWaitMs: 200,
      // Dead letters are the projector's; the dispatcher only skips them.
      handle: async ({ events }) => {
        const made = await insertDeliveries(pool, await deliveriesFor(events, only), now());
        enqueued += made;
        if (made > 0) wakeWorkers();
        await pool.query(
          'UPDATE webhook_replays SET claimed_until = $2, enqueued = enqueued + $3 WHERE id = $1',
          [replay.id, new Date(now().getTime() + 60_000), made],
        );
      },
    });
    try {
      // A plain timer: `sleep` is the workers' (a wake-up meant for them must not end this wait).
      while (running && (await log.lag(group)) > 0) await new Promise((r) => setTimeout(r, 200));
    } finally {
      await replayConsumer.stop();
    }
    if (!running) return;
    await pool.query(`UPDATE webhook_replays SET status = 'done', finished_at = $2 WHERE id = $1`, [
      replay.id,
      now(),
    ]);
    logger.info({ replayId: replay.id, webhookId: replay.endpoint_id, enqueued }, 'webhook replay done');
  }

  async function runReplays(): Promise<void> {
    while (running) {
      const replay = await claimReplay();
      if (!replay) return;
      await runReplay(replay);
    }
  }

  const replays = createPoller({
    name: 'webhook-replays',
    intervalMs: replayPollMs,
    run: runReplays,
    onError: (error) =>
      logger.warn(
        { err: error instanceof Error ? error.message : String(error) },
        'webhook replay failed; retrying',
      ),
  });

  /** Small batches, so the sweep never holds many row locks or a long transaction. */
  async function sweep(): Promise<number> {
    const cutoff = new Date(now().getTime() - retentionMs);
    let deleted = 0;
    for (;;) {
      const { rowCount } = await pool.query(
        `DELETE FROM webhook_deliveries WHERE id IN (
           SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND updated_at < $1 LIMIT 1000)`,
        [cutoff],
      );
      deleted += rowCount ?? 0;
      if ((rowCount ?? 0) < 1000) break;
    }
    await pool.query(`DELETE FROM webhook_replays WHERE status = 'done' AND finished_at < $1`, [cutoff]);
    return deleted;
  }

  const sweeper = createPoller({
    name: 'webhook-sweep',
    intervalMs: sweepIntervalMs,
    firstRunMs: sweepIntervalMs,
    run: sweep,
    onError: (error) =>
      logger.warn(
        { err: error instanceof Error ? error.message : String(error) },
        'webhook record sweep failed',
      ),
  });

  return {
    async start() {
      running = true;
      consumer = await log.consume({
        group: opts.group,
        fromBeginning: false,
        maxBatchSize: opts.maxBatchSize ?? 1000,
        maxWaitMs: opts.maxWaitMs ?? 100,
        handle: async ({ events }) => {
          await enqueue(events);
        },
      });
      workers.start();
      replays.start();
      sweeper.start();
    },
    async stop() {
      running = false;
      const stopping = Promise.all([workers.stop(), replays.stop(), sweeper.stop()]);
      await consumer?.stop();
      consumer = null;
      await stopping;
      await Promise.allSettled([...inFlight]);
    },
    sweep,
    enqueue,
    runDue,
    lag: () => log.lag(opts.group),
  };
}
