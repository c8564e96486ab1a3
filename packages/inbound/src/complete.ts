import type { InboundAuth, InboundEvent } from '@tern/contracts';
import { type Logger, silentLogger } from '@tern/kernel';
import type { ParsedMail } from 'mailparser';
import type pg from 'pg';
import { type ForwardSender, forwardRequest, isForward } from './forward.js';
import { attachmentKept } from './parse.js';
import { firstMatch, type InboundRoute, matches } from './routes.js';
import { deleteInbound, markAnnounced } from './store.js';

/** A message as the pipeline's consumers see it once it is stored (`onReceived`: DMARC reports, automations). */
export interface ReceivedMessage {
  id: string;
  tenantId: string;
  /** Sender (the From header's address, else MAIL FROM). */
  from: string;
  /** The tenant's envelope recipients. */
  recipients: string[];
  subject: string | null;
  auth: InboundAuth;
  inReplyTo: string | null;
  receivedAt: Date;
  /** The raw MIME as one Buffer: a copy of the whole message on each call (call it only when needed). */
  raw(): Buffer;
  /**
   * The parsed message; an attachment over `keepAttachmentBytes` (5 MiB) has an empty `content`
   * and its real `size` (`attachmentKept` tells them apart): its bytes are in `raw()`.
   */
  parsed: ParsedMail;
  /**
   * false when the consumers were handed this message already, by an arrival that ran every step
   * to its end (an MTA's retry of a message answered 250); true the first time, and again when an
   * arrival failed or crashed before its row was marked announced (a consumer sees a message again
   * only then, and keys what it keeps by the inbound id).
   */
  fresh: boolean;
}

/** What `completeStored` needs: the store, the log, the send path of forwards, the consumers. */
export interface CompleteDeps {
  pool: pg.Pool;
  /** The sealed event stream (only `email.received` is appended here). */
  log: { append(events: readonly InboundEvent[]): Promise<void> };
  logger?: Logger;
  /**
   * Called once per stored message after it is durable (log and store), before its row is marked
   * announced and before the 250: the hook other parts hang on (DMARC aggregate reports, the
   * `email.received` automation trigger; a route acts before it, in `completeStored`). A throw is
   * logged, never fails the message.
   */
  onReceived?: (message: ReceivedMessage) => Promise<void> | void;
  /**
   * Sends a `forward` action's message through the send path (SPEC §24); absent: a route's forward
   * is a failure (451), never silently skipped.
   */
  forward?: ForwardSender;
  /** Marks a stored message announced; default one UPDATE per message (the listener groups them). */
  markAnnounced?: (id: string) => Promise<void>;
}

/** A stored message whose steps may not have run to their end yet, as `completeStored` needs it. */
export interface StoredArrival {
  id: string;
  /** The row was marked announced: every step below ran to its end once, by an earlier arrival. */
  announced: boolean;
  tenantId: string;
  receivedAt: Date;
  from: string;
  to: string[];
  recipients: string[];
  size: number;
  auth: InboundAuth;
  inReplyTo: string | null;
  parsed: ParsedMail;
  /** The raw MIME as one Buffer (a copy on each call). */
  raw: () => Buffer;
  /** The tenant's routes (SPEC §24), as `inbound_routes` held them when the message was stored. */
  routes: readonly InboundRoute[];
  /** The message parsed with every attachment's bytes, when `parsed` dropped some (a forward sends them). */
  full?: () => Promise<ParsedMail>;
}

/**
 * What follows the store (SPEC §24), for an arrival and for the sweeper alike. Unless an earlier
 * arrival ran it all: the first matching route's forwards queued (email ids derived from the inbound
 * id, so a redo queues nothing twice), `email.received` appended (event id = inbound id: a redo is a
 * duplicate the consumers drop), `onReceived` handed the message as `fresh` (its consumers are
 * idempotent by the inbound id), and only then the row marked announced — so a failure or a crash
 * anywhere before the mark leaves the row for the MTA's retry or the sweeper to run every step
 * again, and none is skipped. A `drop` route's content is deleted instead of announced.
 */
export async function completeStored(deps: CompleteDeps, m: StoredArrival): Promise<{ dropped: boolean }> {
  let { parsed } = m;
  const route = firstMatch(m.routes, {
    recipients: m.recipients,
    from: m.from,
    subject: parsed.subject ?? null,
  });
  const dropped = route?.actions.some((a) => 'drop' in a) ?? false;
  if (!m.announced) {
    if (route && !dropped && !isForward(parsed)) {
      const recipient = m.recipients.find((r) => matches(route.match.recipient, r)) ?? m.recipients[0] ?? '';
      // A forward sends every attachment: parse again with their bytes when some were not kept.
      const forwards = route.actions.some((a) => 'forward' in a);
      if (forwards && m.full && !parsed.attachments.every(attachmentKept)) parsed = await m.full();
      for (const [action, a] of route.actions.entries()) {
        if (!('forward' in a)) continue;
        if (!deps.forward) throw new Error('inbound: a forward route but no send path');
        await deps.forward(
          forwardRequest({
            tenantId: m.tenantId,
            inboundId: m.id,
            action,
            to: a.forward,
            recipient,
            from: m.from,
            parsed,
            at: m.receivedAt,
          }),
        );
      }
    }
    const event: InboundEvent = {
      id: m.id,
      type: 'email.received',
      tenantId: m.tenantId,
      inboundId: m.id,
      occurredAt: m.receivedAt.toISOString(),
      data: {
        from: m.from,
        to: m.to.slice(0, 100),
        subject: parsed.subject?.slice(0, 998) ?? null,
        messageId: parsed.messageId?.slice(0, 998) ?? null,
        size: m.size,
        attachments: parsed.attachments.length,
        auth: m.auth,
        inReplyTo: m.inReplyTo,
        ...(route
          ? {
              routeId: route.id,
              webhooks: dropped ? [] : route.actions.flatMap((a) => ('webhook' in a ? [a.webhook] : [])),
            }
          : {}),
      },
    };
    await deps.log.append([event]);
  }
  // A `drop` route: accepted (the sender is not told), announced to nobody, its content not kept.
  if (dropped) {
    await deleteInbound(deps.pool, m.tenantId, m.id);
    return { dropped };
  }
  if (deps.onReceived) {
    try {
      await deps.onReceived({
        id: m.id,
        tenantId: m.tenantId,
        from: m.from,
        recipients: m.recipients,
        subject: parsed.subject ?? null,
        auth: m.auth,
        inReplyTo: m.inReplyTo,
        receivedAt: m.receivedAt,
        raw: m.raw,
        parsed,
        fresh: !m.announced,
      });
    } catch (error) {
      (deps.logger ?? silentLogger).warn(
        { err: error, inboundId: m.id },
        'inbound: a consumer of the received message failed',
      );
    }
  }
  if (!m.announced) await (deps.markAnnounced ? deps.markAnnounced(m.id) : markAnnounced(deps.pool, m.id));
  return { dropped };
}
