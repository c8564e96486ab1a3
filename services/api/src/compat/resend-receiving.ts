import { encodeInboundCursor } from '@tern/inbound';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { downloadToken, LINK_SECONDS } from './resend-downloads.js';
import { idParam, type Json, ResendError, send, type TernCall, validation } from './resend-kit.js';

// Resend's receiving API (`resend.emails.receiving.list/get`, `.attachments.list/get`) over
// Tern's `/inbound*` routes (SPEC §24). Decisions: docs/inbound.md, "Resend compatibility".

type Attachment = {
  id: string;
  filename: string | null;
  contentType: string;
  size: number;
  contentId: string | null;
};

const origin = (request: FastifyRequest) => `${request.protocol}://${request.host}`;

/**
 * The `download_url` of a part (`raw` or `att_<n>`) and its `expires_at`: a signed link under
 * `/compat/resend/downloads/` when a secret is set, else Tern's own route (which needs the key).
 */
function link(request: FastifyRequest, secret: string | undefined, inboundId: string, part: string) {
  const expires = Math.floor(Date.now() / 1000) + LINK_SECONDS;
  const url = secret
    ? `${origin(request)}/compat/resend/downloads/${downloadToken(secret, inboundId, part, expires)}`
    : `${origin(request)}/inbound/${encodeURIComponent(inboundId)}/${part === 'raw' ? 'raw' : `attachments/${encodeURIComponent(part)}`}`;
  return { download_url: url, expires_at: new Date(expires * 1000).toISOString() };
}
const disposition = (a: Attachment) => (a.contentId ? 'inline' : 'attachment');

/** Resend's `limit` (1..100, default 20) and `after`/`before` (ids), as Resend's SDK sends them. */
function pageOf(request: FastifyRequest): { limit: number; after?: string } {
  const q = request.query as { limit?: string; after?: string; before?: string };
  if (q.before !== undefined)
    throw validation(
      '`before` is not supported by Tern: page forward with `after` (the id of the last item of a page)',
    );
  const limit = q.limit === undefined ? 20 : Number(q.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100)
    throw validation('`limit` must be an integer from 1 to 100');
  return { limit, ...(q.after !== undefined ? { after: q.after } : {}) };
}

const attachmentMeta = (a: Attachment) => ({
  id: a.id,
  filename: a.filename,
  size: a.size,
  content_type: a.contentType,
  content_id: a.contentId,
  content_disposition: disposition(a),
});

function attachmentData(
  request: FastifyRequest,
  secret: string | undefined,
  inboundId: string,
  a: Attachment,
) {
  return {
    id: a.id,
    ...(a.filename !== null ? { filename: a.filename } : {}),
    size: a.size,
    content_type: a.contentType,
    content_disposition: disposition(a),
    ...(a.contentId !== null ? { content_id: a.contentId } : {}),
    ...link(request, secret, inboundId, a.id),
  };
}

/** Tern's received message (`GET /inbound/:id`, or a list item) in Resend's shape. */
function receivedAsResend(m: Json, request: FastifyRequest, secret: string | undefined, full: boolean): Json {
  const headerList = (m.headers as { name: string; value: string }[] | undefined) ?? [];
  const header = (name: string) => headerList.find((h) => h.name.toLowerCase() === name)?.value;
  const replyTo = header('reply-to');
  const base: Json = {
    id: m.id,
    to: m.to,
    from: m.from ?? '',
    created_at: m.receivedAt,
    subject: m.subject ?? '',
    bcc: null,
    cc: (m.cc as string[] | undefined) ?? null,
    reply_to: replyTo ? [replyTo] : null,
    received_for: m.to,
    message_id: m.messageId ?? header('message-id') ?? null,
    attachments: ((m.attachments as Attachment[] | undefined) ?? []).map(attachmentMeta),
  };
  if (!full) return base;
  const headers: Record<string, string> = {};
  for (const h of headerList) headers[h.name.toLowerCase()] ??= h.value;
  return {
    object: 'email',
    ...base,
    html: m.html ?? null,
    text: m.text ?? null,
    headers,
    raw: link(request, secret, String(m.id), 'raw'),
  };
}

export function resendReceivingRoutes(app: FastifyInstance, tern: TernCall, secret?: string): void {
  app.get('/emails/receiving', async (request, reply) => {
    const { limit, after } = pageOf(request);
    let cursor = '';
    if (after !== undefined) {
      // Resend pages with the id of the last message shown: its position is Tern's keyset cursor.
      const { body } = await tern(request, 'GET', `/inbound/${encodeURIComponent(after)}`);
      cursor = `&cursor=${encodeInboundCursor(String(body.receivedAt), after)}`;
    }
    const { body } = await tern(request, 'GET', `/inbound?limit=${limit}${cursor}`);
    const meta = body.meta as { nextCursor: string | null };
    // Resend's list item carries cc, reply_to, message_id and the attachments: Tern's list item
    // does not (it opens the summary only), so each one is read whole (at most `limit`, 100).
    const full = await Promise.all(
      ((body.data as Json[]) ?? []).map(
        async (m) => (await tern(request, 'GET', `/inbound/${encodeURIComponent(String(m.id))}`)).body,
      ),
    );
    return send(reply, {
      object: 'list',
      has_more: meta.nextCursor !== null,
      data: full.map((m) => receivedAsResend(m, request, secret, false)),
    });
  });

  app.get('/emails/receiving/:id', async (request, reply) => {
    const { body } = await tern(request, 'GET', `/inbound/${idParam(request)}`);
    return send(reply, receivedAsResend(body, request, secret, true));
  });

  app.get('/emails/receiving/:id/attachments', async (request, reply) => {
    const { limit, after } = pageOf(request);
    const { body } = await tern(request, 'GET', `/inbound/${idParam(request)}`);
    const all = (body.attachments as Attachment[]) ?? [];
    const start = after === undefined ? 0 : all.findIndex((a) => a.id === after) + 1;
    if (after !== undefined && start === 0) throw validation('`after` is not an attachment of this email');
    const page = all.slice(start, start + limit);
    return send(reply, {
      object: 'list',
      has_more: start + limit < all.length,
      data: page.map((a) => attachmentData(request, secret, String(body.id), a)),
    });
  });

  app.get('/emails/receiving/:id/attachments/:attachmentId', async (request, reply) => {
    const { body } = await tern(request, 'GET', `/inbound/${idParam(request)}`);
    const wanted = (request.params as { attachmentId: string }).attachmentId;
    const found = ((body.attachments as Attachment[]) ?? []).find((a) => a.id === wanted);
    if (!found) throw new ResendError(404, 'not_found', 'Attachment not found');
    return send(reply, { object: 'attachment', ...attachmentData(request, secret, String(body.id), found) });
  });
}
