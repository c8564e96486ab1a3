import { createHash, randomBytes } from 'node:crypto';
import type { InboundAuth, InboundEvent } from '@tern/contracts';
import { normalizeMessageId } from '@tern/domain';
import { type Logger, silentLogger } from '@tern/kernel';
import type { Keyring } from '@tern/privacy';
import { emailsByMessageId } from '@tern/read-models';
import type { AddressObject, ParsedMail } from 'mailparser';
import type pg from 'pg';
import { type ArrivalFacts, type DnsResolve, verdictsOf } from './auth.js';
import { type ForwardSender, forwardRequest, isForward } from './forward.js';
import { attachmentKept, bodyHash, concatRaw, type RawMessage, rawMessageOf } from './parse.js';
import { parseForStore, parseFull } from './parse-store.js';
import { deleteRawParts, RAW_PART_BYTES, writeRawParts } from './raw-parts.js';
import { firstMatch, type InboundRoute, matches } from './routes.js';
import { deleteInbound, markAnnounced, storeInbound } from './store.js';

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
  /** false when this arrival was a duplicate of a message already stored (an MTA's retry). */
  fresh: boolean;
}

export interface ReceiveDeps {
  pool: pg.Pool;
  keyring: Keyring;
  /** The sealed event stream (only `email.received` is appended here). */
  log: { append(events: readonly InboundEvent[]): Promise<void> };
  resolve: DnsResolve;
  now?: () => Date;
  logger?: Logger;
  /**
   * Called once per stored message after it is durable (log and store), before the 250: the hook
   * other parts hang on (DMARC aggregate reports, the `email.received` automation trigger; a route
   * acts before it, in `completeStored`). A throw is logged, never fails the message.
   */
  onReceived?: (message: ReceivedMessage) => Promise<void> | void;
  /**
   * Sends a `forward` action's message through the send path (SPEC §24); absent: a route's forward
   * is a failure (451), never silently skipped.
   */
  forward?: ForwardSender;
  /** Marks a stored message announced; default one UPDATE per message (the listener groups them). */
  markAnnounced?: (id: string) => Promise<void>;
  /** A raw message over this many bytes is sealed and stored in parts of this size (default 1 MiB). */
  rawPartBytes?: number;
  /** An attachment over this many bytes is not kept decoded in `parsed` (default 5 MiB). */
  keepAttachmentBytes?: number;
}

/** A stored message the log does not know yet, as `completeStored` needs it. */
export interface StoredArrival {
  id: string;
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
  /** The tenant's routes (SPEC §24), as `inbound_routes` held them when the message was stored. */
  routes: readonly InboundRoute[];
  /** The message parsed with every attachment's bytes, when `parsed` dropped some (a forward sends them). */
  full?: () => Promise<ParsedMail>;
}

/**
 * What follows the store (SPEC §24), for an arrival and for the sweeper alike: the first matching
 * route; when not announced yet, its forwards queued (email ids derived from the inbound id, so a
 * redo queues nothing twice), `email.received` appended (event id = inbound id: a redo is a
 * duplicate the consumers drop), the row marked announced; a `drop` route's content deleted.
 */
export async function completeStored(
  deps: Pick<ReceiveDeps, 'pool' | 'log' | 'forward' | 'markAnnounced'>,
  m: StoredArrival,
): Promise<{ dropped: boolean }> {
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
    await (deps.markAnnounced ? deps.markAnnounced(m.id) : markAnnounced(deps.pool, m.id));
  }
  // A `drop` route: accepted (the sender is not told), announced to nobody, its content not kept.
  if (dropped) await deleteInbound(deps.pool, m.tenantId, m.id);
  return { dropped };
}

/** The envelope of one accepted message: each recipient with the tenant it belongs to. */
export interface Envelope extends ArrivalFacts {
  recipients: readonly { address: string; tenantId: string }[];
}

/** `inb_` + 10 characters of time + 16 of randomness, base 36: ordered by arrival. */
export function newInboundId(now: Date): string {
  const time = now.getTime().toString(36).padStart(10, '0');
  const rand = [...randomBytes(16)].map((b) => (b % 36).toString(36)).join('');
  return `inb_${time}${rand}`;
}

const DEDUP_WINDOW_MS = 24 * 60 * 60 * 1000;
const EMPTY_BLOB = { iv: Buffer.alloc(0), tag: Buffer.alloc(0), ct: Buffer.alloc(0) };

const addresses = (a: AddressObject | AddressObject[] | undefined): string[] =>
  (Array.isArray(a) ? a : a ? [a] : []).flatMap((o) => o.value.map((v) => v.address ?? '').filter(Boolean));

/** The Message-IDs a reply names: In-Reply-To first, then References from the newest. */
function referencedIds(parsed: ParsedMail): string[] {
  const refs = Array.isArray(parsed.references)
    ? parsed.references
    : parsed.references
      ? [parsed.references]
      : [];
  return [parsed.inReplyTo ?? '', ...refs.slice().reverse()]
    .flatMap((r) => r.split(/\s+/))
    .map(normalizeMessageId)
    .filter((r) => r !== '');
}

function contentOf(parsed: ParsedMail, facts: ArrivalFacts, recipients: readonly string[]) {
  return {
    recipients,
    cc: addresses(parsed.cc),
    text: parsed.text ?? null,
    html: typeof parsed.html === 'string' ? parsed.html : null,
    headers: parsed.headerLines.map((h) => ({
      name: h.key,
      value: h.line.slice(h.line.indexOf(':') + 1).trim(),
    })),
    attachments: parsed.attachments.map((a, i) => ({
      id: `att_${i}`,
      filename: a.filename ?? null,
      contentType: a.contentType,
      size: a.size,
      contentId: a.contentId ?? null,
    })),
    clientIp: facts.clientIp,
    helo: facts.helo,
    envelopeFrom: facts.sender,
    messageId: parsed.messageId ?? null,
  };
}

