import { createHmac, timingSafeEqual } from 'node:crypto';
import { type InboundReader, inboundTenantOf } from '@tern/inbound';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { ResendError } from './resend-kit.js';

// Resend's `download_url`s of received mail (SPEC §24): signed links that need no key, as
// Resend's are, so `emails.receiving.forward` and a plain `fetch` of the link work. The link names
// the message, the part (`raw` or `att_<n>`) and when it expires, signed with HMAC-SHA256 under a
// key derived from TRACKING_SECRET; it is handed out only in answers to a caller who could read the
// message. Decisions: docs/inbound.md, "Resend compatibility".

/** What the signed links need: the key's secret and the reader of stored mail. */
export interface InboundDownloads {
  secret: string;
  pool: pg.Pool;
  reader: InboundReader;
}

/** How long a link lasts (Resend's download links last an hour too). */
export const LINK_SECONDS = 3600;
/** The route of the links under `/compat/resend`: the one route there that takes no credential. */
export const DOWNLOAD_ROUTE = '/downloads/:token';

const signature = (secret: string, payload: string) =>
  createHmac('sha256', secret).update(`tern-inbound-download\n${payload}`).digest('base64url');

/** A link's token: base64url of `[inboundId, part, expires (epoch s)]`, a dot, its signature. */
export function downloadToken(secret: string, inboundId: string, part: string, expiresAt: number): string {
  const payload = Buffer.from(JSON.stringify([inboundId, part, expiresAt])).toString('base64url');
  return `${payload}.${signature(secret, payload)}`;
}

/** What a genuine, unexpired token names; null otherwise. */
export function readDownloadToken(
  secret: string,
  token: string,
  nowSeconds: number,
): { id: string; part: string } | null {
  const [payload, sig, extra] = token.split('.');
  if (!payload || !sig || extra !== undefined) return null;
  const expected = Buffer.from(signature(secret, payload));
  const given = Buffer.from(sig);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const [id, part, expiresAt] = JSON.parse(Buffer.from(payload, 'base64url').toString()) as unknown[];
    if (typeof id !== 'string' || typeof part !== 'string' || typeof expiresAt !== 'number') return null;
    return expiresAt >= nowSeconds ? { id, part } : null;
  } catch {
    return null;
  }
}

export function resendDownloadRoutes(app: FastifyInstance, downloads: InboundDownloads): void {
  app.get(DOWNLOAD_ROUTE, async (request, reply) => {
    const gone = new ResendError(404, 'not_found', 'The download link is unknown or has expired');
    const named = readDownloadToken(
      downloads.secret,
      (request.params as { token: string }).token,
      Math.floor(Date.now() / 1000),
    );
    if (!named) throw gone;
    const tenantId = await inboundTenantOf(downloads.pool, named.id);
    if (!tenantId) throw gone;
    reply.header('cache-control', 'no-store');
    if (named.part === 'raw') {
      const raw = await downloads.reader.raw(tenantId, named.id);
      if (!raw) throw gone;
      return reply.header('content-type', 'message/rfc822').send(raw);
    }
    const found = await downloads.reader.attachment(tenantId, named.id, named.part);
    if (!found) throw gone;
    const name = (found.filename ?? named.part).replace(/[^\w.-]/g, '_');
    return reply
      .header('content-type', found.contentType)
      .header('content-disposition', `attachment; filename="${name}"`)
      .send(found.content);
  });
}
