import { type DeliveryEvent, isDomainEvent, isInboundEvent } from '@tern/contracts';
import { emailKey } from '@tern/domain';
import { createPoller, type Poller } from '@tern/jobs';
import { emailViewsAt } from '@tern/read-models';
import {
  abandonDelivery,
  type ClaimedDelivery,
  claimDueDeliveries,
  fixDeliveryBodies,
  postponeDeliveries,
  recordAttempt,
  webhookHeaders,
} from '@tern/webhooks';
import { type DispatcherContext, errorText } from './context.js';
import { postWebhook } from './http-post.js';
import type { AttemptRecord } from './options.js';
import { buildDomainPayload, buildInboundPayload, buildPayload } from './payload.js';
import { createDeliveredRecorder } from './recorder.js';

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
  const delivered = createDeliveredRecorder(pool, () => inFlight.size);
  /** Whether the last claim took every free slot: more may be due (issue 45, see `runDue`). */
  let lastClaimFull = false;

  async function claim(limit: number): Promise<ClaimedDelivery[]> {
    const at = now();
    return claimDueDeliveries(pool, at, new Date(at.getTime() + s.leaseMs), limit);
  }

  /** Ends a delivery without an HTTP attempt (endpoint gone or disabled). */
  async function abandon(d: ClaimedDelivery, reason: string) {
    await abandonDelivery(pool, d.id, reason, now());
  }

  /**
   * Fixes the body of every claimed delivery that has none yet, in one statement, before any is
   * sent: every retry (and a repeat after a crash) sends the same bytes. A delivery whose email
   * the projector has not folded yet (no recipient known) waits a moment, up to `graceMs`. The
   * emails' views are read in one statement by their ids, which Postgres prunes to their days of
   * the log (a join in the claim would read every day: `amongIds`, packages/read-models).
   */
  async function fixBodies(claimed: ClaimedDelivery[]): Promise<ClaimedDelivery[]> {
    const ready: ClaimedDelivery[] = [];
    const waiting: string[] = [];
    const fixed: { id: string; body: string; recipient: string | null }[] = [];
    const at = now();
    const ofEmails = claimed
      .filter((d) => d.request_body === null && d.url !== null && d.enabled)
      .map((d) => d.event)
      .filter((e): e is DeliveryEvent => !isDomainEvent(e) && !isInboundEvent(e));
    const views = await emailViewsAt(pool, ofEmails);
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
      if (isInboundEvent(d.event)) {
        // An inbound message's metadata and links (SPEC §24): no projection to wait for.
        const body = JSON.stringify(buildInboundPayload(d.event));
        fixed.push({ id: d.id, body, recipient: d.event.data.from });
        ready.push({ ...d, request_body: body });
        continue;
      }
      // The email log's view of the event's email as of the event.
      const view = views.get(emailKey(d.event.tenantId, d.event.id));
      if (view === undefined) throw new Error('a delivery of an email event without its view');
      if (
        !view.projected &&
        d.event.type !== 'email.queued' &&
        at.getTime() - d.created_at.getTime() < s.graceMs
      ) {
        waiting.push(d.id);
        continue;
      }
      const payload = buildPayload(d.event, view);
      const body = JSON.stringify(payload);
      fixed.push({ id: d.id, body, recipient: payload.data.to });
      ready.push({ ...d, request_body: body });
    }
    if (waiting.length > 0) {
      await postponeDeliveries(pool, waiting, new Date(at.getTime() + 500));
    }
    if (fixed.length > 0) {
      await fixDeliveryBodies(pool, fixed);
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
    const tried = {
      deliveryId: d.id,
      tenantId: d.tenant_id,
      endpointId: d.endpoint_id,
      attempt: attemptNo,
      startedAt,
      durationMs: result.durationMs,
      statusCode: result.statusCode,
      responseExcerpt: result.responseExcerpt,
      finishedAt: finished,
    };
    // A success is recorded with the others ending meanwhile (one statement for them all);
    // a failure: the attempt, the delivery's new state and the endpoint's failure run, in one.
    const disabled = ok
      ? await delivered.record(tried).then(() => false)
      : await recordAttempt(pool, {
          ...tried,
          error: result.error,
          status: outcome === 'retry' ? 'pending' : outcome,
          nextAttemptAt: next,
          ok,
          disableIfFailingSince: new Date(startedAt.getTime() - s.disableAfterMs),
        });
    if (disabled) logger.warn({ webhookId: d.endpoint_id }, 'webhook endpoint disabled after failing');
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
    lastClaimFull = claimed.length === free;
    const ready = claimed.length > 0 ? await fixBodies(claimed) : [];
    for (const d of ready) {
      const p: Promise<void> = attempt(d)
        .catch((error: unknown) => {
          // The lease ends and the delivery is attempted again; never logs the URL or secret.
          logger.error({ err: errorText(error), deliveryId: d.id }, 'webhook attempt failed to record');
        })
        .finally(() => {
          inFlight.delete(p);
          // A claim for the slots this frees, once half of them are free and only when the last
          // claim found more due than it could take (issue 45: claims of one row each, most of
          // them finding nothing, were a statement per delivery). New deliveries wake the
          // workers themselves (`enqueue`); retries fall due within the poll interval.
          if (lastClaimFull && s.concurrency - inFlight.size >= Math.ceil(s.concurrency / 2))
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
