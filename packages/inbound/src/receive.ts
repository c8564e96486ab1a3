import { createHash, randomBytes } from 'node:crypto';
import { normalizeMessageId } from '@tern/domain';
import type { Keyring } from '@tern/privacy';
import { emailsByMessageId } from '@tern/read-models';
import type { AddressObject, ParsedMail } from 'mailparser';
import { type ArrivalFacts, type DnsResolve, verdictsOf } from './auth.js';
import { type CompleteDeps, completeStored } from './complete.js';
import { bodyHash, concatRaw, type RawMessage, rawMessageOf } from './parse.js';
import { parseForStore, parseFull } from './parse-store.js';
import { deleteRawParts, RAW_PART_BYTES, writeRawParts } from './raw-parts.js';
import { storeInbound } from './store.js';

/** What the pipeline of an arrival needs: what follows the store (`CompleteDeps`), and the rest. */
export interface ReceiveDeps extends CompleteDeps {
  keyring: Keyring;
  resolve: DnsResolve;
  now?: () => Date;
  /** A raw message over this many bytes is sealed and stored in parts of this size (default 1 MiB). */
  rawPartBytes?: number;
  /** An attachment over this many bytes is not kept decoded in `parsed` (default 5 MiB). */
  keepAttachmentBytes?: number;
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
    await completeStored(deps, {
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
      raw: () => concatRaw(raw),
      routes: stored.routes,
      full: () => parseFull(raw),
    });
    ids.push(stored.id);
  }
  return ids;
}
