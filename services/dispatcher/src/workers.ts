import { isDomainEvent, type LogEvent } from '@tern/contracts';
import type { EmailState } from '@tern/domain';
import { claimDueSql, createPoller, type Poller } from '@tern/jobs';
import { webhookHeaders } from '@tern/webhooks';
import { type DispatcherContext, errorText } from './context.js';
import { postWebhook } from './http-post.js';
import type { AttemptRecord } from './options.js';
import { buildDomainPayload, buildPayload } from './payload.js';

interface ClaimedDelivery {
  id: string;
  tenant_id: string;
  endpoint_id: string;
  event_id: string;
  event: LogEvent;
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

export interface WorkerSettings {
  schedule: readonly number[];
  timeoutMs: number;
  leaseMs: number;
  disableAfterMs: number;
  concurrency: number;
  pollIntervalMs: number;
  graceMs: number;
}

export interface DeliveryWorkers {
  poller: Poller;
  /** Claims and attempts the due deliveries once; resolves with how many were attempted. */
  runDue(): Promise<number>;
  /** Resolves once the attempts in flight have ended. */
  settled(): Promise<void>;
}

/**
 * The delivery workers: claim due deliveries (`FOR UPDATE SKIP LOCKED`, pushing `next_attempt_at`
 * one lease ahead), fix their bodies, post them, and record each attempt in one statement.
 */
export function createDeliveryWorkers(ctx: DispatcherContext, s: WorkerSettings): DeliveryWorkers {
  const { pool, now, logger } = ctx;
  const inFlight = new Set<Promise<void>>();

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
      [at, new Date(at.getTime() + s.leaseMs), limit],
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
      if (isDomainEvent(d.event)) {
        // A domain event carries everything its body needs: no projection to wait for.
        const body = JSON.stringify(buildDomainPayload(d.event));
        fixed.push({ id: d.id, body, recipient: null });
        ready.push({ ...d, request_body: body });
        continue;
      }
      const projected = d.email_state !== null && (d.email_version ?? 0) > 0 ? d.email_state : null;
      if (
        (projected?.queued ?? null) === null &&
        d.event.type !== 'email.queued' &&
        at.getTime() - d.created_at.getTime() < s.graceMs
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
      secrets.push(ctx.opts.secretBox.decrypt(d.secret_enc));
      if (
        d.previous_secret_enc !== null &&
        d.previous_secret_expires_at !== null &&
        d.previous_secret_expires_at.getTime() > startedAt.getTime()
      ) {
        secrets.push(ctx.opts.secretBox.decrypt(d.previous_secret_enc));
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
    const result = await postWebhook(d.url, headers, body, {
      timeoutMs: s.timeoutMs,
      allowPrivate: ctx.opts.allowPrivate,
    });
    const attemptNo = d.attempts + 1;
    const ok = result.error === null;
    const outcome: AttemptRecord['outcome'] = ok
      ? 'delivered'
      : attemptNo > s.schedule.length
        ? 'failed'
        : 'retry';
    const finished = now();
    const next =
      outcome === 'retry' ? new Date(finished.getTime() + (s.schedule[attemptNo - 1] ?? 0)) : finished;
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
        new Date(startedAt.getTime() - s.disableAfterMs),
      ],
    );
    if (rows[0]?.disabled)
      logger.warn({ webhookId: d.endpoint_id }, 'webhook endpoint disabled after failing');
    ctx.opts.onAttempt?.({
      deliveryId: d.id,
      endpointId: d.endpoint_id,
      eventId: d.event_id,
      result,
      outcome,
    });
  }

  async function runDue(): Promise<number> {
    const free = s.concurrency - inFlight.size;
    if (free <= 0) return 0;
    const claimed = await claim(free);
    const ready = claimed.length > 0 ? await fixBodies(claimed) : [];
    for (const d of ready) {
      const p: Promise<void> = attempt(d)
        .catch((error: unknown) => {
          // The lease ends and the delivery is attempted again; never logs the URL or secret.
          logger.error({ err: errorText(error), deliveryId: d.id }, 'webhook attempt failed to record');
        })
        .finally(() => {
          inFlight.delete(p);
          ctx.wakeWorkers();
        });
      inFlight.add(p);
    }
    return claimed.length;
  }

  /** Claims until nothing is due or every slot is taken; then the poller waits (or is woken). */
  async function runWorkers(): Promise<void> {
    while (ctx.running()) {
      const claimed = await runDue();
      if (claimed === 0 || inFlight.size >= s.concurrency) return;
    }
  }

  const poller = createPoller({
    name: 'webhook-workers',
    intervalMs: s.pollIntervalMs,
    run: runWorkers,
    onError: (error) => logger.warn({ err: errorText(error) }, 'webhook claim failed; retrying'),
  });

  return {
    poller,
    runDue,
    async settled() {
      await Promise.allSettled([...inFlight]);
    },
  };
}
