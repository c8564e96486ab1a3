import {
  inboundIdParamsSchema,
  inboundListQuerySchema,
  inboundMessageSchema,
  inboundSummarySchema,
} from '@tern/contracts';
import { httpError } from '@tern/http';
import { decodeInboundCursor, ensureInboundAddress, type InboundReader } from '@tern/inbound';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type pg from 'pg';
import { z } from 'zod';
import { type AuthConfig, credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import { notFound, resourceErrors } from '../resource-kit.js';
import { errorResponse, errors } from '../schemas.js';

/** What the inbound routes need: the reader of stored mail and INBOUND_DOMAIN. */
export interface InboundRouteOptions {
  pool: pg.Pool;
  reader: InboundReader;
  /** INBOUND_DOMAIN; unset → `GET /inbound/domain` is 404. */
  inboundDomain?: string | undefined;
}

/** `GET /inbound`: a page of received mail, newest first (pinned to `InboundList` in wire-checks.ts). */
export const inboundListSchema = z.object({
  data: z.array(inboundSummarySchema),
  meta: z.object({ limit: z.number(), nextCursor: z.string().nullable() }),
});

const read: AuthConfig = { auth: 'jwt_or_key', scope: 'inbound:read' };
const attachmentParams = inboundIdParamsSchema.extend({
  attachmentId: z.string().max(16).meta({ example: 'att_0' }),
});
const binary = (type: string, description: string, example: string) => ({
  description,
  content: { [type]: { schema: z.string().meta({ description: `${type} bytes`, example }) } },
});
const missing = (what: string) => errorResponse(404, `No such ${what} for this tenant.`, `${what} not found`);

/** `/inbound*` (SPEC §24): received mail, read with `inbound:read`. */
export const inboundRoutes: FastifyPluginAsyncZod<{ inbound: InboundRouteOptions }> = async (app, deps) => {
  const { reader, pool, inboundDomain } = deps.inbound;

  app.get(
    '/inbound/domain',
    {
      config: read,
      schema: {
        tags: [TAGS.inbound],
        operationId: 'getInboundDomain',
        summary: 'The tenant’s receiving domain under INBOUND_DOMAIN',
        description:
          'Mail to `<anything>@<domain>` is received for the tenant without DNS of its own (like Resend’s `*.resend.app`).',
        security: KEY_OR_DASHBOARD,
        response: {
          200: z.object({ domain: z.string() }).meta({ examples: [{ domain: 'acme.in.tern.example.net' }] }),
          ...resourceErrors('Inbound domain', { notFound: true }),
        },
      },
    },
    async (request) => {
      if (!inboundDomain)
        throw httpError(404, 'Inbound domain not configured (INBOUND_DOMAIN)', { code: 'NOT_FOUND' });
      const slug = await ensureInboundAddress(pool, credentialOf(request).tenantId);
      return { domain: `${slug}.${inboundDomain}` };
    },
  );

  app.get(
    '/inbound',
    {
      config: read,
      schema: {
        tags: [TAGS.inbound],
        operationId: 'listInbound',
        summary: 'List received mail',
        description:
          'Newest first; `cursor` from `meta.nextCursor`. `to` / `from` match an address exactly; `since` is ISO 8601.',
        security: KEY_OR_DASHBOARD,
        querystring: inboundListQuerySchema,
        response: {
          200: inboundListSchema.meta({
            description: 'Received messages, newest first.',
            examples: [
              {
                data: [
                  {
                    id: 'inb_01jd2k3m4n5p6q7r8s9t0v1w2x',
                    from: 'ana@customer.example',
                    to: ['support@acme.in.tern.example.net'],
                    subject: 'Re: Your invoice',
                    auth: { spf: 'pass', dkim: 'pass', dmarc: 'pass', arc: 'none' },
                    inReplyTo: null,
                    receivedAt: '2026-06-15T12:00:00.000Z',
                    attachments: [],
                  },
                ],
                meta: { limit: 20, nextCursor: null },
              },
            ],
          }),
          400: errors.badRequest('querystring.limit: Too big: expected number to be <=100'),
          ...resourceErrors('inbound message'),
        },
      },
    },
    async (request) => {
      const q = request.query;
      const cursor = q.cursor === undefined ? undefined : decodeInboundCursor(q.cursor);
      if (cursor === null)
        throw httpError(400, 'querystring.cursor: cursor is not one this API gave', {
          code: 'INVALID_CURSOR',
        });
      const page = await reader.list({
        tenantId: credentialOf(request).tenantId,
        limit: q.limit,
        cursor,
        to: q.to,
        from: q.from,
        since: q.since,
      });
      return { data: page.data, meta: { limit: q.limit, nextCursor: page.nextCursor } };
    },
  );

  app.get(
    '/inbound/:id',
    {
      config: read,
      schema: {
        tags: [TAGS.inbound],
        operationId: 'getInbound',
        summary: 'A received message',
        description:
          'Its addresses, subject, text and HTML, headers, attachments (metadata), verdicts and thread.',
        security: KEY_OR_DASHBOARD,
        params: inboundIdParamsSchema,
        response: {
          200: inboundMessageSchema.meta({
            description: 'The message with its verdicts.',
            examples: [
              {
                id: 'inb_01jd2k3m4n5p6q7r8s9t0v1w2x',
                from: 'ana@customer.example',
                to: ['support@acme.in.tern.example.net'],
                cc: [],
                subject: 'Re: Your invoice',
                text: 'Thanks, received.',
                html: null,
                headers: [{ name: 'Subject', value: 'Re: Your invoice' }],
                attachments: [
                  {
                    id: 'att_1',
                    filename: 'scan.pdf',
                    contentType: 'application/pdf',
                    size: 48213,
                    contentId: null,
                  },
                ],
                auth: { spf: 'pass', dkim: 'pass', dmarc: 'pass', arc: 'none' },
                clientIp: '192.0.2.10',
                helo: 'mail.customer.example',
                messageId: '<cafe@customer.example>',
                inReplyTo: 'em_01jd2k3m4n5p6q7r8s9t0v1w2x',
                receivedAt: '2026-06-15T12:00:00.000Z',
              },
            ],
          }),
          ...resourceErrors('Inbound message', { notFound: true }),
        },
      },
    },
    async (request) => {
      const found = await reader.get(credentialOf(request).tenantId, request.params.id);
      if (!found) throw notFound('Inbound message');
      return found;
    },
  );

  app.get(
    '/inbound/:id/raw',
    {
      config: read,
      schema: {
        tags: [TAGS.inbound],
        operationId: 'getInboundRaw',
        summary: 'A received message as it arrived',
        security: KEY_OR_DASHBOARD,
        params: inboundIdParamsSchema,
        response: {
          200: binary(
            'message/rfc822',
            'The raw MIME message.',
            'From: ana@customer.example\r\nTo: support@acme.in.tern.example.net\r\nSubject: Re: Your invoice\r\n\r\nThanks, received.\r\n',
          ),
          401: errors.unauthorized,
          403: errors.forbiddenScope,
          404: missing('Inbound message'),
        },
      },
    },
    async (request, reply) => {
      const raw = await reader.raw(credentialOf(request).tenantId, request.params.id);
      if (!raw) throw notFound('Inbound message');
      return reply
        .header('content-type', 'message/rfc822')
        .header('cache-control', 'no-store')
        .send(raw as unknown as string);
    },
  );

  app.get(
    '/inbound/:id/attachments/:attachmentId',
    {
      config: read,
      schema: {
        tags: [TAGS.inbound],
        operationId: 'getInboundAttachment',
        summary: 'One attachment of a received message',
        security: KEY_OR_DASHBOARD,
        params: attachmentParams,
        response: {
          200: binary(
            'application/octet-stream',
            'The attachment’s bytes, with its own content type.',
            '%PDF-1.7 …',
          ),
          400: errors.badRequest('params.attachmentId: Too big: expected string to have <=16 characters'),
          401: errors.unauthorized,
          403: errors.forbiddenScope,
          404: missing('Attachment'),
        },
      },
    },
    async (request, reply) => {
      const { id, attachmentId } = request.params;
      const found = await reader.attachment(credentialOf(request).tenantId, id, attachmentId);
      if (!found) throw notFound('Attachment');
      const name = (found.filename ?? attachmentId).replace(/[^\w.-]/g, '_');
      return reply
        .header('content-type', found.contentType)
        .header('content-disposition', `attachment; filename="${name}"`)
        .header('cache-control', 'no-store')
        .send(found.content as unknown as string);
    },
  );
};
