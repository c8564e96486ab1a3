import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { BATCH_BODY_LIMIT, SEND_BODY_LIMIT } from '../emails/schemas.js';
import { encodeLogsCursor } from '../logs/cursor.js';
import { resendContactRoutes } from './resend-contacts.js';
import { DOWNLOAD_ROUTE, type InboundDownloads, resendDownloadRoutes } from './resend-downloads.js';
import { idParam, type Json, ResendError, send, ternCaller, validation } from './resend-kit.js';
import { resendReceivingRoutes } from './resend-receiving.js';
import { domainAsResend, emailAsResend, sendBodyFromResend } from './resend-shapes.js';

/**
 * Resend's public API under `/compat/resend` (SPEC §22), so the official `resend` npm package works
 * with `baseUrl: PUBLIC_URL/compat/resend` and a Tern API key. Each call is translated and injected
 * into Tern's own route with the caller's credential (same auth, scopes, rate limits, validation),
 * and its answer (or error) translated back into Resend's shapes. Decisions: docs/sending.md.
 */
export interface ResendCompatOptions {
  /** Signed `download_url`s of received mail (absent: the links are Tern's own routes, with the key). */
  downloads?: InboundDownloads | undefined;
}

export const resendCompatRoutes: FastifyPluginAsync<ResendCompatOptions> = async (app, opts) => {
  // Documented in docs/sending.md as Resend documents them, not in Tern's OpenAPI document.
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
  });
  // The root instance: injected requests go through Tern's own routes and their hooks.
  const root: FastifyInstance = app;

  app.setErrorHandler((error, _request, reply) => {
    if (error instanceof ResendError) {
      return reply
        .status(error.statusCode)
        .send({ statusCode: error.statusCode, name: error.errorName, message: error.message });
    }
    const status = (error as { statusCode?: number }).statusCode ?? 500;
    if (status === 413)
      return reply
        .status(413)
        .send({ statusCode: 413, name: 'validation_error', message: 'Request body is too large' });
    if (status >= 400 && status < 500)
      return reply.status(422).send({
        statusCode: 422,
        name: 'validation_error',
        message: error instanceof Error ? error.message : 'Invalid request',
      });
    _request.log.error({ err: error }, 'resend compat failed');
    return reply
      .status(500)
      .send({ statusCode: 500, name: 'application_error', message: 'Internal server error' });
  });
  // resend-node sends `Content-Type: application/json` with no body on cancel and verify.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    if (body === '') {
      done(null, undefined);
      return;
    }
    try {
      done(null, JSON.parse(body as string));
    } catch {
      done(new ResendError(422, 'validation_error', 'The body is not valid JSON'), undefined);
    }
  });
  // As Resend: no credential at all is a 401 before anything else is looked at.
  app.addHook('onRequest', async (request) => {
    // A signed download link is its own credential (Resend's are fetched with no key).
    if (opts.downloads && request.routeOptions.url?.endsWith(DOWNLOAD_ROUTE)) return;
    if (request.headers.authorization === undefined)
      throw new ResendError(401, 'missing_api_key', 'Missing API key in the authorization header');
  });
  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send({
      statusCode: 404,
      name: 'not_found',
      message: `${request.method} ${request.url.split('?')[0]} is not part of Tern's Resend-compatible API`,
    }),
  );

  const tern = ternCaller(root);

  // --- Emails ------------------------------------------------------------------------------------

  app.post('/emails', { bodyLimit: SEND_BODY_LIMIT }, async (request, reply) => {
    const { body } = await tern(request, 'POST', '/emails/send', sendBodyFromResend(request.body));
    return send(reply, { id: body.id });
  });

  app.post('/emails/batch', { bodyLimit: BATCH_BODY_LIMIT }, async (request, reply) => {
    if (!Array.isArray(request.body)) throw validation('The body must be an array of emails');
    const bodies = request.body.map((b, i) => sendBodyFromResend(b, `[${i}]: `));
    const { body } = await tern(request, 'POST', '/emails/batch', bodies);
    return send(reply, { data: body.data });
  });

  app.get('/emails', async (request, reply) => {
    const q = request.query as { limit?: string; after?: string; before?: string };
    if (q.before !== undefined)
      throw validation(
        '`before` is not supported by Tern: page forward with `after` (the id of the last email of a page)',
      );
    const limit = q.limit === undefined ? 20 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100)
      throw validation('`limit` must be an integer from 1 to 100');
    let cursor = '';
    if (q.after !== undefined) {
      // Resend pages with the id of the last email shown: its position is Tern's keyset cursor.
      const { body } = await tern(request, 'GET', `/emails/${encodeURIComponent(q.after)}`);
      const at = String(body.createdAt).replace(/Z$/, '');
      cursor = `&cursor=${encodeLogsCursor({ createdAt: `${at}000`, id: q.after, page: 2 })}`;
    }
    const { body } = await tern(request, 'GET', `/emails/logs?limit=${limit + 1}${cursor}`);
    const entries = (body.data as Json[]) ?? [];
    return send(reply, {
      object: 'list',
      has_more: entries.length > limit,
      data: entries.slice(0, limit).map((e) => {
        const { html: _h, text: _t, tags: _g, ...rest } = emailAsResend(e);
        return rest;
      }),
    });
  });

  app.get('/emails/:id', async (request, reply) => {
    const { body } = await tern(request, 'GET', `/emails/${idParam(request)}`);
    return send(reply, emailAsResend(body));
  });

  app.patch('/emails/:id', async (request, reply) => {
    const input = (request.body ?? {}) as { scheduled_at?: unknown; scheduledAt?: unknown };
    const scheduledAt = input.scheduled_at ?? input.scheduledAt;
    const { body } = await tern(request, 'PATCH', `/emails/${idParam(request)}`, { scheduledAt });
    return send(reply, { object: 'email', id: body.id });
  });

  app.post('/emails/:id/cancel', async (request, reply) => {
    const { body } = await tern(request, 'POST', `/emails/${idParam(request)}/cancel`);
    return send(reply, { object: 'email', id: body.id });
  });

  // --- Domains -----------------------------------------------------------------------------------

  app.post('/domains', async (request, reply) => {
    const name = (request.body as { name?: unknown } | null)?.name;
    if (typeof name !== 'string')
      throw new ResendError(422, 'missing_required_field', 'Missing `name` field.');
    const { body } = await tern(request, 'POST', '/domains', { name });
    return send(reply, domainAsResend(body, true));
  });

  app.get('/domains', async (request, reply) => {
    const { body } = await tern(request, 'GET', '/domains?limit=100');
    const meta = body.meta as { totalPages?: number } | undefined;
    return send(reply, {
      object: 'list',
      has_more: (meta?.totalPages ?? 1) > 1,
      data: ((body.data as Json[]) ?? []).map((d) => domainAsResend(d, false)),
    });
  });

  app.get('/domains/:id', async (request, reply) => {
    const { body } = await tern(request, 'GET', `/domains/${idParam(request)}`);
    return send(reply, domainAsResend(body, true));
  });

  app.post('/domains/:id/verify', async (request, reply) => {
    const { body } = await tern(request, 'POST', `/domains/${idParam(request)}/verify`);
    return send(reply, { object: 'domain', id: body.id });
  });

  app.patch('/domains/:id', async () => {
    throw validation(
      'Tern keeps tracking per tenant (PUT /tenants/:id/settings), not per domain: nothing to update',
    );
  });

  app.delete('/domains/:id', async (request, reply) => {
    await tern(request, 'DELETE', `/domains/${idParam(request)}`, undefined, [200, 204]);
    return send(reply, { object: 'domain', id: (request.params as { id: string }).id, deleted: true });
  });

  resendReceivingRoutes(app, tern, opts.downloads?.secret);
  if (opts.downloads) resendDownloadRoutes(app, opts.downloads);
  resendContactRoutes(app, tern);
};
