import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { BATCH_BODY_LIMIT, SEND_BODY_LIMIT } from '../emails/routes.js';
import { encodeLogsCursor } from '../logs/cursor.js';

/**
 * Resend's public API under `/compat/resend` (SPEC §22), so the official `resend` npm package works
 * with `baseUrl: PUBLIC_URL/compat/resend` and a Tern API key. Each call is translated and injected
 * into Tern's own route with the caller's credential (same auth, scopes, rate limits, validation),
 * and its answer (or error) translated back into Resend's shapes. Decisions: docs/sending.md.
 */
export type ResendCompatOptions = Record<never, never>;

type Json = Record<string, unknown>;

/** Resend's error body: `{ statusCode, name, message }`. */
export class ResendError extends Error {
  constructor(
    readonly statusCode: number,
    readonly errorName: string,
    message: string,
  ) {
    super(message);
  }
}

const validation = (message: string) => new ResendError(422, 'validation_error', message);

/** Tern's error answer as Resend's (status and `name` from Resend's list of error types). */
function fromTern(status: number, body: string): ResendError {
  let parsed: { message?: string; code?: string } = {};
  try {
    parsed = JSON.parse(body) as typeof parsed;
  } catch {
    // not JSON
  }
  const message = parsed.message ?? 'Request failed';
  const code = parsed.code ?? '';
  if (status === 400 && code === 'DOMAIN_NOT_VERIFIED')
    return new ResendError(403, 'validation_error', message);
  if (status === 400) return validation(message);
  if (status === 401)
    return code === 'MISSING_CREDENTIAL'
      ? new ResendError(401, 'missing_api_key', 'Missing API key in the authorization header')
      : new ResendError(403, 'invalid_api_key', 'API key is invalid');
  if (status === 403) return new ResendError(401, 'restricted_api_key', message);
  if (status === 404) return new ResendError(404, 'not_found', message);
  if (status === 409 && code === 'IDEMPOTENCY_KEY_REUSED')
    return new ResendError(409, 'invalid_idempotent_request', message);
  if (status === 409 && code === 'IDEMPOTENCY_KEY_IN_PROGRESS')
    return new ResendError(409, 'concurrent_idempotent_requests', message);
  if (status === 409) return validation(message);
  if (status === 413) return new ResendError(413, 'validation_error', message);
  if (status === 429) return new ResendError(429, 'rate_limit_exceeded', message);
  return new ResendError(Math.max(status, 500), 'application_error', message);
}

const asList = (value: unknown, field: string): string[] => {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
  throw validation(`\`${field}\` must be a string or an array of strings`);
};

/** A Resend send body as Tern's `POST /emails/send` body. */
export function sendBodyFromResend(input: unknown, at = ''): Json {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw validation(`${at}the body must be a JSON object`);
  const r = input as Json;
  const to = asList(r.to, `${at}to`);
  if (to.length === 0) throw new ResendError(422, 'missing_required_field', `${at}Missing \`to\` field.`);
  const replyTo = asList(r.reply_to ?? r.replyTo, `${at}reply_to`);
  if (replyTo.length > 1)
    throw validation(`${at}Tern takes one \`reply_to\` address (got ${replyTo.length})`);
  const attachments = attachmentsFromResend(r.attachments, at);
  let tags: string[] | undefined;
  if (r.tags !== undefined && r.tags !== null) {
    if (!Array.isArray(r.tags)) throw validation(`${at}\`tags\` must be an array of { name, value }`);
    tags = r.tags.map((t, i) => {
      const tag = t as { name?: unknown; value?: unknown };
      if (typeof tag?.name !== 'string' || tag.name === '')
        throw validation(`${at}tags[${i}].name must be a non-empty string`);
      if (tag.value !== undefined && typeof tag.value !== 'string')
        throw validation(`${at}tags[${i}].value must be a string`);
      return tag.value === undefined || tag.value === '' ? tag.name : `${tag.name}:${tag.value}`;
    });
  }
  const template = r.template as { id?: unknown; variables?: unknown } | undefined;
  const cc = asList(r.cc, `${at}cc`);
  const bcc = asList(r.bcc, `${at}bcc`);
  const scheduledAt = r.scheduled_at ?? r.scheduledAt;
  return {
    from: r.from,
    // Several recipients are one email (SPEC §22): an array stays an array (Tern checks 1..50).
    to: typeof r.to === 'string' ? r.to : to,
    ...(cc.length > 0 ? { cc } : {}),
    ...(bcc.length > 0 ? { bcc } : {}),
    ...(replyTo.length > 0 ? { replyTo: replyTo[0] } : {}),
    ...(r.subject !== undefined ? { subject: r.subject } : {}),
    ...(typeof r.html === 'string' ? { html: r.html } : {}),
    ...(typeof r.text === 'string' ? { text: r.text } : {}),
    ...(r.headers !== undefined && r.headers !== null ? { headers: r.headers } : {}),
    ...(tags && tags.length > 0 ? { tags } : {}),
    ...(scheduledAt !== undefined && scheduledAt !== null ? { scheduledAt } : {}),
    ...(template && typeof template === 'object' && template.id !== undefined
      ? {
          templateId: template.id,
          ...(template.variables !== undefined ? { variables: template.variables } : {}),
        }
      : {}),
    ...(attachments.length > 0 ? { attachments } : {}),
  };
}