/**
 * The pipeline of one accepted message (SPEC §24): parse (mailparser), verdicts (mailauth),
 * thread (provider_messages), then per tenant of its recipients: seal the content under the
 * sender's data key, store it (one row; a resend of the same Message-ID and body to the same
 * recipients within 24 h finds the first and stores nothing), append `email.received`, mark it
 * announced. Resolves once every tenant's message is in the store AND the log; a throw means
 * the MTA must retry (451), and the retry finds what was already stored.
 */
export async function receiveMessage(
  deps: ReceiveDeps,
  input: Buffer | RawMessage,
  envelope: Envelope,
): Promise<string[]> {
  const now = deps.now ?? (() => new Date());
  const logger = deps.logger ?? silentLogger;
  const raw = rawMessageOf(input);
  const partBytes = deps.rawPartBytes ?? RAW_PART_BYTES;
  // The verdicts wait mostly on DNS: they run while the message is parsed. Both read the chunks.
  const [parsed, auth] = await Promise.all([
    parseForStore(raw, deps.keepAttachmentBytes),
    verdictsOf(raw, envelope, deps.resolve),
  ]);
  const refs = referencedIds(parsed);
  const threads = refs.length > 0 ? await emailsByMessageId(deps.pool, refs.slice(0, 50)) : new Map();
  const hash = bodyHash(raw);
  const from = (addresses(parsed.from)[0] ?? envelope.sender) || `postmaster@${envelope.helo || 'unknown'}`;
  const headerTo = addresses(parsed.to);
  const byTenant = new Map<string, string[]>();
  for (const r of envelope.recipients) {
    const list = byTenant.get(r.tenantId) ?? [];
    list.push(r.address.toLowerCase());
    byTenant.set(r.tenantId, list);
  }
  const ids: string[] = [];
  for (const [tenantId, recipients] of byTenant) {
    const receivedAt = now();
    const dedupKey = createHash('sha256')
      .update(JSON.stringify([[...new Set(recipients)].sort(), parsed.messageId ?? '', hash]))
      .digest('hex');
    const inReplyTo =
      refs
        .flatMap((ref) => (threads.get(ref) ?? []) as { tenantId: string; emailId: string }[])
        .find((e) => e.tenantId === tenantId)?.emailId ?? null;
    const id = newInboundId(receivedAt);
    const to = headerTo.length > 0 ? headerTo : recipients;
    // Under the sender's key, not recorded as the id's (`email_keys`): nothing is sealed by this id
    // later, and each part names its key (the row keeps it too: from_hash, period).
    const sealParts = (parts: readonly { label: string; data: Buffer }[]) =>
      deps.keyring.sealBytesForAddress(tenantId, id, from, receivedAt, parts);
    const seal = async (label: string, data: Buffer) => (await sealParts([{ label, data }]))[0]!;
    // Over one part, the raw is sealed and written part by part before the row (raw-parts.ts).
    const rawParts = raw.size > partBytes ? await writeRawParts(deps.pool, raw, partBytes, seal, id) : 0;
    const sealed = await sealParts([
      { label: 'summary', data: Buffer.from(JSON.stringify({ from, to, subject: parsed.subject ?? null })) },
      { label: 'content', data: Buffer.from(JSON.stringify(contentOf(parsed, envelope, recipients))) },
      ...(rawParts > 0 ? [] : [{ label: 'raw', data: concatRaw(raw) }]),
    ]);
    const summary = sealed[0]!;
    const content = sealed[1]!;
    const sealedRaw = sealed[2] ?? EMPTY_BLOB;
    const hashes = [
      ...new Set([...recipients, ...to, ...addresses(parsed.cc)].map((a) => a.toLowerCase())),
    ].map((a) => deps.keyring.recipientHash(tenantId, a));
    // Dedup check, insert and the tenant's routes in one round trip (`storeInbound`), under the
    // dedup key's lock.
    const stored = await storeInbound(
      deps.pool,
      {
        id,
        tenantId,
        receivedAt,
        dedupKey,
        fromHash: summary.rh,
        toHashes: hashes,
        period: summary.p,
        size: raw.size,
        attachments: parsed.attachments.length,
        auth,
        inReplyTo,
        summary,
        content,
        raw: sealedRaw,
        rawParts,
      },
      new Date(receivedAt.getTime() - DEDUP_WINDOW_MS),
    );
    // A duplicate: the first copy's raw is kept, the parts just written are not needed.
    if (rawParts > 0 && !stored.fresh) await deleteRawParts(deps.pool, id);
    const outcome = await completeStored(deps, {
      id: stored.id,
      announced: stored.announced,
      tenantId,
      receivedAt,
      from,
      to,
      recipients,
      size: raw.size,
      auth,
      inReplyTo,
      parsed,
      routes: stored.routes,
      full: () => parseFull(raw),
    });
    ids.push(stored.id);
    if (outcome.dropped) continue;
    if (deps.onReceived) {
      try {
        await deps.onReceived({
          id: stored.id,
          tenantId,
          from,
          recipients,
          subject: parsed.subject ?? null,
          auth,
          inReplyTo,
          receivedAt,
          raw: () => concatRaw(raw),
          parsed,
          fresh: stored.fresh,
        });
      } catch (error) {
        logger.warn(
          { err: error, inboundId: stored.id },
          'inbound: a consumer of the received message failed',
        );
      }
    }
  }
  return ids;
}
