import type { InboundMessage, InboundSummary } from '@tern/contracts';
import type { Keyring } from '@tern/privacy';
import type pg from 'pg';
import { loadMailparser } from './parse.js';
import { openRaw } from './raw-parts.js';
import { getInbound, listInbound, type SealedBlob, type StoredInbound } from './store.js';

/** What the reader needs of the keyring. */
export type InboundKeyring = Pick<Keyring, 'openBytes' | 'recipientHash'>;

export interface InboundPage {
  data: InboundSummary[];
  nextCursor: string | null;
}

interface Summary {
  from: string;
  to: string[];
  subject: string | null;
}

interface Content {
  cc: string[];
  text: string | null;
  html: string | null;
  headers: { name: string; value: string }[];
  attachments: InboundMessage['attachments'];
  clientIp: string | null;
  helo: string | null;
  messageId: string | null;
}

/** The cursor of the page that follows the message received at `at` (ISO 8601) with this id. */
export const encodeInboundCursor = (at: string, id: string) =>
  Buffer.from(JSON.stringify([at, id])).toString('base64url');
const encodeCursor = (m: StoredInbound) => encodeInboundCursor(m.receivedAt.toISOString(), m.id);

/** The (receivedAt, id) a cursor names, or null when it is not one of ours. */
export function decodeInboundCursor(cursor: string): { at: string; id: string } | null {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as unknown[];
    if (typeof at !== 'string' || typeof id !== 'string' || Number.isNaN(Date.parse(at))) return null;
    return { at, id };
  } catch {
    return null;
  }
}

export interface InboundReaderOptions {
  /**
   * The tenant's retention cut-off now (SPEC §9): a message received before it reads as absent
   * (404, not listed) at once, before the worker's retention job deletes it. Without it, only the
   * job's deletion hides old mail.
   */
  cutoffOf?: (tenantId: string) => Promise<Date>;
}

/**
 * Reads stored inbound mail for the API (SPEC §24): opens the sealed parts with the keyring. A
 * message whose key is gone (erased, past retention) or received before the tenant's retention
 * cut-off reads as absent.
 */
export function createInboundReader(pool: pg.Pool, keyring: InboundKeyring, opts: InboundReaderOptions = {}) {
  const cutoffOf = async (tenantId: string) => (opts.cutoffOf ? opts.cutoffOf(tenantId) : undefined);
  const open = async (m: StoredInbound, label: string, blob: SealedBlob): Promise<Buffer | null> =>
    keyring.openBytes(m.tenantId, m.id, label, { rh: m.fromHash, p: m.period, ...blob });
  const json = async <T>(m: StoredInbound, label: string, blob: SealedBlob): Promise<T | null> => {
    const bytes = await open(m, label, blob);
    return bytes ? (JSON.parse(bytes.toString()) as T) : null;
  };

  async function summaryOf(m: StoredInbound, content: Content | null): Promise<InboundSummary | null> {
    const s = await json<Summary>(m, 'summary', m.summary);
    if (!s) return null;
    return {
      id: m.id,
      from: s.from,
      to: s.to,
      subject: s.subject,
      auth: m.auth,
      inReplyTo: m.inReplyTo,
      receivedAt: m.receivedAt.toISOString(),
      attachments: content?.attachments ?? [],
    };
  }

  return {
    async list(q: {
      tenantId: string;
      limit: number;
      cursor?: { at: string; id: string } | undefined;
      to?: string | undefined;
      from?: string | undefined;
      since?: string | undefined;
    }): Promise<InboundPage> {
      const rows = await listInbound(pool, {
        tenantId: q.tenantId,
        limit: q.limit + 1,
        after: q.cursor,
        toHash: q.to ? keyring.recipientHash(q.tenantId, q.to.trim().toLowerCase()) : undefined,
        fromHash: q.from ? keyring.recipientHash(q.tenantId, q.from.trim().toLowerCase()) : undefined,
        since: q.since,
        cutoff: await cutoffOf(q.tenantId),
      });
      const page = rows.slice(0, q.limit);
      const data: InboundSummary[] = [];
      for (const m of page) {
        const s = await summaryOf(m, null);
        if (s) data.push({ ...s, attachments: [] });
      }
      return { data, nextCursor: rows.length > q.limit ? encodeCursor(page[page.length - 1]!) : null };
    },

    async get(tenantId: string, id: string): Promise<InboundMessage | null> {
      const m = await getInbound(pool, tenantId, id, { cutoff: await cutoffOf(tenantId) });
      if (!m?.content) return null;
      const content = await json<Content>(m, 'content', m.content);
      const summary = content && (await summaryOf(m, content));
      if (!content || !summary) return null;
      return {
        ...summary,
        cc: content.cc,
        text: content.text,
        html: content.html,
        headers: content.headers,
        clientIp: content.clientIp,
        helo: content.helo,
        messageId: content.messageId,
      };
    },

    async raw(tenantId: string, id: string): Promise<Buffer | null> {
      const m = await getInbound(pool, tenantId, id, { raw: true, cutoff: await cutoffOf(tenantId) });
      return m ? openRaw(pool, keyring, m) : null;
    },

    /** One attachment's bytes (re-read from the raw message) with its type and name. */
    async attachment(
      tenantId: string,
      id: string,
      attachmentId: string,
    ): Promise<{ content: Buffer; contentType: string; filename: string | null } | null> {
      const index = /^att_(\d{1,4})$/.exec(attachmentId)?.[1];
      if (index === undefined) return null;
      const raw = await this.raw(tenantId, id);
      if (!raw) return null;
      const { simpleParser } = await loadMailparser();
      const parsed = await simpleParser(raw, {
        skipHtmlToText: true,
        skipTextToHtml: true,
        skipImageLinks: true,
      });
      const a = parsed.attachments[Number(index)];
      return a ? { content: a.content, contentType: a.contentType, filename: a.filename ?? null } : null;
    },
  };
}

export type InboundReader = ReturnType<typeof createInboundReader>;