/**
 * Resend's `attachments` (what the package sends: `content` as base64 — it encodes a Buffer
 * itself — `filename`, `content_type`, `content_id`, or `path`, a URL Resend fetches) as Tern's.
 * Tern fetches no URL (no request to an address a caller chooses): `path` → 422. Tern's route
 * checks the rest (base64, names, 40 MB).
 */
function attachmentsFromResend(value: unknown, at: string): Json[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw validation(`${at}\`attachments\` must be an array`);
  return value.map((item, i) => {
    const a = (item ?? {}) as Json;
    if (a.content === undefined || a.content === null) {
      throw validation(
        a.path !== undefined
          ? `${at}attachments[${i}].path: Tern does not fetch attachments from a URL; send the file as base64 \`content\``
          : `${at}attachments[${i}].content is required`,
      );
    }
    const contentType = a.content_type ?? a.contentType;
    const contentId = a.content_id ?? a.contentId;
    return {
      filename: a.filename,
      content: a.content,
      ...(contentType !== undefined && contentType !== null ? { contentType } : {}),
      ...(contentId !== undefined && contentId !== null ? { contentId } : {}),
    };
  });
}

/** Tern's status as Resend's `last_event`. */
const LAST_EVENT: Record<string, string> = {
  QUEUED: 'queued',
  SCHEDULED: 'scheduled',
  SENT: 'sent',
  DELAYED: 'delivery_delayed',
  DELIVERED: 'delivered',
  BOUNCED: 'bounced',
  FAILED: 'failed',
  SUPPRESSED: 'suppressed',
  CANCELLED: 'canceled',
};

const tagsAsResend = (tags: unknown) =>
  (Array.isArray(tags) ? (tags as string[]) : []).map((t) => {
    const i = t.indexOf(':');
    return i < 0 ? { name: t, value: '' } : { name: t.slice(0, i), value: t.slice(i + 1) };
  });

/** Tern's email (log entry or detail) as Resend's email object. */
function emailAsResend(e: Json): Json {
  const opened = Number(e.opens ?? 0) > 0;
  const clicked = Number(e.clicks ?? 0) > 0;
  const status = String(e.status ?? 'QUEUED');
  const lastEvent =
    status === 'DELIVERED' && clicked
      ? 'clicked'
      : status === 'DELIVERED' && opened
        ? 'opened'
        : LAST_EVENT[status];
  return {
    object: 'email',
    id: e.id,
    // The detail lists every `to` (SPEC §22); a log entry, its first.
    to: Array.isArray(e.to) ? e.to : e.toEmail === null || e.toEmail === undefined ? [] : [e.toEmail],
    from: e.from ?? null,
    created_at: e.createdAt,
    subject: e.subject ?? null,
    html: e.html ?? null,
    text: e.text ?? null,
    bcc: e.bcc ?? null,
    cc: e.cc ?? null,
    reply_to: e.replyTo ? [e.replyTo] : null,
    last_event: lastEvent ?? status.toLowerCase(),
    scheduled_at: e.scheduledAt ?? null,
    tags: tagsAsResend(e.tags),
  };
}

