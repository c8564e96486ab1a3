import { type LogEvent, WEBHOOK_EVENT_TYPES } from '@tern/contracts';
import { createPoller, type Poller } from '@tern/jobs';
import { listEvents, type StreamEvent } from '@tern/read-models';
import {
  type ClaimedReplay,
  claimReplay,
  enabledEndpoints,
  finishReplay,
  insertDeliveries,
  type NewDelivery,
  noteReplayProgress,
} from '@tern/webhooks';
import { type DispatcherContext, errorText } from './context.js';
import { deliveriesFor, type ReplayScope } from './deliveries.js';

/** Events of the stream read per page by a replay from a cursor. */
const CURSOR_PAGE = 1000;

/**
 * A delivery of an event of the stream (SPEC §25): its body is the stream's (the event's webhook
 * body, erased fields null), fixed at once; the stored event is the stream's event.
 */
function streamDelivery(tenantId: string, endpointId: string, replayId: string, e: StreamEvent): NewDelivery {
  const event = {
    id: e.id,
    tenantId,
    emailId: String(e.data.emailId ?? ''),
    occurredAt: e.timestamp,
    type: e.type,
    data: e.data,
  } as unknown as LogEvent;
  const to = e.data.to;
  return {
    tenantId,
    endpointId,
    event,
    replayId,
    body: {
      json: JSON.stringify({ type: e.type, timestamp: e.timestamp, data: e.data }),
      recipient: typeof to === 'string' ? to : null,
    },
  };
}

/**
 * Webhook replays (SPEC §17, §25): each pending replay is claimed with a lease; a window replay
 * reads the whole log in a consumer group of its own, a cursor replay pages the event stream; both
 * enqueue the deliveries of their endpoint (the unique (endpoint, event, replay) key makes a replay
 * run again after a lost lease add nothing).
 */
export function createReplayJob(ctx: DispatcherContext, intervalMs: number): Poller {
  const { pool, log, now, logger } = ctx;

  /** Pages the stream from the replay's cursor through its last one, in stream order. */
  async function runCursorReplay(replay: ClaimedReplay, after: bigint, through: bigint): Promise<number> {
    const [endpoint] = await enabledEndpoints(pool, [replay.tenant_id], {
      tenantId: replay.tenant_id,
      endpointId: replay.endpoint_id,
    });
    // A disabled or deleted endpoint gets nothing (as in a window replay).
    if (!endpoint) return 0;
    let enqueued = 0;
    let cursor = after;
    while (ctx.running() && cursor < through) {
      const page = await listEvents(pool, {
        tenantId: replay.tenant_id,
        after: cursor.toString(),
        limit: CURSOR_PAGE,
        // The api checked the cursor against retention; what expired since is simply gone.
        cutoff: new Date(0),
        // No filter: every webhook event type — not the stream's custom events, which no webhook carries.
        types: endpoint.eventTypes ?? WEBHOOK_EVENT_TYPES,
      });
      if (page.expired) {
        logger.warn({ replayId: replay.id }, 'webhook replay: its events expired meanwhile');
        break;
      }
      const events = page.data.filter((e) => BigInt(e.cursor) <= through);
      const made = await insertDeliveries(
        pool,
        events.map((e) => streamDelivery(replay.tenant_id, endpoint.id, replay.id, e)),
        now(),
      );
      enqueued += made;
      if (made > 0) ctx.wakeWorkers();
      await noteReplayProgress(pool, replay.id, new Date(now().getTime() + 60_000), made);
      const next = BigInt(page.next);
      if (!page.hasMore || next <= cursor) break;
      cursor = next;
    }
    return enqueued;
  }

  /** Reads the whole log in a group of its own and enqueues the replay's deliveries. */
  async function runReplay(replay: ClaimedReplay): Promise<void> {
    if (replay.after_seq !== null && replay.through_seq !== null) {
      const enqueued = await runCursorReplay(replay, BigInt(replay.after_seq), BigInt(replay.through_seq));
      if (!ctx.running()) return;
      await finishReplay(pool, replay.id, now());
      logger.info({ replayId: replay.id, webhookId: replay.endpoint_id, enqueued }, 'webhook replay done');
      return;
    }
    if (replay.since === null || replay.until === null) throw new Error(`replay ${replay.id} has no window`);
    const group = `${ctx.opts.group}.replay.${replay.id}`;
    let enqueued = 0;
    const only: ReplayScope = {
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
      handle: async ({ events, domainEvents, inboundEvents }) => {
        const made = await insertDeliveries(
          pool,
          await deliveriesFor(pool, [...events, ...domainEvents, ...inboundEvents], only),
          now(),
        );
        enqueued += made;
        if (made > 0) ctx.wakeWorkers();
        await noteReplayProgress(pool, replay.id, new Date(now().getTime() + 60_000), made);
      },
    });
    try {
      // A plain timer: `sleep` is the workers' (a wake-up meant for them must not end this wait).
      while (ctx.running() && (await log.lag(group)) > 0) await new Promise((r) => setTimeout(r, 200));
    } finally {
      await replayConsumer.stop();
    }
    if (!ctx.running()) return;
    await finishReplay(pool, replay.id, now());
    logger.info({ replayId: replay.id, webhookId: replay.endpoint_id, enqueued }, 'webhook replay done');
  }

  async function runReplays(): Promise<void> {
    while (ctx.running()) {
      const at = now();
      const replay = await claimReplay(pool, at, new Date(at.getTime() + 60_000));
      if (!replay) return;
      await runReplay(replay);
    }
  }

  return createPoller({
    name: 'webhook-replays',
    intervalMs,
    run: runReplays,
    onError: (error) => logger.warn({ err: errorText(error) }, 'webhook replay failed; retrying'),
  });
}