/** Tern's domain as Resend's domain object. */
function domainAsResend(d: Json, withRecords: boolean): Json {
  const records = (Array.isArray(d.records) ? (d.records as Json[]) : []).map((r) => ({
    record: r.purpose === 'dkim' ? 'DKIM' : r.purpose === 'dmarc' ? 'DMARC' : 'SPF',
    name: r.name,
    type: r.type,
    ttl: 'Auto',
    status: r.status === 'pending' ? 'not_started' : r.status,
    value: r.value,
    ...(r.type === 'MX' ? { priority: 10 } : {}),
  }));
  return {
    object: 'domain',
    id: d.id,
    name: d.name,
    status: d.status === 'pending' && d.lastCheckedAt === null ? 'not_started' : d.status,
    created_at: d.createdAt,
    region: null,
    ...(withRecords ? { records } : {}),
  };
}

export const resendCompatRoutes: FastifyPluginAsync<ResendCompatOptions> = async (app) => {
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

  /** Calls Tern's route with the caller's credential; throws Resend's error on a refusal. */
  async function tern(
    request: FastifyRequest,
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    url: string,
    payload?: unknown,
    ok = [200, 201, 202],
  ) {
    const headers: Record<string, string> = {};
    const { authorization } = request.headers;
    if (typeof authorization === 'string') headers.authorization = authorization;
    const idempotency = request.headers['idempotency-key'];
    if (typeof idempotency === 'string') headers['idempotency-key'] = idempotency;
    if (payload !== undefined) headers['content-type'] = 'application/json';
    const res = await root.inject({
      method,
      url,
      headers,
      ...(payload !== undefined ? { payload: JSON.stringify(payload) } : {}),
      remoteAddress: request.ip,
    });
    if (!ok.includes(res.statusCode)) throw fromTern(res.statusCode, res.body);
    const retry = res.headers['retry-after'];
    return { status: res.statusCode, body: (res.body === '' ? {} : res.json()) as Json, retryAfter: retry };
  }

  const send = (reply: FastifyReply, body: unknown) => reply.status(200).send(body);
  const idParam = (request: FastifyRequest) => encodeURIComponent((request.params as { id: string }).id);

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

  // --- Audiences (Resend's segments) and contacts -----------------------------------------------
  // Tern's audiences are names carried by contacts; Resend's id of one is its name in base64url.

  const audienceId = (name: string) => Buffer.from(name, 'utf8').toString('base64url');
  function audienceName(id: string): string {
    const name = /^[A-Za-z0-9_-]{1,200}$/.test(id) ? Buffer.from(id, 'base64url').toString('utf8') : '';
    if (name === '' || audienceId(name) !== id) throw new ResendError(404, 'not_found', 'Audience not found');
    return name;
  }
  const contactAsResend = (c: Json): Json => ({
    object: 'contact',
    id: c.id,
    email: c.email,
    first_name: c.firstName ?? null,
    last_name: c.lastName ?? null,
    created_at: c.createdAt,
    unsubscribed: c.subscribed === false,
    properties: c.attributes ?? {},
  });

  for (const [path, object] of [
    ['/segments', 'segment'],
    ['/audiences', 'audience'],
  ] as const) {
    app.post(path, async (request, reply) => {
      const name = (request.body as { name?: unknown } | null)?.name;
      if (typeof name !== 'string' || name === '')
        throw new ResendError(422, 'missing_required_field', 'Missing `name` field.');
      // The credential must be able to read contacts; the name must be one Tern accepts.
      const { body } = await tern(request, 'GET', `/audiences?name=${encodeURIComponent(name)}&limit=1`);
      void body;
      return send(reply, { object, id: audienceId(name), name });
    });
    app.get(path, async (request, reply) => {
      const { body } = await tern(request, 'GET', '/audiences?limit=100');
      const meta = body.meta as { totalPages?: number } | undefined;
      return send(reply, {
        object: 'list',
        has_more: (meta?.totalPages ?? 1) > 1,
        data: ((body.data as Json[]) ?? []).map((a) => ({
          id: audienceId(String(a.name)),
          name: a.name,
          created_at: null,
        })),
      });
    });
    app.get(`${path}/:id`, async (request, reply) => {
      const name = audienceName((request.params as { id: string }).id);
      const { body } = await tern(request, 'GET', `/audiences?name=${encodeURIComponent(name)}&limit=1`);
      if (((body.data as Json[]) ?? []).length === 0)
        throw new ResendError(404, 'not_found', 'Audience not found');
      return send(reply, { object, id: audienceId(name), name, created_at: null });
    });
    app.delete(`${path}/:id`, async (request, reply) => {
      const name = audienceName((request.params as { id: string }).id);
      // The audience goes from every contact that carries it (the contacts stay, as in Resend's segments).
      for (let round = 0; round < 1000; round++) {
        const { body } = await tern(
          request,
          'GET',
          `/contacts?audience=${encodeURIComponent(name)}&limit=100`,
        );
        const contacts = (body.data as Json[]) ?? [];
        if (contacts.length === 0) break;
        for (const c of contacts) {
          const audiences = (c.audiences as string[]).filter((a) => a !== name);
          await tern(request, 'PATCH', `/contacts/${encodeURIComponent(String(c.id))}`, { audiences });
        }
      }
      return send(reply, { object, id: audienceId(name), deleted: true });
    });
  }

  /** The contact named by a Resend path (an id, or an email address), optionally within an audience. */
  async function findContact(
    request: FastifyRequest,
    idOrEmail: string,
    audience: string | null,
  ): Promise<Json> {
    let contact: Json | undefined;
    if (idOrEmail.includes('@')) {
      const { body } = await tern(request, 'GET', `/contacts?email=${encodeURIComponent(idOrEmail)}&limit=1`);
      contact = ((body.data as Json[]) ?? [])[0];
    } else {
      contact = (await tern(request, 'GET', `/contacts/${encodeURIComponent(idOrEmail)}`)).body;
    }
    if (!contact || (audience !== null && !(contact.audiences as string[]).includes(audience)))
      throw new ResendError(404, 'not_found', 'Contact not found');
    return contact;
  }

  /** Resend's contact fields as Tern's. */
  function contactFields(input: Json): Json {
    return {
      ...(input.first_name !== undefined ? { firstName: input.first_name } : {}),
      ...(input.last_name !== undefined ? { lastName: input.last_name } : {}),
      ...(input.unsubscribed !== undefined && input.unsubscribed !== null
        ? { subscribed: input.unsubscribed !== true }
        : {}),
      ...(input.properties !== undefined && input.properties !== null
        ? { attributes: input.properties }
        : {}),
    };
  }

  async function createContact(request: FastifyRequest, audiences: string[]) {
    const input = (request.body ?? {}) as Json;
    if (typeof input.email !== 'string')
      throw new ResendError(422, 'missing_required_field', 'Missing `email` field.');
    const res = await tern(
      request,
      'POST',
      '/contacts',
      { email: input.email, ...contactFields(input), audiences },
      [201, 409],
    );
    if (res.status === 201) return { object: 'contact', id: res.body.id };
    // The address is a contact already: Resend adds it to the audience.
    const existing = await findContact(request, input.email, null);
    const merged = [...new Set([...(existing.audiences as string[]), ...audiences])];
    await tern(request, 'PATCH', `/contacts/${encodeURIComponent(String(existing.id))}`, {
      ...contactFields(input),
      audiences: merged,
    });
    return { object: 'contact', id: existing.id };
  }

  /** One Resend page of contacts: `limit` (≤ 100), `after` = the id of the last contact shown. */
  async function contactsPage(request: FastifyRequest, audience: string | null) {
    const q = request.query as { limit?: string; after?: string; before?: string };
    if (q.before !== undefined)
      throw validation('`before` is not supported by Tern: page forward with `after`');
    const limit = q.limit === undefined ? 20 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100)
      throw validation('`limit` must be an integer from 1 to 100');
    const url = (page: number, size: number) =>
      `/contacts?limit=${size}&page=${page}${audience === null ? '' : `&audience=${encodeURIComponent(audience)}`}`;
    let rest: Json[] = [];
    let page = 1;
    let total = 0;
    let found = q.after === undefined;
    // Tern pages by number; Resend's `after` is found by walking pages of 100 (bounded to 100 pages).
    for (; page <= 100; page++) {
      const { body } = await tern(request, 'GET', url(page, 100));
      const data = (body.data as Json[]) ?? [];
      total = Number((body.meta as { total?: number }).total ?? 0);
      if (!found) {
        const at = data.findIndex((c) => c.id === q.after);
        if (at >= 0) {
          found = true;
          rest = data.slice(at + 1);
        }
      } else rest = rest.concat(data);
      if ((found && rest.length > limit) || page * 100 >= total) break;
    }
    if (!found) throw validation('`after` is not the id of a contact of this list');
    return {
      object: 'list',
      has_more: rest.length > limit,
      data: rest.slice(0, limit).map((c) => {
        const { object: _o, properties: _p, ...contact } = contactAsResend(c);
        return contact;
      }),
    };
  }

  app.post('/contacts', async (request, reply) => {
    const segments = ((request.body ?? {}) as { segments?: unknown }).segments;
    const names = (Array.isArray(segments) ? segments : []).map((s) =>
      audienceName(typeof s === 'string' ? s : String((s as { id?: unknown })?.id ?? '')),
    );
    return send(reply, await createContact(request, names));
  });
  app.get('/contacts', async (request, reply) => send(reply, await contactsPage(request, null)));
  for (const prefix of ['/audiences/:audienceId', '/segments/:audienceId']) {
    app.post(`${prefix}/contacts`, async (request, reply) => {
      const name = audienceName((request.params as { audienceId: string }).audienceId);
      return send(reply, await createContact(request, [name]));
    });
    app.get(`${prefix}/contacts`, async (request, reply) =>
      send(
        reply,
        await contactsPage(request, audienceName((request.params as { audienceId: string }).audienceId)),
      ),
    );
  }
  for (const prefix of ['', '/audiences/:audienceId', '/segments/:audienceId']) {
    const audienceOf = (request: FastifyRequest) => {
      const id = (request.params as { audienceId?: string }).audienceId;
      return id === undefined ? null : audienceName(id);
    };
    app.get(`${prefix}/contacts/:contact`, async (request, reply) => {
      const contact = await findContact(
        request,
        (request.params as { contact: string }).contact,
        audienceOf(request),
      );
      return send(reply, contactAsResend(contact));
    });
    app.patch(`${prefix}/contacts/:contact`, async (request, reply) => {
      const contact = await findContact(
        request,
        (request.params as { contact: string }).contact,
        audienceOf(request),
      );
      await tern(
        request,
        'PATCH',
        `/contacts/${encodeURIComponent(String(contact.id))}`,
        contactFields((request.body ?? {}) as Json),
      );
      return send(reply, { object: 'contact', id: contact.id });
    });
    app.delete(`${prefix}/contacts/:contact`, async (request, reply) => {
      const audience = audienceOf(request);
      const contact = await findContact(request, (request.params as { contact: string }).contact, audience);
      if (audience === null)
        await tern(
          request,
          'DELETE',
          `/contacts/${encodeURIComponent(String(contact.id))}`,
          undefined,
          [200, 204],
        );
      else {
        // Within an audience: the contact leaves it (Resend's legacy audiences held their own contacts).
        const audiences = (contact.audiences as string[]).filter((a) => a !== audience);
        await tern(request, 'PATCH', `/contacts/${encodeURIComponent(String(contact.id))}`, { audiences });
      }
      return send(reply, { object: 'contact', contact: contact.id, deleted: true });
    });
  }
};
